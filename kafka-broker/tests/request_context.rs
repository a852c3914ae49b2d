//! The request context over a real socket: what a connection is (its peer) and what its
//! requests say (the client id) reach the handlers, after the client announced its software
//! in ApiVersions v3; a group member shows them in DescribeGroups.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_broker::BrokerConfig;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn call(
    sock: &mut TcpStream,
    client_id: &'static str,
    version: i16,
    corr: i32,
    body: RequestBody,
) -> ResponseBody {
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: corr,
        client_id: Some(KStr::from_static(client_id)),
        ..Default::default()
    };
    let f = frame::encode_request(&header, &body).unwrap().into_bytes();
    sock.write_all(&(f.len() as i32).to_be_bytes())
        .await
        .unwrap();
    sock.write_all(&f).await.unwrap();
    let mut size = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), sock.read_exact(&mut size))
        .await
        .expect("no answer")
        .unwrap();
    let mut buf = BytesMut::zeroed(i32::from_be_bytes(size) as usize);
    sock.read_exact(&mut buf).await.unwrap();
    let resp = frame::decode_response(&Bytes::from(buf), key, version).unwrap();
    assert_eq!(resp.header.correlation_id, corr);
    resp.body
}

#[tokio::test]
async fn a_group_member_shows_the_client_id_and_host_of_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    config
        .apply("group.initial.rebalance.delay.ms", "0")
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let broker = tokio::spawn(async move {
        kafka_broker::run(listener, config, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap();
    });

    let mut sock = TcpStream::connect(addr).await.unwrap();
    let hello = RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: KStr::from_static("ctx-test-client"),
        client_software_version: KStr::from_static("1.2.3"),
        ..Default::default()
    });
    let ResponseBody::ApiVersions(v) = call(&mut sock, "ctx-test", 3, 1, hello).await else {
        panic!()
    };
    assert_eq!(v.error_code, 0);

    // JoinGroup v3: no member id round trip; the rebalance completes at once.
    let join = RequestBody::JoinGroup(Box::new(JoinGroupRequest {
        group_id: KStr::from_static("ctx-group"),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: KStr::from_static("consumer"),
        protocols: vec![JoinGroupRequestProtocol {
            name: KStr::from_static("range"),
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::JoinGroup(j) = call(&mut sock, "ctx-member", 3, 2, join).await else {
        panic!()
    };
    assert_eq!(j.error_code, 0);

    // Asked by another client on another connection: the member keeps what its own
    // connection and request said.
    let mut admin = TcpStream::connect(addr).await.unwrap();
    let describe = RequestBody::DescribeGroups(DescribeGroupsRequest {
        groups: vec![KStr::from_static("ctx-group")],
        ..Default::default()
    });
    let ResponseBody::DescribeGroups(d) = call(&mut admin, "ctx-admin", 5, 1, describe).await
    else {
        panic!()
    };
    let members = &d.groups[0].members;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].member_id, j.member_id);
    assert_eq!(members[0].client_id, "ctx-member");
    assert_eq!(members[0].client_host, "/127.0.0.1");

    drop((sock, admin));
    let _ = stop_tx.send(());
    tokio::time::timeout(Duration::from_secs(35), broker)
        .await
        .expect("the broker did not shut down")
        .unwrap();
}
