//! Bad input against a running broker: random bytes, truncated frames, huge, negative and
//! tiny size prefixes, unknown api keys, unsupported versions, valid headers with garbage
//! bodies, pipelined requests ending in garbage, and (once Produce is implemented) record
//! batches with a bad CRC, a truncated batch and an oversized batch. The broker must answer or
//! close *that* connection, and a well-behaved client on another connection (kafka-net's
//! `Connection`) must keep being served during and after, in the same test.
//!
//! Also: a frame over `socket.request.max.bytes` is refused from its size prefix alone,
//! without the broker allocating it, and `max.connections` refuses extra connections while
//! the existing ones keep working.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_broker::BrokerConfig;
use kafka_broker::handler::SUPPORTED;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, MetadataRequest, ProduceRequest, RequestBody, RequestHeader,
    ResponseBody, metadata_request::MetadataRequestTopic,
};
use kafka_protocol::record::RecordBatchBuilder;
use kafka_protocol::{KStr, frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// How long the broker may take to answer or close a connection after bad input.
const REACT: Duration = Duration::from_secs(5);
/// `socket.request.max.bytes` of the test broker.
const MAX_REQUEST: usize = 256 * 1024;
/// `message.max.bytes` of the test broker.
const MAX_MESSAGE: usize = 16 * 1024;

struct TestBroker {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: JoinHandle<()>,
    _dir: tempfile::TempDir,
}

async fn start(settings: &[(&str, &str)]) -> TestBroker {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    for (k, v) in settings {
        config.apply(k, v).unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        kafka_broker::run(listener, config, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap();
    });
    TestBroker {
        addr,
        stop: Some(stop_tx),
        task,
        _dir: dir,
    }
}

impl TestBroker {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        tokio::time::timeout(Duration::from_secs(35), &mut self.task)
            .await
            .expect("the broker did not shut down")
            .unwrap();
    }
}

/// A well-behaved client on its own connection, sending Metadata and ApiVersions requests in
/// a loop until stopped; every one must succeed.
struct Watcher {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    task: JoinHandle<Result<(), String>>,
}

impl Watcher {
    async fn start(addr: SocketAddr) -> Self {
        let conn = Connection::connect(&addr.to_string(), ConnectionConfig::default())
            .await
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let (s, o) = (stop.clone(), ok.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                let body = if o.load(Ordering::Relaxed) % 2 == 0 {
                    RequestBody::Metadata(MetadataRequest {
                        topics: None,
                        ..Default::default()
                    })
                } else {
                    RequestBody::ApiVersions(ApiVersionsRequest::default())
                };
                let r = tokio::time::timeout(REACT, conn.request(body))
                    .await
                    .map_err(|_| "a request of the well-behaved client timed out".to_owned())?;
                match r {
                    Ok(ResponseBody::Metadata(m)) if m.brokers.len() == 1 => {}
                    Ok(ResponseBody::ApiVersions(v)) if v.error_code == 0 => {}
                    Ok(other) => return Err(format!("unexpected answer {other:?}")),
                    Err(e) => return Err(format!("the well-behaved client failed: {e}")),
                }
                o.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok(())
        });
        Self { stop, ok, task }
    }

    fn served(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// Checks it is still being served right now (more answers arrive).
    async fn assert_alive(&self, when: &str) {
        let before = self.served();
        let deadline = tokio::time::Instant::now() + REACT;
        while self.served() < before + 2 {
            assert!(
                !self.task.is_finished(),
                "the well-behaved client stopped {when}"
            );
            assert!(
                tokio::time::Instant::now() < deadline,
                "the well-behaved client got no answers for {REACT:?} {when}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        match self.task.await.unwrap() {
            Ok(()) => self.ok.load(Ordering::Relaxed),
            Err(e) => panic!("{e}"),
        }
    }
}

/// A small xorshift generator: the same bytes on every run.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// A request frame (size prefix included) encoded by our codec.
fn request(key: ApiKey, version: i16, corr: i32, body: &RequestBody) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: corr,
        client_id: Some(KStr::from_static("bad-input")),
        ..Default::default()
    };
    let f = frame::encode_request(&header, body).unwrap().into_bytes();
    with_size(&f)
}

