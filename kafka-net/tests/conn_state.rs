//! The connection state on virtual time, without sockets: a scripted server reads the frames
//! the state hands out and answers (or misbehaves).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_net::{ConnConfig, ConnState, NetError, Outcome};
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, frame};

fn cfg(max_in_flight: usize) -> ConnConfig {
    ConnConfig {
        client_id: Some(KStr::from_static("test")),
        max_in_flight,
        request_timeout: Duration::from_millis(500),
        ..Default::default()
    }
}

fn metadata() -> RequestBody {
    RequestBody::Metadata(MetadataRequest::default())
}

/// Reads a transmitted frame like a server: strips the size prefix and decodes it.
fn server_read(chunks: Vec<Bytes>) -> kafka_protocol::Request {
    let all: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    let size = i32::from_be_bytes([all[0], all[1], all[2], all[3]]) as usize;
    assert_eq!(size, all.len() - 4, "size prefix matches the frame");
    frame::decode_request(&Bytes::copy_from_slice(&all[4..])).unwrap()
}

/// A server's answer to `req` with correlation id `cid`.
fn answer(req: &kafka_protocol::Request, cid: i32) -> Bytes {
    let body = match req.api_key() {
        ApiKey::Metadata => ResponseBody::Metadata(MetadataResponse {
            cluster_id: Some(KStr::from_static("c1")),
            ..Default::default()
        }),
        ApiKey::Produce => ResponseBody::Produce(ProduceResponse::default()),
        ApiKey::ApiVersions => ResponseBody::ApiVersions(ApiVersionsResponse::default()),
        other => panic!("unexpected {other:?}"),
    };
    let header = ResponseHeader {
        correlation_id: cid,
        ..Default::default()
    };
    frame::encode_response(&header, &body, req.version())
        .unwrap()
        .into_bytes()
}

fn events(s: &mut ConnState<u32>) -> Vec<(u32, Outcome)> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

#[test]
fn pipelines_one_hundred_requests_in_order() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(100));
    for i in 0..100u32 {
        assert!(s.can_send());
        let cid = s.send(&metadata(), 12, i, t0).unwrap();
        assert_eq!(cid, i as i32);
    }
    assert!(!s.can_send(), "window of 100 is full");
    let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit())
        .map(server_read)
        .collect();
    assert_eq!(sent.len(), 100);
    for (i, req) in sent.iter().enumerate() {
        assert_eq!(req.header.correlation_id, i as i32);
        assert_eq!(req.header.client_id.as_deref(), Some("test"));
        s.handle_frame(answer(req, req.header.correlation_id), t0);
    }
    let ev = events(&mut s);
    assert_eq!(ev.len(), 100);
    for (i, (user, outcome)) in ev.into_iter().enumerate() {
        assert_eq!(user, i as u32);
        let resp = outcome.unwrap().unwrap();
        assert_eq!(resp.header.correlation_id, i as i32);
        assert!(
            matches!(resp.body, ResponseBody::Metadata(m) if m.cluster_id.as_deref() == Some("c1"))
        );
    }
    assert_eq!(s.in_flight(), 0);
    assert!(!s.is_closed());
}

#[test]
fn out_of_order_response_poisons_and_fails_everything() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    for i in 0..3 {
        s.send(&metadata(), 9, i, t0).unwrap();
    }
    let reqs: Vec<_> = std::iter::from_fn(|| s.poll_transmit())
        .map(server_read)
        .collect();
    // Answer the second request first.
    s.handle_frame(answer(&reqs[1], 1), t0);
    let ev = events(&mut s);
    assert_eq!(ev.len(), 3);
    for (_, outcome) in &ev {
        assert!(
            matches!(
                outcome,
                Err(NetError::CorrelationMismatch {
                    expected: 0,
                    got: 1
                })
            ),
            "{outcome:?}"
        );
    }
    assert!(s.is_closed());
    // Later sends fail with the original error, wrapped.
    let (user, err) = s.send(&metadata(), 9, 99, t0).unwrap_err();
    assert_eq!(user, 99);
    assert!(
        matches!(err, NetError::Poisoned(inner) if matches!(*inner, NetError::CorrelationMismatch { .. }))
    );
}

#[test]
fn unknown_correlation_id_and_unsolicited_response_poison() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    s.send(&metadata(), 9, 1, t0).unwrap();
    let req = server_read(s.poll_transmit().unwrap());
    s.handle_frame(answer(&req, 12345), t0);
    assert!(matches!(
        events(&mut s)[..],
        [(
            1,
            Err(NetError::CorrelationMismatch {
                expected: 0,
                got: 12345
            })
        )]
    ));

    let mut s: ConnState<u32> = ConnState::new(cfg(5));
    s.handle_frame(answer(&req, 0), t0);
    assert!(matches!(s.error(), Some(NetError::UnexpectedResponse(0))));
}

