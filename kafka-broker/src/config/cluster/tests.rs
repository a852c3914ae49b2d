use super::*;
use crate::config::BrokerConfig;

/// A config from properties text (no unknown keys allowed).
fn from(text: &str) -> BrokerConfig {
    let mut c = BrokerConfig::default();
    let unknown = c.apply_properties(text).unwrap();
    assert!(unknown.is_empty(), "unknown keys: {unknown:?}");
    c
}

/// The message of a failed validation; asserts every `needle` is in it.
fn refused(c: &BrokerConfig, needles: &[&str]) -> String {
    let e = c
        .validate()
        .expect_err("validation should fail")
        .to_string();
    for n in needles {
        assert!(e.contains(n), "expected {n:?} in: {e}");
    }
    e
}

/// The message of a refused key; asserts every `needle` is in it.
fn apply_refused(key: &str, value: &str, needles: &[&str]) {
    let mut c = BrokerConfig::default();
    let e = c
        .apply(key, value)
        .expect_err("the value should be refused")
        .to_string();
    for n in needles {
        assert!(e.contains(n), "{key}={value}: expected {n:?} in: {e}");
    }
}

const NODE1: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../config/cluster/node1.properties"
));
const NODE2: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../config/cluster/node2.properties"
));
const NODE3: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../config/cluster/node3.properties"
));

/// A valid combined node 1 with `changes` (properties text) applied after.
fn node1_with(changes: &str) -> BrokerConfig {
    let mut c = from(NODE1);
    c.apply_properties(changes).unwrap();
    c
}

/// A valid broker-only node 4 of the shipped cluster.
const BROKER4: &str = "process.roles=broker\nnode.id=4\n\
    controller.quorum.voters=1@127.0.0.1:19301,2@127.0.0.1:19302,3@127.0.0.1:19303\n\
    listeners=PLAINTEXT://127.0.0.1:19204\ncontroller.listener.names=CONTROLLER\n";

/// A valid controller-only node 1.
const CONTROLLER1: &str = "process.roles=controller\nnode.id=1\n\
    controller.quorum.voters=1@127.0.0.1:19301,2@127.0.0.1:19302,3@127.0.0.1:19303\n\
    listeners=CONTROLLER://127.0.0.1:19301\ncontroller.listener.names=CONTROLLER\n";

fn listener(name: &str, host: &str, port: u16) -> ListenerConfig {
    ListenerConfig {
        name: name.into(),
        host: host.into(),
        port,
    }
}

#[test]
fn zero_config_and_single_node_configs_validate_as_before() {
    let c = BrokerConfig::default();
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:9092");
    assert_eq!(c.network.advertised_addr(), "127.0.0.1:9092");
    assert_eq!(c.quorum.roles, None);
    assert_eq!(
        c.network.listeners,
        [listener("PLAINTEXT", "127.0.0.1", 9092)]
    );
    assert_eq!(c.network.client_listener(), c.network.listeners.first());
    assert_eq!(
        c.network.effective_advertised_listeners(),
        c.network.listeners
    );
    assert_eq!(
        c.network.effective_inter_broker_listener_name().as_deref(),
        Some("PLAINTEXT")
    );

    let c = from("listeners=PLAINTEXT://127.0.0.1:19092\n");
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:19092");
    assert_eq!(c.network.advertised, None);

    // Today's server.properties: the ignored-before keys are taken, and it still validates.
    let c = from(
        "node.id=3\nlisteners=PLAINTEXT://127.0.0.1:19092\nadvertised.listeners=PLAINTEXT://kafka.example:29092\n\
         log.dirs=/tmp/a\nnum.partitions=3\nmin.insync.replicas=1\noffsets.topic.replication.factor=1\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL\ninter.broker.listener.name=PLAINTEXT\n",
    );
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:19092");
    assert_eq!(c.network.advertised.as_deref(), Some("kafka.example:29092"));
    assert_eq!(c.network.advertised_addr(), "kafka.example:29092");
    assert_eq!(c.group.offsets_topic_replication_factor, 1);

    // A bare host:port, and the `listen` alias, as before.
    for key in ["listeners", "listen"] {
        let mut c = BrokerConfig::default();
        c.apply(key, "0.0.0.0:9093").unwrap();
        c.validate().unwrap();
        assert_eq!(c.network.listen, "0.0.0.0:9093");
        assert_eq!(
            c.network.listeners,
            [listener("PLAINTEXT", "0.0.0.0", 9093)]
        );
    }
    let mut c = BrokerConfig::default();
    c.apply("advertised.listeners", "kafka.example:1").unwrap();
    c.validate().unwrap();
    assert_eq!(c.network.advertised.as_deref(), Some("kafka.example:1"));
}

