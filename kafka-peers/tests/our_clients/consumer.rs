//! Our consumer against Apache Kafka: a two-member group's rebalance, committed offsets
//! across a restart of Kafka, seek and offsets for times.

use super::*;

pub(super) const GROUP: &str = "ours-group";
pub(super) const GROUP_TOPIC: &str = "c-grp";

fn member(ctx: &Shared, name: &str) -> Result<ConsumerConfig, String> {
    consumer_config(ctx)
        .group_id(GROUP)
        .client_id(name)
        .enable_auto_commit(false)
        .session_timeout(Duration::from_secs(10))
        .heartbeat_interval(Duration::from_millis(500))
        .build()
        .map_err(|e| e.to_string())
}

async fn produce_spread(ctx: &Shared, topic: &str, from: i64, count: i64) -> CheckResult {
    let p = Producer::new(producer_config(ctx, &[]))
        .await
        .map_err(|e| e.to_string())?;
    let records = (from..from + count)
        .map(|i| {
            ProducerRecord::new(topic, Bytes::from(format!("g-{i}")))
                .partition(i32::try_from(i % 3).unwrap())
        })
        .collect();
    send_all(&p, records).await?;
    p.close(Duration::from_secs(10)).await;
    Ok(())
}

pub(super) async fn consumer_group_rebalance(ctx: Shared) -> CheckResult {
    create_topic(&ctx, GROUP_TOPIC, 3).await?;
    produce_spread(&ctx, GROUP_TOPIC, 0, 300).await?;
    let a = Arc::new(
        Consumer::new(member(&ctx, "member-a")?)
            .await
            .map_err(|e| e.to_string())?,
    );
    a.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let mut seen: BTreeSet<(i32, i64)> = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while (a.assignment().len() < 3 || seen.len() < 30) && Instant::now() < deadline {
        for r in a
            .poll(Duration::from_millis(200))
            .await
            .map_err(|e| e.to_string())?
        {
            seen.insert((r.partition, r.offset));
        }
    }
    ensure!(
        a.assignment().len() == 3,
        "member a alone owns {:?}",
        a.assignment()
    );
    a.commit_sync().await.map_err(|e| e.to_string())?;

    let b = Arc::new(
        Consumer::new(member(&ctx, "member-b")?)
            .await
            .map_err(|e| e.to_string())?,
    );
    b.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let seen = Arc::new(Mutex::new(seen));
    let split = Arc::new(Mutex::new(
        None::<(BTreeSet<TopicPartition>, BTreeSet<TopicPartition>)>,
    ));
    let poller = |c: Arc<Consumer>, other: Arc<Consumer>, first: bool| {
        let (seen, split) = (seen.clone(), split.clone());
        tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                let got = c
                    .poll(Duration::from_millis(200))
                    .await
                    .map_err(|e| e.to_string())?;
                let mut s = seen.lock().unwrap();
                for r in got {
                    s.insert((r.partition, r.offset));
                }
                let (mine, theirs) = (c.assignment(), other.assignment());
                if !mine.is_empty() && !theirs.is_empty() && mine.is_disjoint(&theirs) {
                    let mut sp = split.lock().unwrap();
                    if sp.is_none() {
                        *sp = Some(if first {
                            (mine, theirs)
                        } else {
                            (theirs, mine)
                        });
                    }
                }
                if s.len() >= 300 && split.lock().unwrap().is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("only {} of 300 records read", s.len()));
                }
            }
            c.commit_sync().await.map_err(|e| e.to_string())
        })
    };
    let ta = poller(a.clone(), b.clone(), true);
    let tb = poller(b.clone(), a.clone(), false);
    ta.await.map_err(|e| e.to_string())??;
    tb.await.map_err(|e| e.to_string())??;
    let (sa, sb) = split.lock().unwrap().clone().unwrap();
    let union: BTreeSet<TopicPartition> = sa.union(&sb).cloned().collect();
    ensure!(
        union.len() == 3 && (sa.len(), sb.len()) != (0, 0),
        "after the rebalance: a {sa:?}, b {sb:?}"
    );
    ensure!(
        seen.lock().unwrap().len() == 300,
        "records read: {}",
        seen.lock().unwrap().len()
    );
    // Both commit what they own now; the group's offsets are the ends.
    a.commit_sync().await.map_err(|e| e.to_string())?;
    b.commit_sync().await.map_err(|e| e.to_string())?;
    let tps: Vec<TopicPartition> = (0..3)
        .map(|p| TopicPartition::new(GROUP_TOPIC, p))
        .collect();
    let committed = a.committed(&tps).await.map_err(|e| e.to_string())?;
    for tp in &tps {
        let o = committed.get(tp).and_then(|o| o.as_ref()).map(|o| o.offset);
        ensure!(o == Some(100), "{tp}: committed {o:?}, want 100");
    }
    for c in [a, b] {
        let c = Arc::try_unwrap(c).map_err(|_| "a consumer is still shared".to_owned())?;
        c.close(Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub(super) async fn consumer_offsets_survive_restart(ctx: Shared) -> CheckResult {
    let ctx2 = ctx.clone();
    tokio::task::spawn_blocking(move || ctx2.kafka.lock().unwrap().restart(0))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("restarting Apache Kafka: {e}"))?;
    let c = Consumer::new(member(&ctx, "member-c")?)
        .await
        .map_err(|e| e.to_string())?;
    let tps: Vec<TopicPartition> = (0..3)
        .map(|p| TopicPartition::new(GROUP_TOPIC, p))
        .collect();
    let committed = c.committed(&tps).await.map_err(|e| e.to_string())?;
    for tp in &tps {
        let o = committed.get(tp).and_then(|o| o.as_ref()).map(|o| o.offset);
        ensure!(
            o == Some(100),
            "after the restart, {tp}: committed {o:?}, want 100"
        );
    }
    produce_spread(&ctx, GROUP_TOPIC, 300, 30).await?;
    c.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let mut got = poll_until(&c, 30, Duration::from_secs(60)).await?;
    got.extend(
        c.poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut offsets: Vec<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    offsets.sort_unstable();
    let want: Vec<(i32, i64)> = (0..3)
        .flat_map(|p| (100..110).map(move |o| (p, o)))
        .collect();
    ensure!(offsets == want, "the new member read {offsets:?}");
    c.commit_sync().await.map_err(|e| e.to_string())?;
    c.close(Duration::from_secs(10))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

pub(super) const TIMES_TOPIC: &str = "c-times";

pub(super) async fn consumer_seek_and_offsets_for_times(ctx: Shared) -> CheckResult {
    create_topic(&ctx, TIMES_TOPIC, 1).await?;
    let base = now_ms() - 3_600_000;
    let p = Producer::new(producer_config(&ctx, &[]))
        .await
        .map_err(|e| e.to_string())?;
    let records = (0..20)
        .map(|i| {
            ProducerRecord::new(TIMES_TOPIC, Bytes::from(format!("t-{i}")))
                .partition(0)
                .timestamp(base + i * 1000)
        })
        .collect();
    send_all(&p, records).await?;
    p.close(Duration::from_secs(10)).await;
    let c = Consumer::new(consumer_config(&ctx).build().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    let tp = TopicPartition::new(TIMES_TOPIC, 0);
    let found = c
        .offsets_for_times(&BTreeMap::from([(tp.clone(), base + 5500)]))
        .await
        .map_err(|e| e.to_string())?;
    let hit = found.get(&tp).cloned().flatten();
    ensure!(
        hit.as_ref().map(|h| (h.offset, h.timestamp)) == Some((6, base + 6000)),
        "offsets_for_times(base + 5.5 s): {hit:?}"
    );
    let later = c
        .offsets_for_times(&BTreeMap::from([(tp.clone(), base + 60_000)]))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        later.get(&tp).cloned().flatten().is_none(),
        "a time after every record: {later:?}"
    );
    let begin = c
        .beginning_offsets(std::slice::from_ref(&tp))
        .await
        .map_err(|e| e.to_string())?;
    let end = c
        .end_offsets(std::slice::from_ref(&tp))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        begin.get(&tp) == Some(&0) && end.get(&tp) == Some(&20),
        "beginning {begin:?}, end {end:?}"
    );
    c.assign([tp.clone()]).map_err(|e| e.to_string())?;
    c.seek(&tp, 6).map_err(|e| e.to_string())?;
    let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
    ensure!(
        got.first().map(|r| (r.offset, r.timestamp)) == Some((6, base + 6000)),
        "after seek(6): {:?}",
        got.first().map(|r| r.offset)
    );
    c.seek_to_beginning(std::slice::from_ref(&tp))
        .map_err(|e| e.to_string())?;
    let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
    ensure!(
        got.first().map(|r| r.offset) == Some(0),
        "after seek_to_beginning: {:?}",
        got.first().map(|r| r.offset)
    );
    c.close(Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}