fn with_size(frame: &[u8]) -> Vec<u8> {
    let mut out = (frame.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(frame);
    out
}

/// A request header written by hand (any key and version), followed by `body`.
fn raw_request(key: i16, version: i16, corr: i32, flexible: bool, body: &[u8]) -> Vec<u8> {
    let mut f = BytesMut::new();
    f.put_i16(key);
    f.put_i16(version);
    f.put_i32(corr);
    f.put_i16(9);
    f.put_slice(b"bad-input");
    if flexible {
        f.put_u8(0); // no tagged fields
    }
    f.put_slice(body);
    with_size(&f)
}

fn api_versions_v3(corr: i32) -> Vec<u8> {
    request(
        ApiKey::ApiVersions,
        3,
        corr,
        &RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: KStr::from_static("bad-input"),
            client_software_version: KStr::from_static("1"),
            ..Default::default()
        }),
    )
}

/// What the broker did with a connection.
#[derive(Debug)]
enum Reaction {
    /// Closed it; these frames (size prefix stripped) came before.
    Closed(Vec<Bytes>),
    /// Still open after `REACT`; these frames came.
    Open(Vec<Bytes>),
}

/// Reads whole response frames until the broker closes the connection, `REACT` passes
/// without a close, or `enough` frames came.
async fn reaction(sock: &mut TcpStream, enough: Option<usize>) -> Reaction {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let deadline = tokio::time::Instant::now() + REACT;
    loop {
        while buf.len() >= 4 {
            let n = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            assert!(n >= 4, "response frame with size {n}");
            if buf.len() < 4 + n as usize {
                break;
            }
            let f = buf.split_to(4 + n as usize).freeze().slice(4..);
            frames.push(f);
        }
        if enough.is_some_and(|n| frames.len() >= n) {
            return Reaction::Open(frames);
        }
        let read = tokio::time::timeout_at(deadline, sock.read_buf(&mut buf)).await;
        match read {
            Err(_) => return Reaction::Open(frames),
            Ok(Ok(0)) | Ok(Err(_)) => {
                assert!(
                    buf.is_empty(),
                    "the broker closed in the middle of a response ({} bytes left)",
                    buf.len()
                );
                return Reaction::Closed(frames);
            }
            Ok(Ok(_)) => {}
        }
    }
}

fn correlation(frame: &Bytes) -> i32 {
    i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]])
}

/// Sends `bytes` on a new connection, optionally half-closes, and returns the reaction (up
/// to `enough` frames).
async fn send(addr: SocketAddr, bytes: &[u8], half_close: bool, enough: Option<usize>) -> Reaction {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    // The broker may close before reading everything: a failed write is a close too.
    if sock.write_all(bytes).await.is_err() {
        return Reaction::Closed(Vec::new());
    }
    if half_close {
        let _ = sock.shutdown().await;
    }
    reaction(&mut sock, enough).await
}

/// The broker must close this connection (answering nothing).
async fn must_close_silently(addr: SocketAddr, bytes: &[u8], half_close: bool, what: &str) {
    match send(addr, bytes, half_close, None).await {
        Reaction::Closed(f) if f.is_empty() => {}
        other => panic!("{what}: expected the connection closed without an answer, got {other:?}"),
    }
}

/// The broker must answer with `corr` or close; either way within `REACT`.
async fn answer_or_close(addr: SocketAddr, bytes: &[u8], corr: i32, what: &str) -> &'static str {
    match send(addr, bytes, false, Some(1)).await {
        Reaction::Closed(f) if f.is_empty() => "closed",
        Reaction::Closed(f) | Reaction::Open(f) if !f.is_empty() => {
            assert_eq!(
                correlation(&f[0]),
                corr,
                "{what}: answer to another request"
            );
            "answered"
        }
        Reaction::Open(_) => panic!("{what}: no answer and still open after {REACT:?}"),
        Reaction::Closed(_) => unreachable!(),
    }
}