#[test]
fn a_timed_out_request_fails_the_connection() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    s.send(&metadata(), 9, 1, t0).unwrap();
    s.send(&metadata(), 9, 2, t0 + Duration::from_millis(100))
        .unwrap();
    assert_eq!(s.poll_timeout(), Some(t0 + Duration::from_millis(500)));
    s.handle_timeout(t0 + Duration::from_millis(499));
    assert!(events(&mut s).is_empty(), "nothing times out early");
    s.handle_timeout(t0 + Duration::from_millis(500));
    let ev = events(&mut s);
    assert_eq!(ev.len(), 2, "every request in flight fails");
    for (_, o) in ev {
        assert!(
            matches!(
                o,
                Err(NetError::Timeout {
                    api: ApiKey::Metadata,
                    correlation_id: 0,
                    ..
                })
            ),
            "{o:?}"
        );
    }
    assert!(s.is_closed());
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn acks_zero_completes_when_written_and_needs_no_response() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    let produce = |acks| {
        RequestBody::Produce(ProduceRequest {
            acks,
            timeout_ms: 100,
            ..Default::default()
        })
    };
    s.send(&produce(0), 7, 1, t0).unwrap();
    s.send(&metadata(), 9, 2, t0).unwrap();
    assert!(
        events(&mut s).is_empty(),
        "not complete before it is written"
    );
    let first = s.poll_transmit().unwrap();
    let ev = events(&mut s);
    assert!(matches!(ev[..], [(1, Ok(None))]), "{ev:?}");
    let req = server_read(s.poll_transmit().unwrap());
    assert_eq!(server_read(first).api_key(), ApiKey::Produce);
    // The metadata response follows directly; no produce response ever comes.
    s.handle_frame(answer(&req, req.header.correlation_id), t0);
    assert!(matches!(events(&mut s)[..], [(2, Ok(Some(_)))]));
}

#[test]
fn the_window_bounds_requests_in_flight() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(2));
    s.send(&metadata(), 9, 1, t0).unwrap();
    s.send(&metadata(), 9, 2, t0).unwrap();
    assert!(!s.can_send());
    assert!(s.send(&metadata(), 9, 3, t0).is_err());
    let r = server_read(s.poll_transmit().unwrap());
    s.handle_frame(answer(&r, 0), t0);
    assert!(s.can_send(), "room again after one answer");
}

#[test]
fn apiversions_answer_in_v0_to_a_newer_request_is_read() {
    // A broker that does not know ApiVersions v4 answers with a v0 body and error 35.
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    s.send(
        &RequestBody::ApiVersions(ApiVersionsRequest::default()),
        4,
        1,
        t0,
    )
    .unwrap();
    let _ = s.poll_transmit().unwrap();
    let body = ResponseBody::ApiVersions(ApiVersionsResponse {
        error_code: 35,
        api_keys: vec![api_versions_response::ApiVersion {
            api_key: 18,
            min_version: 0,
            max_version: 2,
            ..Default::default()
        }],
        ..Default::default()
    });
    let bytes = frame::encode_response(
        &ResponseHeader {
            correlation_id: 0,
            ..Default::default()
        },
        &body,
        0,
    )
    .unwrap()
    .into_bytes();
    s.handle_frame(bytes, t0);
    let ev = events(&mut s);
    let Some((1, Ok(Some(resp)))) = ev.into_iter().next() else {
        panic!("no response")
    };
    let ResponseBody::ApiVersions(av) = resp.body else {
        panic!()
    };
    assert_eq!(av.error_code, 35);
    assert_eq!(av.api_keys[0].max_version, 2);
    assert!(!s.is_closed());
}

#[test]
fn undecodable_response_fails_it_and_closes() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    s.send(&metadata(), 9, 1, t0).unwrap();
    s.send(&metadata(), 9, 2, t0).unwrap();
    // Correlation id 0, then garbage.
    s.handle_frame(Bytes::from_static(&[0, 0, 0, 0, 0xff]), t0);
    let ev = events(&mut s);
    assert!(matches!(
        ev[0],
        (
            1,
            Err(NetError::Decode {
                api: ApiKey::Metadata,
                version: 9,
                ..
            })
        )
    ));
    assert!(matches!(ev[1], (2, Err(NetError::Decode { .. }))));
    assert!(s.is_closed());
}

#[test]
fn close_fails_in_flight_with_closed() {
    let t0 = Instant::now();
    let mut s = ConnState::new(cfg(5));
    s.send(&metadata(), 9, 1, t0).unwrap();
    s.close(NetError::Closed(Some("bye".into())));
    assert!(matches!(&events(&mut s)[..], [(1, Err(NetError::Closed(Some(r))))] if r == "bye"));
    assert!(
        s.poll_transmit().is_none(),
        "nothing is written after close"
    );
}

/// A Metadata answer with `throttle_time_ms` at `version`: from v6 the broker answers before it
/// throttles (KIP-219), so the connection holds back new requests for that long; before v6 the
/// broker has already waited, and the client does not wait again.
#[test]
fn a_throttled_answer_holds_back_new_requests_from_the_kip_219_versions() {
    let t0 = Instant::now();
    for (version, held) in [(12, true), (6, true), (5, false)] {
        let mut s = ConnState::new(cfg(5));
        let cid = s.send(&metadata(), version, 1u32, t0).unwrap();
        let req = server_read(s.poll_transmit().unwrap());
        let body = ResponseBody::Metadata(MetadataResponse {
            throttle_time_ms: 700,
            ..Default::default()
        });
        let header = ResponseHeader {
            correlation_id: cid,
            ..Default::default()
        };
        let frame = frame::encode_response(&header, &body, req.version())
            .unwrap()
            .into_bytes();
        s.handle_frame(frame, t0);
        assert_eq!(events(&mut s).len(), 1);
        let until = s.throttled_until(t0);
        if held {
            assert_eq!(until, Some(t0 + Duration::from_millis(700)), "v{version}");
            assert_eq!(s.throttled_until(t0 + Duration::from_millis(700)), None);
        } else {
            assert_eq!(until, None, "v{version}");
        }
    }
    assert!(kafka_net::conn_state::client_throttles(ApiKey::Produce, 6));
    assert!(!kafka_net::conn_state::client_throttles(ApiKey::Produce, 5));
    assert!(!kafka_net::conn_state::client_throttles(ApiKey::Fetch, 7));
    assert!(kafka_net::conn_state::client_throttles(
        ApiKey::DescribeClientQuotas,
        0
    ));
}
