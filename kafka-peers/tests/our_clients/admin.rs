//! Our admin client against Apache Kafka: topics, partitions, configs, list offsets, the
//! cluster, groups.

use super::*;

pub(super) async fn admin_topics(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let created = a
        .create_topics(
            &[NewTopic::new("a-topic", 2, 1).config("retention.ms", "3600000")],
            false,
        )
        .await;
    let t = created
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    ensure!(
        t.partitions == Some(2) && t.replication_factor == Some(1),
        "created: {t:?}"
    );
    let again = a
        .create_topics(&[NewTopic::new("a-topic", 2, 1)], false)
        .await;
    let code = again[0]
        .as_ref()
        .err()
        .and_then(kafka_net::NetError::error_code);
    ensure!(
        code == Some(ErrorCode::TOPIC_ALREADY_EXISTS),
        "creating it again: {:?}",
        again[0]
    );
    let checked = a
        .create_topics(&[NewTopic::new("a-validate", 1, 1)], true)
        .await;
    ensure!(checked[0].is_ok(), "validate_only: {:?}", checked[0]);
    a.create_partitions("a-topic", 4)
        .await
        .map_err(|e| format!("create_partitions: {e}"))?;
    let fewer = a.create_partitions("a-topic", 3).await;
    ensure!(
        fewer
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::INVALID_PARTITIONS),
        "shrinking: {fewer:?}"
    );
    // Four partitions, as a consumer's metadata sees them.
    wait_for_partitions(&ctx, "a-topic", 4).await?;
    let deleted = a.delete_topics(&["a-topic"]).await;
    ensure!(deleted[0].1.is_ok(), "delete: {deleted:?}");
    let gone = a.delete_topics(&["a-topic", "a-validate"]).await;
    for (name, r) in &gone {
        ensure!(
            r.as_ref().err().and_then(kafka_net::NetError::error_code)
                == Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            "deleting {name} (gone or never created): {r:?}"
        );
    }
    Ok(())
}

pub(super) async fn admin_configs(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let topic = "a-configs";
    let created = a
        .create_topics(
            &[NewTopic::new(topic, 1, 1).config("retention.ms", "3600000")],
            false,
        )
        .await;
    created
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    // CreateTopics answers once the controller has the topic; the broker that answers
    // DescribeConfigs knows it a moment later (the Java AdminClient does not retry either).
    wait_for_partitions(&ctx, topic, 1).await?;
    let res = ConfigResource::topic(topic);
    let describe = |a: &Admin| {
        let res = res.clone();
        let a = a.clone();
        async move {
            a.describe_configs(&[res])
                .await
                .into_iter()
                .next()
                .unwrap()
                .map_err(|e| e.to_string())
        }
    };
    let d = describe(&a).await?;
    let r = d.get("retention.ms").cloned();
    ensure!(
        r.as_ref().map(|e| (e.value.as_deref(), e.source))
            == Some((Some("3600000"), ConfigSource::DynamicTopic)),
        "retention.ms as created: {r:?}"
    );
    let c = d.get("cleanup.policy").cloned();
    ensure!(
        c.as_ref().map(|e| (e.value.as_deref(), e.is_default)) == Some((Some("delete"), true)),
        "cleanup.policy by default: {c:?}"
    );
    let altered = a
        .incremental_alter_configs(
            &[(
                res.clone(),
                vec![
                    AlterConfigOp::set("retention.ms", "7200000"),
                    AlterConfigOp::set("max.message.bytes", "65536"),
                ],
            )],
            false,
        )
        .await;
    ensure!(altered[0].1.is_ok(), "alter: {altered:?}");
    let d = describe(&a).await?;
    let got = (
        d.get("retention.ms").and_then(|e| e.value.clone()),
        d.get("max.message.bytes").and_then(|e| e.value.clone()),
    );
    ensure!(
        got == (Some("7200000".into()), Some("65536".into())),
        "after the alteration: {got:?}"
    );
    let altered = a
        .incremental_alter_configs(
            &[(res.clone(), vec![AlterConfigOp::delete("retention.ms")])],
            false,
        )
        .await;
    ensure!(altered[0].1.is_ok(), "delete op: {altered:?}");
    let d = describe(&a).await?;
    let r = d.get("retention.ms").cloned();
    ensure!(
        r.as_ref().map(|e| (e.value.as_deref(), e.is_default)) == Some((Some("604800000"), true)),
        "retention.ms back to the default: {r:?}"
    );
    let bad = a
        .incremental_alter_configs(
            &[(res.clone(), vec![AlterConfigOp::set("no.such.config", "1")])],
            false,
        )
        .await;
    ensure!(
        bad[0]
            .1
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::INVALID_CONFIG),
        "an unknown config: {bad:?}"
    );
    let broker = a
        .describe_configs(&[ConfigResource::broker(1)])
        .await
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    let n = broker.get("num.partitions").cloned();
    ensure!(
        n.as_ref().map(|e| (e.value.as_deref(), e.source))
            == Some((Some("3"), ConfigSource::StaticBroker)),
        "broker 1's num.partitions: {n:?}"
    );
    Ok(())
}