#[test]
fn listeners_parse_with_kafkas_forms() {
    let c = from("listeners=plaintext://[::1]:9092, INTERNAL://:9093 ,\n");
    assert_eq!(
        c.network.listeners,
        [
            listener("PLAINTEXT", "::1", 9092),
            listener("INTERNAL", "0.0.0.0", 9093)
        ]
    );
    // The client listener (the first) keeps its brackets for bind.
    assert_eq!(c.network.listen, "[::1]:9092");
    assert_eq!(c.network.listeners[0].to_string(), "PLAINTEXT://[::1]:9092");
    for (v, needle) in [
        ("", "listeners is empty"),
        ("PLAINTEXT://127.0.0.1", "no port"),
        ("PLAINTEXT://127.0.0.1:99999", "the port"),
        ("PLAINTEXT://127.0.0.1:x", "the port"),
        ("PLAINTEXT://::1:9092", "brackets"),
        ("PLAINTEXT://[::1:9092", "not closed"),
        ("PLAINTEXT://[host]:9092", "IPv6"),
        ("PLAIN TEXT://h:1", "listener name"),
        ("://h:1", "listener name is empty"),
        ("PLAINTEXT://h/x:1", "the host"),
    ] {
        apply_refused("listeners", v, &["listeners", needle]);
    }
    apply_refused(
        "advertised.listeners",
        "PLAINTEXT://:9092",
        &["advertised.listeners", "no host"],
    );
}

#[test]
fn every_cluster_key_parses() {
    let c = from(
        "process.roles=controller , broker\nnode.id=2\n\
         controller.quorum.voters=1@127.0.0.1:19301, 2@[::1]:19302,3@kafka-3.example:19303\n\
         controller.listener.names=controller,Quorum\n\
         listener.security.protocol.map=plaintext:plaintext,controller:PLAINTEXT,quorum:ssl\n\
         listeners=PLAINTEXT://127.0.0.1:19202,CONTROLLER://[::1]:19302\n\
         advertised.listeners=PLAINTEXT://kafka-2.example:19202\n\
         inter.broker.listener.name=plaintext\n\
         broker.heartbeat.interval.ms=500\nbroker.session.timeout.ms=3000\n\
         controller.quorum.election.timeout.ms=1500\ncontroller.quorum.fetch.timeout.ms=2500\n\
         broker.rack=rack-a\nmin.insync.replicas=2\noffsets.topic.replication.factor=5\n\
         unclean.leader.election.enable=true\ndefault.replication.factor=3\n",
    );
    assert_eq!(
        c.quorum.roles,
        Some(Roles {
            broker: true,
            controller: true
        })
    );
    assert!(c.quorum.roles.is_some_and(|r| r.combined()));
    assert_eq!(
        c.quorum.voters,
        [
            Voter {
                id: 1,
                host: "127.0.0.1".into(),
                port: 19301
            },
            Voter {
                id: 2,
                host: "::1".into(),
                port: 19302
            },
            Voter {
                id: 3,
                host: "kafka-3.example".into(),
                port: 19303
            },
        ]
    );
    assert_eq!(
        c.quorum.voter(2).map(Voter::addr).as_deref(),
        Some("[::1]:19302")
    );
    assert_eq!(
        c.network.controller_listener_names,
        ["CONTROLLER", "QUORUM"]
    );
    let map = c.network.listener_security_protocol_map.clone().unwrap();
    assert_eq!(map.len(), 3);
    assert_eq!(map["PLAINTEXT"], SecurityProtocol::Plaintext);
    assert_eq!(map["CONTROLLER"], SecurityProtocol::Plaintext);
    assert_eq!(map["QUORUM"], SecurityProtocol::Ssl);
    assert_eq!(
        c.network.inter_broker_listener_name.as_deref(),
        Some("PLAINTEXT")
    );
    assert_eq!(
        c.network.advertised_listeners,
        Some(vec![listener("PLAINTEXT", "kafka-2.example", 19202)])
    );
    assert_eq!(c.network.listen, "127.0.0.1:19202");
    assert_eq!(
        c.network.advertised.as_deref(),
        Some("kafka-2.example:19202")
    );
    assert_eq!(
        c.network
            .controller_listener()
            .map(ListenerConfig::addr)
            .as_deref(),
        Some("[::1]:19302")
    );
    assert_eq!(c.quorum.broker_heartbeat_interval_ms, 500);
    assert_eq!(c.quorum.broker_session_timeout_ms, 3000);
    assert_eq!(c.quorum.election_timeout_ms, 1500);
    assert_eq!(c.quorum.fetch_timeout_ms, 2500);
    assert_eq!(c.network.rack.as_deref(), Some("rack-a"));
    assert_eq!(c.log.min_insync_replicas, 2);
    assert_eq!(c.group.offsets_topic_replication_factor, 5);
    assert!(c.log.unclean_leader_election_enable);
    assert_eq!(c.topics.default_replication_factor, 3);
    // QUORUM (SSL) is a controller listener that is not in listeners: invalid, but parsed.
    refused(&c, &["controller.listener.names", "QUORUM"]);

    // Kafka's defaults.
    let d = BrokerConfig::default();
    assert_eq!(d.quorum.broker_heartbeat_interval_ms, 2000);
    assert_eq!(d.quorum.broker_session_timeout_ms, 9000);
    assert_eq!(d.quorum.election_timeout_ms, 1000);
    assert_eq!(d.quorum.fetch_timeout_ms, 2000);
    assert_eq!(d.log.min_insync_replicas, 1);
    assert_eq!(d.group.offsets_topic_replication_factor, 3);
    assert_eq!(d.network.rack, None);
    assert!(!d.log.unclean_leader_election_enable);
    assert!(d.quorum.voters.is_empty() && d.network.controller_listener_names.is_empty());
    assert_eq!(d.network.listener_security_protocol_map, None);
    assert_eq!(d.network.inter_broker_listener_name, None);

    // Roles: each alone, and empty is no roles.
    let mut c = BrokerConfig::default();
    c.apply("process.roles", "broker").unwrap();
    assert_eq!(
        c.quorum.roles,
        Some(Roles {
            broker: true,
            controller: false
        })
    );
    c.apply("process.roles", "controller").unwrap();
    assert_eq!(
        c.quorum.roles,
        Some(Roles {
            broker: false,
            controller: true
        })
    );
    c.apply("process.roles", "").unwrap();
    assert_eq!(c.quorum.roles, None);
    c.apply("broker.rack", "").unwrap();
    assert_eq!(c.network.rack, None);
}

