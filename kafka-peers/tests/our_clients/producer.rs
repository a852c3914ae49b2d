//! Our producer against Apache Kafka: idempotence and acks=all, every codec (checked on
//! Kafka's disk), transactions read back by the Java consumer and ours.

use super::*;

pub(super) async fn producer_idempotent_acks_all(ctx: Shared) -> CheckResult {
    let topic = "p-idem";
    create_topic(&ctx, topic, 3).await?;
    let cfg = producer_config(&ctx, &[]);
    ensure!(
        cfg.enable_idempotence && cfg.acks == kafka_producer::Acks::All,
        "defaults are not idempotent acks=all"
    );
    let p = Producer::new(cfg).await.map_err(|e| e.to_string())?;
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let mut r = ProducerRecord::new(topic, Bytes::from(format!("idem-{i}")))
            .header("idx", Some(Bytes::from(i.to_string())));
        if i % 2 == 0 {
            r = r.key(Bytes::from(format!("k{}", i % 20)));
        }
        sent.push(r);
    }
    let placed = send_all(&p, sent.clone()).await?;
    p.close(Duration::from_secs(10)).await;
    let read = java_read(&ctx, &[topic], "read_uncommitted", 300).await?;
    ensure!(
        read.len() == 300,
        "the Java consumer read {} of 300",
        read.len()
    );
    let at: BTreeMap<(i32, i64), &JavaRecord> =
        read.iter().map(|r| ((r.partition, r.offset), r)).collect();
    for (i, (r, (p, o))) in sent.iter().zip(&placed).enumerate() {
        let Some(j) = at.get(&(*p, *o)) else {
            return Err(format!("record {i}: nothing at {p}/{o}"));
        };
        ensure!(
            j.value.as_deref() == r.value.as_deref() && j.key.as_deref() == r.key.as_deref(),
            "record {i} at {p}/{o}: Java read {j:?}"
        );
        ensure!(
            j.headers == vec![("idx".to_owned(), Some(i.to_string().into_bytes()))],
            "record {i}: headers {:?}",
            j.headers
        );
        if let Some(k) = &r.key {
            ensure!(
                *p == partition_for_key(k, 3),
                "record {i}: key on partition {p}, murmur2 says {}",
                partition_for_key(k, 3)
            );
        }
    }
    for partition in 0..3 {
        let offsets: Vec<i64> = placed
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, o)| *o)
            .collect();
        let want: Vec<i64> = (0..i64::try_from(offsets.len()).unwrap()).collect();
        ensure!(
            offsets == want,
            "partition {partition}: offsets not 0.. in send order: {offsets:?}"
        );
    }
    Ok(())
}

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

