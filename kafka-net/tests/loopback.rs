//! The tokio connection against scripted servers on 127.0.0.1:0: byte-at-a-time I/O, bad
//! size prefixes, servers that close, stall or never answer, pipelining, cancellation,
//! version negotiation.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_net::{ConnConfig, Connection, ConnectionConfig, KafkaCodec, NetError};
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Decoder;

fn config(timeout_ms: u64) -> ConnectionConfig {
    ConnectionConfig {
        conn: ConnConfig {
            request_timeout: Duration::from_millis(timeout_ms),
            ..Default::default()
        },
        handshake: false,
        ..Default::default()
    }
}

/// Reads one request frame from the socket (None on EOF).
async fn read_request(sock: &mut TcpStream, buf: &mut BytesMut) -> Option<kafka_protocol::Request> {
    let mut codec = KafkaCodec::default();
    loop {
        if let Some(f) = codec.decode(buf).unwrap() {
            return Some(frame::decode_request(&f).unwrap());
        }
        if sock.read_buf(buf).await.unwrap() == 0 {
            return None;
        }
    }
}

fn response_bytes(req: &kafka_protocol::Request, body: ResponseBody) -> Vec<u8> {
    let header = ResponseHeader {
        correlation_id: req.header.correlation_id,
        ..Default::default()
    };
    let b = frame::encode_response(&header, &body, req.version())
        .unwrap()
        .into_bytes();
    let mut out = (b.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&b);
    out
}

fn metadata_response(tag: &'static str) -> ResponseBody {
    ResponseBody::Metadata(MetadataResponse {
        cluster_id: Some(KStr::from_static(tag)),
        ..Default::default()
    })
}

fn cluster_id(body: &ResponseBody) -> String {
    match body {
        ResponseBody::Metadata(m) => m.cluster_id.as_deref().unwrap_or_default().to_owned(),
        other => panic!("unexpected {other:?}"),
    }
}

async fn server<F, Fut>(script: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        script(sock).await;
    });
    addr
}

fn meta() -> RequestBody {
    RequestBody::Metadata(MetadataRequest::default())
}

#[tokio::test]
async fn one_byte_at_a_time_both_ways() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let mut one = [0u8; 1];
        let mut codec = KafkaCodec::default();
        // Read the request byte by byte.
        let req = loop {
            sock.read_exact(&mut one).await.unwrap();
            buf.extend_from_slice(&one);
            if let Some(f) = codec.decode(&mut buf).unwrap() {
                break frame::decode_request(&f).unwrap();
            }
        };
        for b in response_bytes(&req, metadata_response("slow-bytes")) {
            sock.write_all(&[b]).await.unwrap();
            sock.flush().await.unwrap();
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await;
    let conn = Connection::connect(&addr, config(5000)).await.unwrap();
    let body = conn.request_at(meta(), 9).await.unwrap();
    assert_eq!(cluster_id(&body), "slow-bytes");
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order_and_the_window_holds() {
    let max_seen = Arc::new(AtomicUsize::new(0));
    let seen = max_seen.clone();
    let addr = server(move |mut sock| async move {
        let mut buf = BytesMut::new();
        // Collect requests until the client stops sending (window full), then answer all.
        let mut answered = 0;
        while answered < 20 {
            let mut pending = Vec::new();
            pending.push(read_request(&mut sock, &mut buf).await.unwrap());
            while let Ok(Some(r)) =
                tokio::time::timeout(Duration::from_millis(50), read_request(&mut sock, &mut buf))
                    .await
            {
                pending.push(r);
            }
            seen.fetch_max(pending.len(), Ordering::SeqCst);
            for r in &pending {
                let tag: &'static str =
                    Box::leak(format!("r{}", r.header.correlation_id).into_boxed_str());
                sock.write_all(&response_bytes(r, metadata_response(tag)))
                    .await
                    .unwrap();
            }
            answered += pending.len();
        }
    })
    .await;
    let conn = Connection::connect(&addr, config(10_000)).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let c = conn.clone();
        tasks.push(tokio::spawn(async move { c.send(meta(), 9).await }));
    }
    for t in tasks {
        let resp = t.await.unwrap().unwrap().unwrap();
        assert_eq!(
            cluster_id(&resp.body),
            format!("r{}", resp.header.correlation_id)
        );
    }
    let max = max_seen.load(Ordering::SeqCst);
    assert!(max > 1, "requests were pipelined (saw {max} at once)");
    assert!(max <= 5, "never more than max.in.flight (saw {max})");
}

#[tokio::test]
async fn oversized_response_prefix_fails_the_connection() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let _ = read_request(&mut sock, &mut buf).await;
        sock.write_all(&0x7fff_fff0_i32.to_be_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await;
    let mut cfg = config(5000);
    cfg.conn.max_frame = 1 << 20;
    let conn = Connection::connect(&addr, cfg).await.unwrap();
    let err = conn.send(meta(), 9).await.unwrap_err();
    assert!(
        matches!(err, NetError::FrameTooLarge { max: 1_048_576, .. }),
        "{err}"
    );
    // The connection is gone afterwards.
    assert!(conn.send(meta(), 9).await.is_err());
}

#[tokio::test]
async fn negative_response_prefix_fails_the_connection() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let _ = read_request(&mut sock, &mut buf).await;
        sock.write_all(&(-7i32).to_be_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    })
    .await;
    let conn = Connection::connect(&addr, config(5000)).await.unwrap();
    let err = conn.send(meta(), 9).await.unwrap_err();
    assert!(matches!(err, NetError::NegativeLength(-7)), "{err}");
}