/// VmPeak of this process in KiB (Linux), to see whether a huge frame was allocated.
fn vm_peak_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmPeak:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_closes_only_that_connection() {
    let max_request = MAX_REQUEST.to_string();
    let max_message = MAX_MESSAGE.to_string();
    let broker = start(&[
        ("socket.request.max.bytes", &max_request),
        ("message.max.bytes", &max_message),
    ])
    .await;
    let addr = broker.addr;
    let watcher = Watcher::start(addr).await;
    watcher.assert_alive("at the start").await;
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);

    // Random bytes, then end of stream: the broker closes (it may answer first if the bytes
    // happen to form a request, which random bytes practically never do).
    for i in 0..24 {
        let n = [1, 3, 4, 7, 64, 1000, 4096, 20_000][i % 8];
        let bytes = noise.bytes(n);
        match send(addr, &bytes, true, None).await {
            Reaction::Closed(_) => {}
            Reaction::Open(_) => panic!("random bytes #{i} ({n}): still open after end of input"),
        }
    }
    watcher.assert_alive("after random bytes").await;

    // Random bytes behind a plausible size prefix, no end of stream: answered or closed.
    for i in 0..16 {
        let body = noise.bytes(8 + i * 37);
        let corr = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
        answer_or_close(addr, &with_size(&body), corr, "random frame").await;
    }

    // A valid request cut short, then end of stream: closed, nothing answered.
    let whole = request(
        ApiKey::Metadata,
        12,
        1,
        &RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some(KStr::from_static("some-topic")),
                ..Default::default()
            }]),
            allow_auto_topic_creation: false,
            ..Default::default()
        }),
    );
    for cut in [1, 2, 3, 4, 5, 8, 12, whole.len() / 2, whole.len() - 1] {
        must_close_silently(addr, &whole[..cut], true, &format!("frame cut at {cut}")).await;
    }
    // The whole frame is answered (the cut ones were not answered only because they were cut).
    match send(addr, &whole, true, None).await {
        Reaction::Closed(f) if f.len() == 1 => assert_eq!(correlation(&f[0]), 1),
        other => panic!("whole metadata request: {other:?}"),
    }
    watcher.assert_alive("after truncated frames").await;

    // Size prefixes: negative, over the limit, huge. Refused from the prefix alone: the
    // connection closes while we are still "sending" the body.
    let peak_before = vm_peak_kib();
    for size in [
        -1i32,
        -5,
        i32::MIN,
        MAX_REQUEST as i32 + 1,
        64 << 20,
        1 << 30,
        i32::MAX,
    ] {
        must_close_silently(
            addr,
            &size.to_be_bytes(),
            false,
            &format!("size prefix {size}"),
        )
        .await;
    }
    if let (Some(before), Some(after)) = (peak_before, vm_peak_kib()) {
        // A 1 GiB or 2 GiB buffer would show in the peak of virtual memory.
        assert!(
            after < before + 512 * 1024,
            "VmPeak grew from {before} KiB to {after} KiB: a refused frame was allocated"
        );
    }
    // A frame of just under the limit is read and answered: the limit is the frame size.
    {
        let name = "x".repeat(200);
        let mut n = MAX_REQUEST / 210;
        let bytes = loop {
            let topics = (0..n)
                .map(|i| MetadataRequestTopic {
                    name: Some(KStr::from(format!("{i:05}{name}"))),
                    ..Default::default()
                })
                .collect();
            let bytes = request(
                ApiKey::Metadata,
                12,
                3,
                &RequestBody::Metadata(MetadataRequest {
                    topics: Some(topics),
                    allow_auto_topic_creation: false,
                    ..Default::default()
                }),
            );
            if bytes.len() - 4 <= MAX_REQUEST {
                break bytes;
            }
            n -= 1;
        };
        assert!(bytes.len() - 4 > MAX_REQUEST - 1000);
        match send(addr, &bytes, false, Some(1)).await {
            Reaction::Open(f) if f.len() == 1 => assert_eq!(correlation(&f[0]), 3),
            other => panic!(
                "a request of {} bytes (limit {MAX_REQUEST}): {other:?}",
                bytes.len() - 4
            ),
        }
    }
    // Frames too short for a request header.
    for n in 0..8 {
        must_close_silently(
            addr,
            &with_size(&noise.bytes(n)),
            false,
            &format!("{n}-byte frame"),
        )
        .await;
    }
    watcher.assert_alive("after bad size prefixes").await;

    // Unknown api keys: Kafka closes the connection; an error answer would do too.
    for key in [-1i16, 100, 999, i16::MAX] {
        let r = answer_or_close(
            addr,
            &raw_request(key, 0, 77, false, &[]),
            77,
            "unknown api key",
        )
        .await;
        println!("unknown api key {key}: {r}");
    }
    // Unsupported versions of known apis.
    for key in [
        ApiKey::Metadata,
        ApiKey::CreateTopics,
        ApiKey::Produce,
        ApiKey::Fetch,
    ] {
        let r = answer_or_close(
            addr,
            &raw_request(key as i16, 99, 78, true, &[0]),
            78,
            "unsupported version",
        )
        .await;
        println!("{key:?} v99: {r}");
    }
    // ApiVersions at a version the broker does not know: a v0 answer with
    // UNSUPPORTED_VERSION (35) and the broker's ApiVersions range, and the connection stays
    // usable.
    {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(&raw_request(18, 99, 5, true, &[0, 0, 0]))
            .await
            .unwrap();
        sock.write_all(&api_versions_v3(6)).await.unwrap();
        sock.shutdown().await.unwrap();
        let Reaction::Closed(frames) = reaction(&mut sock, None).await else {
            panic!("ApiVersions v99 connection not closed after end of input");
        };
        assert_eq!(frames.len(), 2, "ApiVersions v99 then v3: {frames:?}");
        let v0 = frame::decode_response(&frames[0], ApiKey::ApiVersions, 0).unwrap();
        assert_eq!(v0.header.correlation_id, 5);
        let ResponseBody::ApiVersions(av) = v0.body else {
            panic!()
        };
        assert_eq!(av.error_code, 35, "ApiVersions v99: {av:?}");
        let v3 = frame::decode_response(&frames[1], ApiKey::ApiVersions, 3).unwrap();
        assert_eq!(v3.header.correlation_id, 6);
    }
    watcher
        .assert_alive("after unknown keys and versions")
        .await;

    // A valid header with a garbage body, for every advertised api and version.
    for &(key, lo, hi) in SUPPORTED {
        for version in lo..=hi {
            let flexible = frame::request_header_version(key, version) == 2;
            let len = 3 + (noise.next() % 60) as usize;
            let body = noise.bytes(len);
            let r = answer_or_close(
                addr,
                &raw_request(key as i16, version, 90, flexible, &body),
                90,
                &format!("{key:?} v{version} with a garbage body"),
            )
            .await;
            if r == "answered" {
                println!("{key:?} v{version} garbage body: answered");
            }
        }
    }
    watcher.assert_alive("after garbage bodies").await;

    // Pipelined requests followed by garbage: the requests before it are answered, in order,
    // then the connection closes.
    {
        let mut bytes = Vec::new();
        for corr in 1..=4 {
            bytes.extend(api_versions_v3(corr));
        }
        bytes.extend(raw_request(999, 0, 5, false, &[1, 2, 3]));
        bytes.extend(api_versions_v3(6));
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(&bytes).await.unwrap();
        let Reaction::Closed(frames) = reaction(&mut sock, None).await else {
            panic!("pipelined requests then garbage: not closed");
        };
        let corrs: Vec<i32> = frames.iter().map(correlation).collect();
        assert_eq!(corrs, [1, 2, 3, 4], "answers before the garbage, in order");
    }

    // Connections opened and dropped at once, many times.
    for _ in 0..200 {
        drop(TcpStream::connect(addr).await.unwrap());
    }
    watcher
        .assert_alive("after 200 connections opened and dropped")
        .await;

    if SUPPORTED.iter().any(|(k, _, _)| *k == ApiKey::Produce) {
        produce_validation(addr, &watcher).await;
    } else {
        println!("NOTICE: Produce is not implemented yet; skipping the record batch checks");
    }

    let served = watcher.finish().await;
    println!("the well-behaved client was answered {served} times");
    assert!(
        served > 10,
        "the well-behaved client got only {served} answers"
    );
    broker.stop().await;
}