pub(super) async fn producer_codecs(ctx: Shared) -> CheckResult {
    let mut expected: BTreeMap<(String, i64), (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    for codec in CODECS {
        let topic = format!("p-codec-{codec}");
        create_topic(&ctx, &topic, 1).await?;
        let p = Producer::new(producer_config(&ctx, &[("compression.type", codec)]))
            .await
            .map_err(|e| e.to_string())?;
        let records: Vec<ProducerRecord> = (0..300)
            .map(|i| {
                ProducerRecord::new(
                    topic.clone(),
                    Bytes::from(format!("{codec} record {i} ").repeat(3)),
                )
                .key(Bytes::from(format!("key-{i}")))
                .header("codec", Some(Bytes::from(codec)))
                .header("none", None)
            })
            .collect();
        let placed = send_all(&p, records.clone()).await?;
        p.close(Duration::from_secs(10)).await;
        for (r, (_, o)) in records.iter().zip(placed) {
            expected.insert(
                (topic.clone(), o),
                (
                    r.key.clone().unwrap().to_vec(),
                    r.value.clone().unwrap().to_vec(),
                ),
            );
        }
    }
    let topics: Vec<String> = CODECS.iter().map(|c| format!("p-codec-{c}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let read = java_read(&ctx, &names, "read_uncommitted", expected.len()).await?;
    ensure!(
        read.len() == expected.len(),
        "the Java consumer read {} of {}",
        read.len(),
        expected.len()
    );
    for r in &read {
        let codec = r.topic.trim_start_matches("p-codec-");
        let want = expected.get(&(r.topic.clone(), r.offset));
        ensure!(
            want.is_some_and(|(k, v)| r.key.as_ref() == Some(k) && r.value.as_ref() == Some(v)),
            "{}/{}: read {r:?}, sent {want:?}",
            r.topic,
            r.offset
        );
        ensure!(
            r.headers
                == vec![
                    ("codec".to_owned(), Some(codec.as_bytes().to_vec())),
                    ("none".to_owned(), None)
                ],
            "{}/{}: headers {:?}",
            r.topic,
            r.offset,
            r.headers
        );
    }
    let data = ctx.kafka.lock().unwrap().data_dir(0).unwrap();
    for (id, codec) in CODECS.iter().enumerate() {
        let seg = data.join(format!("p-codec-{codec}-0/00000000000000000000.log"));
        let on_disk = codecs_in_segment(&seg);
        ensure!(
            !on_disk.is_empty() && on_disk.iter().all(|c| usize::from(*c) == id),
            "{}: batch codecs {on_disk:?}, want all {id}",
            seg.display()
        );
    }
    Ok(())
}

async fn send_txn(
    p: &Producer,
    topic: &str,
    prefix: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let mut records = Vec::new();
    for i in 0..count {
        let v = format!("{prefix}-{i:04}");
        records.push(ProducerRecord::new(topic, Bytes::from(v.clone())).partition((i % 3) as i32));
        values.push(v);
    }
    send_all(p, records).await?;
    Ok(values)
}

fn values(read: &[JavaRecord]) -> Vec<String> {
    let mut v: Vec<String> = read
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default()).unwrap())
        .collect();
    v.sort();
    v
}

pub(super) async fn producer_transactions(ctx: Shared) -> CheckResult {
    let topic = "p-txn";
    create_topic(&ctx, topic, 3).await?;
    let txn = |id: &str| producer_config(&ctx, &[("transactional.id", id)]);
    let p = Producer::new(txn("ours-txn-1"))
        .await
        .map_err(|e| e.to_string())?;
    let e = |e: kafka_producer::ProducerError| e.to_string();
    p.init_transactions().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let mut committed = send_txn(&p, topic, "c1", 60).await?;
    p.commit_transaction().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let aborted = send_txn(&p, topic, "ab", 30).await?;
    p.abort_transaction().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    committed.extend(send_txn(&p, topic, "c3", 60).await?);
    p.commit_transaction().await.map_err(e)?;
    p.close(Duration::from_secs(10)).await;
    committed.sort();
    let mut all = committed.clone();
    all.extend(aborted);
    all.sort();

    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "Java read_committed: {:?}",
        values(&rc)
    );
    let ru = java_read(&ctx, &[topic], "read_uncommitted", all.len()).await?;
    ensure!(
        values(&ru) == all,
        "Java read_uncommitted: {:?}",
        values(&ru)
    );

    // Ours at read_committed.
    let c = Consumer::new(
        consumer_config(&ctx)
            .isolation_level(IsolationLevel::ReadCommitted)
            .build()
            .map_err(|e| e.to_string())?,
    )
    .await
    .map_err(|e| e.to_string())?;
    c.assign((0..3).map(|p| TopicPartition::new(topic, p)))
        .map_err(|e| e.to_string())?;
    let mut got = poll_until(&c, committed.len(), Duration::from_secs(30)).await?;
    got.extend(
        c.poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut ours: Vec<String> = got
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap())
        .collect();
    ours.sort();
    ensure!(ours == committed, "our read_committed consumer: {ours:?}");
    let _ = c.close(Duration::from_secs(5)).await;

    // An open transaction is invisible until it commits.
    let p = Producer::new(txn("ours-txn-2"))
        .await
        .map_err(|e| e.to_string())?;
    p.init_transactions().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let open = send_txn(&p, topic, "open", 9).await?;
    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "an open transaction showed at read_committed: {:?}",
        values(&rc)
    );
    p.commit_transaction().await.map_err(e)?;
    p.close(Duration::from_secs(10)).await;
    committed.extend(open);
    committed.sort();
    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "after the commit: {:?}",
        values(&rc)
    );
    Ok(())
}