#[test]
fn bad_values_of_cluster_keys_name_the_key() {
    apply_refused(
        "process.roles",
        "broker,zookeeper",
        &["process.roles", "zookeeper"],
    );
    apply_refused(
        "process.roles",
        "broker,broker",
        &["process.roles", "twice"],
    );
    apply_refused("process.roles", "Broker", &["process.roles"]);
    for (v, needle) in [
        ("1@127.0.0.1", "\"1@127.0.0.1\""),
        ("127.0.0.1:19301", "no '@'"),
        ("x@127.0.0.1:19301", "\"x@127.0.0.1:19301\""),
        ("-1@127.0.0.1:19301", "negative"),
        ("1@:19301", "no host"),
        ("1@h:0", "port 0"),
        ("1@h:65536", "\"1@h:65536\""),
        ("1@h:1,2@h:2,1@g:3", "voter id 1 appears twice"),
    ] {
        apply_refused(
            "controller.quorum.voters",
            v,
            &["controller.quorum.voters", needle],
        );
    }
    apply_refused(
        "controller.listener.names",
        "CONTROLLER,controller",
        &["controller.listener.names", "twice"],
    );
    apply_refused(
        "listener.security.protocol.map",
        "PLAINTEXT:TLS",
        &[
            "listener.security.protocol.map",
            "invalid security protocol",
        ],
    );
    apply_refused(
        "listener.security.protocol.map",
        "PLAINTEXT",
        &[
            "listener.security.protocol.map",
            "LISTENER_NAME:SECURITY_PROTOCOL",
        ],
    );
    apply_refused(
        "listener.security.protocol.map",
        "A:PLAINTEXT,a:SSL",
        &["listener.security.protocol.map", "twice"],
    );
    apply_refused(
        "inter.broker.listener.name",
        "A B",
        &["inter.broker.listener.name"],
    );
    for key in [
        "broker.heartbeat.interval.ms",
        "broker.session.timeout.ms",
        "controller.quorum.election.timeout.ms",
        "controller.quorum.fetch.timeout.ms",
        "min.insync.replicas",
        "offsets.topic.replication.factor",
    ] {
        apply_refused(key, "0", &[key, "positive"]);
        apply_refused(key, "x", &[key]);
    }
    apply_refused(
        "unclean.leader.election.enable",
        "yes",
        &["unclean.leader.election.enable"],
    );
}