/// A batch of `n` records of `size` incompressible bytes each.
fn batch(noise: &mut Noise, n: usize, size: usize) -> BytesMut {
    let mut b = RecordBatchBuilder::new();
    for i in 0..n {
        let v = noise.bytes(size);
        b.append(1_700_000_000_000 + i as i64, Some(b"k"), Some(&v), &[])
            .unwrap();
    }
    b.build_mut().unwrap()
}

/// The error code and base offset of a one-partition Produce.
async fn produce(conn: &Connection, topic: &str, records: Bytes) -> (i16, i64) {
    let req = ProduceRequest {
        acks: 1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let resp = tokio::time::timeout(REACT, conn.request(RequestBody::Produce(req)))
        .await
        .expect("produce timed out")
        .expect("produce failed");
    let ResponseBody::Produce(p) = resp else {
        panic!("{resp:?}")
    };
    let part = &p.responses[0].partition_responses[0];
    (part.error_code, part.base_offset)
}

async fn produce_validation(addr: SocketAddr, watcher: &Watcher) {
    const CORRUPT_MESSAGE: i16 = 2;
    const MESSAGE_TOO_LARGE: i16 = 10;
    const INVALID_RECORD: i16 = 87;
    let conn = Connection::connect(&addr.to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    let topic = "bad-input-produce";
    // Auto-create the topic.
    let _ = conn
        .request(RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some(KStr::from_static(topic)),
                ..Default::default()
            }]),
            allow_auto_topic_creation: true,
            ..Default::default()
        }))
        .await
        .unwrap();
    let mut noise = Noise(42);

    // A byte flipped after the CRC field (offset 21): the CRC no longer matches.
    let mut bad = batch(&mut noise, 3, 100);
    let at = bad.len() - 10;
    bad[at] ^= 0x55;
    let (code, _) = produce(&conn, topic, bad.freeze()).await;
    assert_eq!(code, CORRUPT_MESSAGE, "batch with a bad CRC");

    // A batch whose length field says more than was sent.
    let whole = batch(&mut noise, 3, 100);
    let cut = whole.freeze().slice(..120);
    let (code, _) = produce(&conn, topic, cut).await;
    assert!(
        code == CORRUPT_MESSAGE || code == INVALID_RECORD,
        "truncated batch: error {code}"
    );

    // A batch over message.max.bytes (but within socket.request.max.bytes).
    let big = batch(&mut noise, 2, MAX_MESSAGE);
    assert!(big.len() > MAX_MESSAGE && big.len() < MAX_REQUEST);
    let (code, _) = produce(&conn, topic, big.freeze()).await;
    assert_eq!(code, MESSAGE_TOO_LARGE, "batch over message.max.bytes");

    // Nothing of the refused batches was appended: the next good batch lands at offset 0.
    let good = batch(&mut noise, 2, 100);
    let (code, base) = produce(&conn, topic, good.freeze()).await;
    assert_eq!((code, base), (0, 0), "first good batch after refused ones");
    let good = batch(&mut noise, 1, 100);
    let (code, base) = produce(&conn, topic, good.freeze()).await;
    assert_eq!((code, base), (0, 2), "second good batch");
    watcher.assert_alive("after bad record batches").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit_refuses_extra_connections() {
    let broker = start(&[("max.connections", "3")]).await;
    let addr = broker.addr;

    async fn served(sock: &mut TcpStream, corr: i32) -> bool {
        if sock.write_all(&api_versions_v3(corr)).await.is_err() {
            return false;
        }
        let mut len = [0u8; 4];
        let read = tokio::time::timeout(REACT, sock.read_exact(&mut len)).await;
        if !matches!(read, Ok(Ok(_))) {
            return false;
        }
        let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
        sock.read_exact(&mut frame).await.unwrap();
        correlation(&Bytes::from(frame)) == corr
    }

    let mut held = Vec::new();
    for i in 0..3 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        assert!(served(&mut s, i).await, "connection {i} within the limit");
        held.push(s);
    }
    // Over the limit: the kernel accepts, the broker closes it at once.
    for i in 0..5 {
        let mut extra = TcpStream::connect(addr).await.unwrap();
        assert!(
            !served(&mut extra, 100 + i).await,
            "connection over max.connections was served"
        );
    }
    // The held ones keep working.
    for (i, s) in held.iter_mut().enumerate() {
        assert!(served(s, 10 + i as i32).await, "held connection {i}");
    }
    // Closing one frees a slot (the broker notices the close asynchronously: retry briefly).
    drop(held.pop());
    let mut ok = false;
    for attempt in 0..50 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if served(&mut s, 200 + attempt).await {
            ok = true;
            held.push(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "a slot freed by a closed connection was never reused");
    for (i, s) in held.iter_mut().enumerate() {
        assert!(
            served(s, 300 + i as i32).await,
            "held connection {i} at the end"
        );
    }
    drop(held);
    broker.stop().await;
}