#[tokio::test]
async fn server_closing_mid_response_fails_in_flight_requests() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let req = read_request(&mut sock, &mut buf).await.unwrap();
        let bytes = response_bytes(&req, metadata_response("cut"));
        sock.write_all(&bytes[..bytes.len() / 2]).await.unwrap();
        // Dropping the socket closes it mid-frame.
    })
    .await;
    let conn = Connection::connect(&addr, config(5000)).await.unwrap();
    let err = conn.send(meta(), 9).await.unwrap_err();
    assert!(matches!(err, NetError::Closed(_)), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        while read_request(&mut sock, &mut buf).await.is_some() {}
    })
    .await;
    let conn = Connection::connect(&addr, config(300)).await.unwrap();
    let started = std::time::Instant::now();
    let err = conn.send(meta(), 9).await.unwrap_err();
    assert!(
        matches!(
            err,
            NetError::Timeout {
                api: ApiKey::Metadata,
                ..
            }
        ),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn a_slow_server_within_the_timeout_is_fine() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let req = read_request(&mut sock, &mut buf).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        sock.write_all(&response_bytes(&req, metadata_response("late")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await;
    let conn = Connection::connect(&addr, config(3000)).await.unwrap();
    assert_eq!(
        cluster_id(&conn.request_at(meta(), 9).await.unwrap()),
        "late"
    );
}

#[tokio::test]
async fn a_dropped_caller_does_not_disturb_the_order() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        let first = read_request(&mut sock, &mut buf).await.unwrap();
        let second = read_request(&mut sock, &mut buf).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        sock.write_all(&response_bytes(&first, metadata_response("first")))
            .await
            .unwrap();
        sock.write_all(&response_bytes(&second, metadata_response("second")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await;
    let conn = Connection::connect(&addr, config(5000)).await.unwrap();
    let c1 = conn.clone();
    let abandoned = tokio::spawn(async move { c1.send(meta(), 9).await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    let c2 = conn.clone();
    let kept = tokio::spawn(async move { c2.send(meta(), 9).await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    abandoned.abort();
    let resp = kept.await.unwrap().unwrap().unwrap();
    assert_eq!(cluster_id(&resp.body), "second");
}

#[tokio::test]
async fn api_versions_handshake_downgrades_on_unsupported_version() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        // First attempt: v4, which this "old broker" does not know.
        let first = read_request(&mut sock, &mut buf).await.unwrap();
        assert_eq!(first.version(), 4);
        let old = ResponseBody::ApiVersions(ApiVersionsResponse {
            error_code: 35,
            api_keys: vec![api_versions_response::ApiVersion {
                api_key: 18,
                min_version: 0,
                max_version: 2,
                ..Default::default()
            }],
            ..Default::default()
        });
        let header = ResponseHeader {
            correlation_id: first.header.correlation_id,
            ..Default::default()
        };
        let b = frame::encode_response(&header, &old, 0)
            .unwrap()
            .into_bytes();
        sock.write_all(&(b.len() as i32).to_be_bytes())
            .await
            .unwrap();
        sock.write_all(&b).await.unwrap();
        // Second attempt: v2.
        let second = read_request(&mut sock, &mut buf).await.unwrap();
        assert_eq!(second.version(), 2);
        let api_keys = [(18, 0, 2), (3, 0, 8), (0, 3, 20)]
            .into_iter()
            .map(|(k, lo, hi)| api_versions_response::ApiVersion {
                api_key: k,
                min_version: lo,
                max_version: hi,
                ..Default::default()
            })
            .collect();
        let ok = ResponseBody::ApiVersions(ApiVersionsResponse {
            api_keys,
            ..Default::default()
        });
        sock.write_all(&response_bytes(&second, ok)).await.unwrap();
        let next = read_request(&mut sock, &mut buf).await.unwrap();
        assert_eq!((next.api_key(), next.version()), (ApiKey::Metadata, 8));
        sock.write_all(&response_bytes(&next, metadata_response("negotiated")))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    })
    .await;
    let mut cfg = config(5000);
    cfg.handshake = true;
    let conn = Connection::connect(&addr, cfg).await.unwrap();
    let v = conn.versions().unwrap();
    assert_eq!(v.version_for(ApiKey::Metadata).unwrap(), 8);
    // Produce: broker 3-20, ours 0-11 -> 11.
    assert_eq!(
        v.version_for(ApiKey::Produce).unwrap(),
        kafka_net::versions::client_max(ApiKey::Produce)
    );
    assert!(matches!(
        v.version_for(ApiKey::Fetch),
        Err(NetError::UnsupportedApi {
            api: ApiKey::Fetch,
            ..
        })
    ));
    assert_eq!(
        cluster_id(&conn.request(meta()).await.unwrap()),
        "negotiated"
    );
}

#[tokio::test]
async fn idle_connections_close() {
    let addr = server(|mut sock| async move {
        let mut buf = BytesMut::new();
        while read_request(&mut sock, &mut buf).await.is_some() {}
    })
    .await;
    let mut cfg = config(5000);
    cfg.idle_timeout = Some(Duration::from_millis(100));
    let conn = Connection::connect(&addr, cfg).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(conn.is_closed());
    assert!(matches!(
        conn.send(meta(), 9).await,
        Err(NetError::Closed(_))
    ));
}

#[tokio::test]
async fn connect_timeout_and_refused() {
    // Nothing listens on this port (bound then dropped).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = Connection::connect(&format!("127.0.0.1:{port}"), config(1000))
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::Io(_)), "{err}");
    let _ = Bytes::new();
}