#[test]
fn the_shipped_cluster_files_parse_and_validate() {
    for (n, text) in [(1, NODE1), (2, NODE2), (3, NODE3)] {
        let c = from(text);
        c.validate().unwrap();
        assert_eq!(c.server.node_id, n);
        assert!(c.quorum.roles.is_some_and(|r| r.combined()));
        assert_eq!(
            c.quorum.voters.iter().map(|v| v.id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(c.quorum.voter(n).map(|v| v.port), Some(19300 + n as u16));
        assert_eq!(c.network.listen, format!("127.0.0.1:{}", 19200 + n));
        assert_eq!(
            c.network.advertised_addr(),
            format!("127.0.0.1:{}", 19200 + n)
        );
        assert_eq!(
            c.network.controller_listener(),
            Some(&listener("CONTROLLER", "127.0.0.1", 19300 + n as u16))
        );
        assert_eq!(
            c.network.client_listener(),
            Some(&listener("PLAINTEXT", "127.0.0.1", 19200 + n as u16))
        );
        assert_eq!(
            c.server.data_dir,
            std::path::PathBuf::from(format!("./data/node{n}"))
        );
        assert_eq!(c.topics.default_replication_factor, 3);
        assert_eq!(c.log.min_insync_replicas, 2);
        assert_eq!(c.group.offsets_topic_replication_factor, 3);
        assert_eq!(
            c.security_protocol("CONTROLLER"),
            Some(SecurityProtocol::Plaintext)
        );
    }
}

#[test]
fn other_node_shapes_validate() {
    // Broker only: the controller listener's protocol defaults to PLAINTEXT in KRaft mode.
    let c = from(BROKER4);
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:19204");
    assert_eq!(c.network.controller_listener(), None);
    assert_eq!(
        c.security_protocol("CONTROLLER"),
        Some(SecurityProtocol::Plaintext)
    );
    // Controller only: it listens on its controller listener; no client listener.
    let c = from(CONTROLLER1);
    c.validate().unwrap();
    assert_eq!(c.network.client_listener(), None);
    assert_eq!(c.network.listen, "127.0.0.1:19301");
    assert!(c.network.effective_advertised_listeners().is_empty());
    // Keys in any order: controller.listener.names after listeners still picks the client one.
    let c = from(
        "listeners=CONTROLLER://127.0.0.1:19301,PLAINTEXT://127.0.0.1:19201\nnode.id=1\n\
         process.roles=broker,controller\ncontroller.quorum.voters=1@127.0.0.1:19301\n\
         controller.listener.names=CONTROLLER\n",
    );
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:19201");
    // inter.broker.listener.name picks the client listener among several.
    let c = from(
        "listeners=INTERNAL://127.0.0.1:1,EXTERNAL://127.0.0.1:2\n\
         listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT\n\
         advertised.listeners=INTERNAL://a.example:1,EXTERNAL://b.example:2\n\
         inter.broker.listener.name=EXTERNAL\n",
    );
    c.validate().unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:2");
    assert_eq!(c.network.advertised.as_deref(), Some("b.example:2"));
    // An IPv4 and an IPv6 listener may share a port.
    from(
        "listeners=PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,V6:PLAINTEXT\n",
    )
    .validate()
    .unwrap();
}

#[test]
fn the_kraft_default_protocol_map() {
    // Without process.roles there is no controller default: a CONTROLLER listener needs a
    // mapping (and controller.listener.names needs process.roles anyway).
    let c = from("listeners=CONTROLLER://127.0.0.1:1\n");
    assert_eq!(c.security_protocol("CONTROLLER"), None);
    refused(&c, &["listener.security.protocol.map", "CONTROLLER"]);
    assert_eq!(
        c.security_protocol("SASL_SSL"),
        Some(SecurityProtocol::SaslSsl)
    );
    // With process.roles, an explicit map gets no additions.
    let c = node1_with("listener.security.protocol.map=PLAINTEXT:PLAINTEXT\n");
    assert_eq!(c.security_protocol("CONTROLLER"), None);
    refused(&c, &["listener.security.protocol.map", "CONTROLLER"]);
    // Nor does the default map when a listener is named for SSL or SASL.
    let mut c = from(BROKER4);
    c.apply("listeners", "SSL://127.0.0.1:19204").unwrap();
    assert_eq!(c.security_protocol("CONTROLLER"), None);
}

#[test]
fn invalid_combinations_are_refused_naming_the_key() {
    // Cluster keys without process.roles.
    refused(
        &from("controller.quorum.voters=1@127.0.0.1:19301\n"),
        &["controller.quorum.voters", "process.roles", "ZooKeeper"],
    );
    refused(
        &from("controller.listener.names=CONTROLLER\n"),
        &["controller.listener.names", "process.roles"],
    );
    // process.roles without the quorum.
    let mut c = from(NODE1);
    c.quorum.voters.clear();
    refused(&c, &["controller.quorum.voters"]);
    refused(
        &node1_with("controller.listener.names=\n"),
        &["controller.listener.names", "at least one"],
    );
    refused(&node1_with("node.id=-1\n"), &["node.id"]);
    // A controller must be a voter, with its controller listener, on the voter's port.
    refused(
        &node1_with("node.id=4\n"),
        &["controller.quorum.voters", "node id 4"],
    );
    refused(
        &node1_with("listeners=PLAINTEXT://127.0.0.1:19201\n"),
        &["controller.listener.names", "listeners", "CONTROLLER"],
    );
    refused(
        &node1_with("listeners=PLAINTEXT://127.0.0.1:19201,CONTROLLER://127.0.0.1:19399\n"),
        &["controller.quorum.voters", "19301", "19399"],
    );
    // A broker-only node: not a voter, no controller listener of its own.
    let mut c = from(BROKER4);
    c.apply("node.id", "3").unwrap();
    refused(
        &c,
        &[
            "controller.quorum.voters",
            "just the 'broker' role",
            "node id 3",
        ],
    );
    let mut c = from(BROKER4);
    c.apply(
        "listeners",
        "PLAINTEXT://127.0.0.1:19204,CONTROLLER://127.0.0.1:19304",
    )
    .unwrap();
    refused(
        &c,
        &["controller.listener.names", "listeners", "broker role"],
    );
    let mut c = from(BROKER4);
    c.apply("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT")
        .unwrap();
    refused(
        &c,
        &[
            "listener.security.protocol.map",
            "CONTROLLER",
            "controller.listener.names",
        ],
    );
    // A controller-only node: controller listeners only, nothing advertised.
    let mut c = from(CONTROLLER1);
    c.apply(
        "listeners",
        "CONTROLLER://127.0.0.1:19301,PLAINTEXT://127.0.0.1:19201",
    )
    .unwrap();
    refused(&c, &["listeners", "process.roles=controller", "PLAINTEXT"]);
    let mut c = from(CONTROLLER1);
    c.apply("advertised.listeners", "CONTROLLER://127.0.0.1:19301")
        .unwrap();
    refused(&c, &["advertised.listeners", "process.roles=controller"]);
    let mut c = from(CONTROLLER1);
    c.apply("inter.broker.listener.name", "CONTROLLER").unwrap();
    refused(
        &c,
        &["inter.broker.listener.name", "controller.listener.names"],
    );
    // Brokers advertise no controller listener, and no wildcard address.
    refused(
        &node1_with(
            "advertised.listeners=PLAINTEXT://127.0.0.1:19201,CONTROLLER://127.0.0.1:19301\n",
        ),
        &["advertised.listeners", "controller listeners"],
    );
    let mut c = node1_with("listeners=PLAINTEXT://:19201,CONTROLLER://127.0.0.1:19301\n");
    c.network.advertised_listeners = None;
    refused(&c, &["advertised.listeners", "0.0.0.0"]);
    refused(
        &from("advertised.listeners=PLAINTEXT://0.0.0.0:9092\n"),
        &["advertised.listeners", "0.0.0.0"],
    );
    refused(
        &from("advertised.listeners=OTHER://a.example:9092\ninter.broker.listener.name=OTHER\n"),
        &["inter.broker.listener.name", "listeners"],
    );
    refused(
        &from(
            "listeners=A://127.0.0.1:1\nadvertised.listeners=A://a.example:1,B://b.example:2\n\
             listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\n",
        ),
        &["advertised.listeners", "subset", "B://"],
    );
    // inter.broker.listener.name: a listener, not a controller listener, advertised.
    refused(
        &node1_with("inter.broker.listener.name=INTERNAL\n"),
        &["inter.broker.listener.name=INTERNAL", "listeners"],
    );
    refused(
        &node1_with("inter.broker.listener.name=controller\n"),
        &[
            "inter.broker.listener.name=CONTROLLER",
            "controller listener",
        ],
    );
    refused(
        &from(
            "listeners=A://127.0.0.1:1,B://127.0.0.1:2\nadvertised.listeners=A://a.example:1\n\
             listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\ninter.broker.listener.name=B\n",
        ),
        &["inter.broker.listener.name (B)", "advertised.listeners"],
    );
    // Listener names and ports unique.
    refused(
        &from("listeners=PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2\n"),
        &["listeners", "PLAINTEXT", "different name"],
    );
    refused(
        &from(
            "listeners=PLAINTEXT://127.0.0.1:9092,OTHER://localhost:9092\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT\n",
        ),
        &["listeners", "different port"],
    );
    let mut c = BrokerConfig::default();
    c.network.listeners.clear();
    refused(&c, &["listeners is empty"]);
    // Security protocols: every listener mapped; links between nodes PLAINTEXT.
    refused(
        &from("listeners=EXTERNAL://127.0.0.1:9092\n"),
        &["listener.security.protocol.map", "EXTERNAL"],
    );
    assert!(from("listeners=SSL://127.0.0.1:9093\n").validate().is_ok());
    // Links between nodes may be secured, with their mechanism set.
    refused(
        &node1_with("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL\n"),
        &[
            "sasl.mechanism.controller.protocol",
            "CONTROLLER",
            "SASL_SSL",
        ],
    );
    // Numbers.
    refused(
        &node1_with("broker.heartbeat.interval.ms=9000\n"),
        &["broker.session.timeout.ms", "broker.heartbeat.interval.ms"],
    );
    let c = BrokerConfig {
        log: crate::config::LogDefaults {
            min_insync_replicas: 0,
            ..Default::default()
        },
        ..BrokerConfig::default()
    };
    refused(&c, &["min.insync.replicas"]);
    let c = BrokerConfig {
        group: crate::config::GroupConfig {
            offsets_topic_replication_factor: 0,
            ..Default::default()
        },
        ..BrokerConfig::default()
    };
    refused(&c, &["offsets.topic.replication.factor"]);
    let mut c = BrokerConfig::default();
    c.apply("group.min.session.timeout.ms", "60000").unwrap();
    c.apply("group.max.session.timeout.ms", "30000").unwrap();
    refused(
        &c,
        &[
            "group.min.session.timeout.ms",
            "group.max.session.timeout.ms",
        ],
    );
    let mut c = BrokerConfig::default();
    c.apply("replica.lag.time.max.ms", "400").unwrap();
    refused(
        &c,
        &["replica.fetch.wait.max.ms", "replica.lag.time.max.ms"],
    );
}

#[test]
fn the_command_line_addresses_set_the_client_listener() {
    // On a cluster node `--listen` moves the client listener only.
    let mut c = from(NODE2);
    c.network.set_client_listener("127.0.0.1:0").unwrap();
    assert_eq!(c.network.listen, "127.0.0.1:0");
    assert_eq!(
        c.network.listeners,
        [
            listener("PLAINTEXT", "127.0.0.1", 0),
            listener("CONTROLLER", "127.0.0.1", 19302)
        ]
    );
    c.network
        .set_client_advertised("kafka-2.example:9092")
        .unwrap();
    assert_eq!(
        c.network.advertised.as_deref(),
        Some("kafka-2.example:9092")
    );
    assert_eq!(
        c.network.advertised_listeners,
        Some(vec![listener("PLAINTEXT", "kafka-2.example", 9092)])
    );
    c.validate().unwrap();
    // On a single node as before, a PLAINTEXT:// prefix accepted.
    let mut c = BrokerConfig::default();
    c.network
        .set_client_listener("PLAINTEXT://[::1]:0")
        .unwrap();
    assert_eq!(c.network.listen, "[::1]:0");
    c.network.set_client_advertised("a.example:1").unwrap();
    assert_eq!(c.network.advertised_addr(), "a.example:1");
    c.validate().unwrap();
    assert!(c.network.set_client_listener("nonsense").is_err());
    assert!(c.network.set_client_listener("a:1,b:2").is_err());
    // A controller-only node has no client listener: `--listen` is the whole list.
    let mut c = from(CONTROLLER1);
    c.network.set_client_listener("127.0.0.1:5").unwrap();
    assert_eq!(c.network.listeners, [listener("PLAINTEXT", "127.0.0.1", 5)]);
}