/// Records whose create time lies outside the topic's window are refused with
/// INVALID_TIMESTAMP, each one named in `record_errors` (Produce v8+), and nothing of the batch
/// is appended; with log-append time the window does not apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_outside_the_timestamp_window_are_refused_and_named() {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    const INVALID_TIMESTAMP: i16 = 32;
    let broker = start(&[("log.message.timestamp.before.max.ms", "86400000")]).await;
    let conn = Connection::connect(&broker.addr.to_string(), ConnectionConfig::default())
        .await
        .unwrap();
    let config = |k: &str, v: &str| CreatableTopicConfig {
        name: KStr::from(k.to_owned()),
        value: Some(KStr::from(v.to_owned())),
        ..Default::default()
    };
    let topic = |name: &str, configs: Vec<CreatableTopicConfig>| CreatableTopic {
        name: KStr::from(name.to_owned()),
        num_partitions: 1,
        replication_factor: 1,
        configs,
        ..Default::default()
    };
    let resp = conn
        .request(RequestBody::CreateTopics(
            kafka_protocol::messages::CreateTopicsRequest {
                topics: vec![
                    topic(
                        "ts-window",
                        vec![config("message.timestamp.after.max.ms", "60000")],
                    ),
                    topic(
                        "ts-append",
                        vec![
                            config("message.timestamp.after.max.ms", "60000"),
                            config("message.timestamp.type", "LogAppendTime"),
                        ],
                    ),
                ],
                timeout_ms: 5000,
                ..Default::default()
            },
        ))
        .await
        .unwrap();
    let ResponseBody::CreateTopics(c) = resp else {
        panic!("{resp:?}")
    };
    assert!(c.topics.iter().all(|t| t.error_code == 0), "{c:?}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let stamps = [now, now + 600_000, now - 2 * 86_400_000, now - 1000];
    let mut b = RecordBatchBuilder::new();
    for (i, ts) in stamps.iter().enumerate() {
        b.append(*ts, None, Some(format!("v{i}").as_bytes()), &[])
            .unwrap();
    }
    let records = b.build().unwrap();
    let send = |topic: &'static str, records: Bytes| {
        let conn = conn.clone();
        async move {
            let req = ProduceRequest {
                acks: -1,
                timeout_ms: 5000,
                topic_data: vec![TopicProduceData {
                    name: KStr::from_static(topic),
                    partition_data: vec![PartitionProduceData {
                        index: 0,
                        records: Some(records),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let resp = conn.request(RequestBody::Produce(req)).await.unwrap();
            let ResponseBody::Produce(p) = resp else {
                panic!("{resp:?}")
            };
            p.responses[0].partition_responses[0].clone()
        }
    };
    let part = send("ts-window", records.clone()).await;
    assert_eq!(part.error_code, INVALID_TIMESTAMP, "{part:?}");
    let indices: Vec<i32> = part.record_errors.iter().map(|e| e.batch_index).collect();
    assert_eq!(indices, vec![1, 2], "{part:?}");
    let messages: Vec<String> = part
        .record_errors
        .iter()
        .map(|e| {
            e.batch_index_error_message
                .as_deref()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(
        messages[0].contains("message.timestamp.after.max.ms"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("message.timestamp.before.max.ms"),
        "{messages:?}"
    );
    assert!(part.error_message.is_some());
    // Nothing was appended: a good batch lands at offset 0.
    let mut good = RecordBatchBuilder::new();
    good.append(now, None, Some(b"ok"), &[]).unwrap();
    let part = send("ts-window", good.build().unwrap()).await;
    assert_eq!((part.error_code, part.base_offset), (0, 0), "{part:?}");
    // Log-append time: the broker's clock replaces the timestamps, nothing is refused.
    let part = send("ts-append", records).await;
    assert_eq!((part.error_code, part.base_offset), (0, 0), "{part:?}");
    broker.stop().await;
}