pub(super) async fn admin_list_offsets(ctx: Shared) -> CheckResult {
    // After consumer_seek_and_offsets_for_times: 20 records a second apart.
    let a = admin(&ctx).await;
    let c = Consumer::new(consumer_config(&ctx).build().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    let tp = TopicPartition::new(TIMES_TOPIC, 0);
    let first_ts = {
        c.assign([tp.clone()]).map_err(|e| e.to_string())?;
        let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
        got.first()
            .map(|r| r.timestamp)
            .ok_or("no record in c-times")?
    };
    let _ = c.close(Duration::from_secs(5)).await;
    // One call per spec: a call names each partition once.
    let mut listed = Vec::new();
    for spec in [
        OffsetSpec::Earliest,
        OffsetSpec::Latest,
        OffsetSpec::MaxTimestamp,
        OffsetSpec::Timestamp(first_ts + 5500),
        OffsetSpec::Timestamp(first_ts + 600_000),
    ] {
        listed.extend(a.list_offsets(&[(TIMES_TOPIC, 0, spec)]).await);
    }
    let got: Vec<Option<(i64, Option<i64>)>> = listed
        .iter()
        .map(|r| r.as_ref().ok().map(|o| (o.offset, o.timestamp)))
        .collect();
    let want = vec![Some(0), Some(20), Some(19), Some(6), Some(-1)];
    let offsets: Vec<Option<i64>> = got.iter().map(|g| g.map(|(o, _)| o)).collect();
    ensure!(offsets == want, "listed {listed:?}");
    ensure!(
        got[2].and_then(|(_, t)| t) == Some(first_ts + 19_000)
            && got[3].and_then(|(_, t)| t) == Some(first_ts + 6000),
        "timestamps of the lookups: {got:?}"
    );
    let missing = a
        .list_offsets(&[("no-such-topic-here", 0, OffsetSpec::Latest)])
        .await;
    ensure!(missing[0].is_err(), "a missing topic: {missing:?}");
    Ok(())
}

pub(super) async fn admin_describe_cluster(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let d = a.describe_cluster().await.map_err(|e| e.to_string())?;
    let port: i32 = ctx.bootstrap.rsplit(':').next().unwrap().parse().unwrap();
    ensure!(
        d.cluster_id.as_ref().is_some_and(|id| id.len() == 22),
        "cluster id {:?}",
        d.cluster_id
    );
    ensure!(
        d.brokers.len() == 1 && d.brokers[0].node_id == 1 && d.brokers[0].port == port,
        "brokers {:?}",
        d.brokers
    );
    ensure!(d.controller_id == 1, "controller {}", d.controller_id);
    Ok(())
}

pub(super) async fn admin_groups(ctx: Shared) -> CheckResult {
    // After the consumer checks: GROUP is empty, with committed offsets.
    let a = admin(&ctx).await;
    let listed = a.list_groups().await.map_err(|e| e.to_string())?;
    let g = listed.iter().find(|g| g.group_id == GROUP);
    ensure!(
        g.is_some_and(|g| g.protocol_type == "consumer" && g.coordinator == 1),
        "{GROUP} in {listed:?}"
    );
    let d = a.describe_groups(&[GROUP, "never-seen-group"]).await;
    let d0 = d[0].as_ref().map_err(|e| e.to_string())?;
    ensure!(
        d0.state == "Empty" && d0.protocol_type == "consumer" && d0.members.is_empty(),
        "described: {d0:?}"
    );
    let unknown = d[1].as_ref().map(|g| g.state.clone());
    ensure!(
        matches!(unknown.as_deref(), Ok("Dead")),
        "an unknown group: {:?}",
        d[1]
    );
    let deleted = a.delete_groups(&[GROUP]).await;
    ensure!(deleted[0].1.is_ok(), "delete: {deleted:?}");
    let listed = a.list_groups().await.map_err(|e| e.to_string())?;
    ensure!(
        listed.iter().all(|g| g.group_id != GROUP),
        "still listed after the delete: {listed:?}"
    );
    let again = a.delete_groups(&[GROUP]).await;
    ensure!(
        again[0]
            .1
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::GROUP_ID_NOT_FOUND),
        "deleting it again: {again:?}"
    );
    Ok(())
}
