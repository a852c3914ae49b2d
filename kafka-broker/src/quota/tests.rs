//! The quota module against Kafka's rules: precedence of every level, defaults, removal,
//! AlterClientQuotas checks and records, throttling that holds a producer to its quota, the
//! request-time quota, and connection-creation rates on a manual clock.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;

use super::*;
use crate::config::QuotaConfig;

const SECOND: i64 = 1_000;

fn named(n: &str) -> EntityName {
    EntityName::named(n)
}

fn user(n: Option<&str>) -> EntityName {
    EntityName::from_option(n)
}

fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> AlterEntry {
    AlterEntry {
        entity: entity
            .iter()
            .map(|(t, n)| ((*t).to_owned(), n.map(str::to_owned)))
            .collect(),
        ops: ops.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
    }
}

// ---- precedence ----------------------------------------------------------------------------

/// Each of Kafka's eight levels, set one after the other from the weakest: every new level
/// takes over, with the usage key Kafka measures under.
#[test]
fn precedence_of_every_level() {
    use EntityName::Default as D;
    use QuotaEntity::*;
    let k = QuotaKey::ProducerByteRate;
    let mut s = QuotaStore::new();
    assert_eq!(s.resolve(k, "alice", "app"), None, "no quota anywhere");
    let both = UsageKey {
        user: Some("alice".into()),
        client_id: Some("app".into()),
    };
    let user_only = UsageKey {
        user: Some("alice".into()),
        client_id: None,
    };
    let client_only = UsageKey {
        user: None,
        client_id: Some("app".into()),
    };
    let levels = [
        (ClientId(D), 8.0, &client_only),
        (ClientId(named("app")), 7.0, &client_only),
        (User(D), 6.0, &user_only),
        (UserClientId(D, D), 5.0, &both),
        (UserClientId(D, named("app")), 4.0, &both),
        (User(named("alice")), 3.0, &user_only),
        (UserClientId(named("alice"), D), 2.0, &both),
        (UserClientId(named("alice"), named("app")), 1.0, &both),
    ];
    for (entity, bound, usage) in &levels {
        s.set(entity, k, Some(*bound)).unwrap();
        let r = s.resolve(k, "alice", "app").unwrap();
        assert_eq!(r.bound, *bound, "{entity}");
        assert_eq!(&r.entity, entity);
        assert_eq!(&r.usage, *usage, "{entity}");
    }
    // Removing from the strongest gives each weaker level back in turn.
    for (i, (entity, _, _)) in levels.iter().enumerate().rev() {
        assert!(s.set(entity, k, None).unwrap());
        let got = s.resolve(k, "alice", "app").map(|r| r.bound);
        let want = i.checked_sub(1).map(|j| levels[j].1);
        assert_eq!(got, want, "after removing {entity}");
    }
    assert!(s.is_empty(), "removal leaves nothing behind");
}

#[test]
fn other_clients_get_the_defaults_and_keys_are_separate() {
    use QuotaEntity::*;
    let mut s = QuotaStore::new();
    s.set(
        &UserClientId(named("alice"), named("app")),
        QuotaKey::ProducerByteRate,
        Some(1.0),
    )
    .unwrap();
    s.set(&User(user(None)), QuotaKey::ProducerByteRate, Some(6.0))
        .unwrap();
    s.set(
        &User(named("alice")),
        QuotaKey::ConsumerByteRate,
        Some(30.0),
    )
    .unwrap();
    // Another client id of alice: the user+client quota is not hers; the default user's is.
    let r = s
        .resolve(QuotaKey::ProducerByteRate, "alice", "other")
        .unwrap();
    assert_eq!((r.bound, r.entity), (6.0, User(EntityName::Default)));
    // Each key resolves on its own: alice's user+client entity has no consumer quota.
    let r = s
        .resolve(QuotaKey::ConsumerByteRate, "alice", "app")
        .unwrap();
    assert_eq!((r.bound, r.entity), (30.0, User(named("alice"))));
    assert_eq!(s.resolve(QuotaKey::ConsumerByteRate, "bob", "app"), None);
    assert_eq!(s.resolve(QuotaKey::RequestPercentage, "alice", "app"), None);
    // An empty client id or user name only ever meets defaults.
    let r = s.resolve(QuotaKey::ProducerByteRate, "", "").unwrap();
    assert_eq!(r.bound, 6.0);
}

// ---- store, alter, records -----------------------------------------------------------------

#[test]
fn set_checks_like_alter() {
    let mut s = QuotaStore::new();
    let ip = QuotaEntity::Ip(named("10.0.0.1"));
    let e = s
        .set(&ip, QuotaKey::ProducerByteRate, Some(1.0))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Invalid configuration key producer_byte_rate"
    );
    let e = s
        .set(
            &QuotaEntity::User(user(None)),
            QuotaKey::ConnectionCreationRate,
            Some(1.0),
        )
        .unwrap_err();
    assert_eq!(e.error_code().0, 42);
    assert!(
        s.set(
            &QuotaEntity::User(named("")),
            QuotaKey::ProducerByteRate,
            Some(1.0)
        )
        .is_err()
    );
    assert!(
        s.set(&ip, QuotaKey::ConnectionCreationRate, Some(2.5))
            .is_err()
    );
    assert!(
        s.set(&ip, QuotaKey::ConnectionCreationRate, Some(20.0))
            .unwrap()
    );
    assert!(
        !s.set(&ip, QuotaKey::ConnectionCreationRate, Some(20.0))
            .unwrap(),
        "the same value changes nothing"
    );
    assert_eq!(
        s.values(&ip),
        vec![(QuotaKey::ConnectionCreationRate, 20.0)]
    );
    assert!(s.set(&ip, QuotaKey::ConnectionCreationRate, None).unwrap());
    assert!(!s.set(&ip, QuotaKey::ConnectionCreationRate, None).unwrap());
    assert!(s.is_empty());
}

/// Kafka's ClientQuotasRequestTest.testAlterClientQuotasRequest, as store operations.
#[test]
fn alter_like_kafka() {
    let mut s = QuotaStore::new();
    let ent = [(USER, Some("user")), (CLIENT_ID, Some("client-id"))];
    let entity = QuotaEntity::UserClientId(named("user"), named("client-id"));
    let alter = |s: &mut QuotaStore, ops: &[(&str, Option<f64>)]| {
        let out = s.alter(&[entry(&ent, ops)]);
        assert_eq!(out.results, vec![Ok(())]);
        for c in &out.changes {
            s.apply(c);
        }
        out.changes.len()
    };
    let pairs = |s: &QuotaStore| s.values(&entity);
    use QuotaKey::*;
    assert_eq!(
        alter(
            &mut s,
            &[
                ("producer_byte_rate", Some(10_000.0)),
                ("consumer_byte_rate", Some(20_000.0))
            ]
        ),
        2
    );
    assert_eq!(
        pairs(&s),
        vec![(ProducerByteRate, 10_000.0), (ConsumerByteRate, 20_000.0)]
    );
    alter(&mut s, &[("producer_byte_rate", Some(15_000.0))]);
    assert_eq!(pairs(&s)[0], (ProducerByteRate, 15_000.0));
    alter(&mut s, &[("producer_byte_rate", None)]);
    assert_eq!(pairs(&s), vec![(ConsumerByteRate, 20_000.0)]);
    // Removing what is not set (even a key Kafka does not know) changes nothing and succeeds.
    assert_eq!(
        alter(&mut s, &[("request_percentage", None), ("bogus", None)]),
        0
    );
    // The same value again: no record.
    assert_eq!(alter(&mut s, &[("consumer_byte_rate", Some(20_000.0))]), 0);
    alter(
        &mut s,
        &[
            ("producer_byte_rate", Some(20_000.0)),
            ("consumer_byte_rate", None),
            ("request_percentage", Some(12.3)),
        ],
    );
    assert_eq!(
        pairs(&s),
        vec![(ProducerByteRate, 20_000.0), (RequestPercentage, 12.3)]
    );
}

#[test]
fn alter_refusals_fail_the_entry_whole() {
    let s = QuotaStore::new();
    let user_a = [(USER, Some("a"))];
    let out = s.alter(&[
        entry(
            &user_a,
            &[
                ("producer_byte_rate", Some(5.0)),
                ("consumer_byte_rate", Some(-1.0)),
            ],
        ),
        entry(&[(USER, Some("b"))], &[("producer_byte_rate", Some(7.0))]),
        entry(
            &[(USER, Some("c"))],
            &[("connection_creation_rate", Some(7.0))],
        ),
        entry(
            &[(IP, Some("1.2.3.4")), (USER, None)],
            &[("connection_creation_rate", Some(7.0))],
        ),
        entry(
            &[(USER, Some("d"))],
            &[
                ("producer_byte_rate", Some(1.0)),
                ("producer_byte_rate", Some(2.0)),
            ],
        ),
        entry(&[], &[("producer_byte_rate", Some(1.0))]),
    ]);
    let messages: Vec<String> = out
        .results
        .iter()
        .map(|r| {
            r.as_ref()
                .map_or_else(ToString::to_string, |()| "ok".into())
        })
        .collect();
    assert_eq!(
        messages[0],
        "Quota consumer_byte_rate must be greater than 0"
    );
    assert_eq!(messages[1], "ok");
    assert_eq!(
        messages[2],
        "Invalid configuration key connection_creation_rate"
    );
    assert!(messages[3].starts_with("Invalid quota entity combination"));
    assert_eq!(
        messages[4],
        "Duplicate quota key producer_byte_rate not updating quota for this entity \
         ClientQuotaEntity(entries={user=d})"
    );
    assert_eq!(messages[5], "Invalid empty client quota entity");
    // Only b's change: a failed on its second operation, so its first is not applied either.
    assert_eq!(
        out.changes,
        vec![QuotaChange {
            entity: QuotaEntity::User(named("b")),
            key: QuotaKey::ProducerByteRate,
            value: Some(7.0),
        }]
    );
}

#[test]
fn a_duplicate_entity_fails_every_entry_of_it() {
    let s = QuotaStore::new();
    let out = s.alter(&[
        entry(
            &[(CLIENT_ID, Some("x"))],
            &[("producer_byte_rate", Some(5.0))],
        ),
        entry(
            &[(CLIENT_ID, Some("x"))],
            &[("consumer_byte_rate", Some(5.0))],
        ),
    ]);
    for r in &out.results {
        assert_eq!(
            r.as_ref().unwrap_err().to_string(),
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x})"
        );
    }
    assert!(out.changes.is_empty());
}

#[test]
fn changes_round_trip_through_records() {
    let mut s = QuotaStore::new();
    let entities = [
        QuotaEntity::UserClientId(named("alice"), EntityName::Default),
        QuotaEntity::User(EntityName::Default),
        QuotaEntity::ClientId(named("app")),
        QuotaEntity::Ip(EntityName::Default),
    ];
    for (i, e) in entities.iter().enumerate() {
        let key = e.keys()[0];
        s.set(e, key, Some(100.0 + i as f64)).unwrap();
    }
    let mut copy = QuotaStore::new();
    for c in s.changes() {
        let record = c.to_record();
        assert!(!record.remove);
        let back = QuotaChange::from_record(&record).unwrap();
        assert_eq!(back, c);
        copy.apply(&back);
    }
    assert_eq!(copy, s);
    // A removal record.
    let removal = QuotaChange {
        entity: entities[0].clone(),
        key: QuotaKey::ProducerByteRate,
        value: None,
    };
    let r = removal.to_record();
    assert!(r.remove);
    assert_eq!(
        r.entity[1].entity_name, None,
        "the default client id is a null name"
    );
    copy.apply(&QuotaChange::from_record(&r).unwrap());
    assert_eq!(copy.value(&entities[0], QuotaKey::ProducerByteRate), None);
    // A record with a key the entity cannot take is refused.
    let mut bad = r.clone();
    bad.key = "connection_creation_rate".into();
    assert!(QuotaChange::from_record(&bad).is_err());
}

// ---- throttling ----------------------------------------------------------------------------

fn config() -> QuotaConfig {
    QuotaConfig::default()
}

/// A producer that wants twice its quota: a batch every 50 ms, except that after an answer
/// with a throttle time it waits that long first (KIP-219: the client backs off and the broker
/// mutes the connection). Returns the bytes sent in each second.
fn producer_at_twice_the_quota(quota: f64, batch: f64, seconds: usize) -> Vec<f64> {
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::ClientId(named("fast")),
            QuotaKey::ProducerByteRate,
            Some(quota),
        )
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &config());
    let every = (batch / (2.0 * quota) * 1_000.0) as i64;
    let start = 1_700_000_000_000_i64;
    let mut now = start;
    let mut per_second = vec![0.0; seconds];
    while let Some(slot) = usize::try_from((now - start) / SECOND)
        .ok()
        .and_then(|s| per_second.get_mut(s))
    {
        let t = m.record_for(&store, "ANONYMOUS", "fast", batch, now);
        *slot += batch;
        now += every.max(i64::from(t));
    }
    per_second
}

fn mean_rate(per_second: &[f64]) -> f64 {
    per_second.iter().sum::<f64>() / per_second.len() as f64
}

/// The throttle times hold a producer at twice its quota to the quota: over a minute within
/// 2 %, over every 20 s span within 10 % (issue 25), every second after the first within one
/// batch, whatever its batch size. (Kafka's sampled rate lets it through in ten-second bursts
/// instead: see `rate::TokenBucket`.)
#[test]
fn a_producer_at_twice_its_quota_is_held_to_it() {
    let quota = 100_000.0;
    for batch in [1_000.0, 10_000.0, 16_384.0, 50_000.0] {
        let sent = producer_at_twice_the_quota(quota, batch, 60);
        let minute = mean_rate(&sent);
        assert!(
            (minute - quota).abs() <= quota * 0.02,
            "batch {batch}: {minute} B/s over 60 s against {quota}"
        );
        for span in sent.windows(20) {
            let r = mean_rate(span);
            assert!(
                (quota * 0.9..=quota * 1.1).contains(&r),
                "batch {batch}: a 20 s span at {r}"
            );
        }
        for (i, second) in sent.iter().enumerate().skip(1) {
            assert!(
                (second - quota).abs() <= batch,
                "batch {batch}: second {i} at {second}"
            );
        }
    }
}

#[test]
fn a_producer_below_its_quota_is_never_throttled() {
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::User(EntityName::Default),
            QuotaKey::ProducerByteRate,
            Some(100_000.0),
        )
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &config());
    // 90 % of the quota for a minute, in bursts of 45 KB every half second.
    let mut now = 0;
    while now < 60 * SECOND {
        assert_eq!(
            m.record_for(&store, "bob", "c", 45_000.0, now),
            0,
            "at {now} ms"
        );
        now += 500;
    }
}

/// Quota on the user alone: every client id of the user shares one usage key, so two clients
/// each at 60 % of it are throttled together; a quota per (user, client id) measures each.
#[test]
fn a_user_quota_is_shared_by_its_client_ids() {
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::User(named("alice")),
            QuotaKey::ProducerByteRate,
            Some(1_000.0),
        )
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &config());
    let mut throttled = false;
    for s in 0..20 {
        for c in ["c1", "c2"] {
            throttled |= m.record_for(&store, "alice", c, 600.0, s * SECOND) > 0;
        }
    }
    assert!(throttled);
    assert_eq!(m.tracked(), 1, "one usage key for the user");
    // Per (default user, default client id): each client measured on its own, none throttled.
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::UserClientId(EntityName::Default, EntityName::Default),
            QuotaKey::ProducerByteRate,
            Some(1_000.0),
        )
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &config());
    for s in 0..20 {
        for c in ["c1", "c2"] {
            assert_eq!(m.record_for(&store, "alice", c, 600.0, s * SECOND), 0);
        }
    }
    assert_eq!(m.tracked(), 2);
}

/// Kafka's ClientRequestQuotaManagerTest: a 1 % quota (10 ms of a thread a second), 4 ms a
/// second for 10 s, then 67.1 ms half a window later: 107.1 ms / 10.5 s, 210 ms of throttle.
/// The throttle is capped at one window.
#[test]
fn request_time_quota_like_kafka() {
    let mut store = QuotaStore::new();
    let e = QuotaEntity::UserClientId(named("ANONYMOUS"), named("test-client"));
    store
        .set(&e, QuotaKey::RequestPercentage, Some(1.0))
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Request, &config());
    let ms = |x: f64| request_percentage((x * 1e6) as u64);
    let mut now = 0;
    for _ in 0..10 {
        assert_eq!(
            m.record_for(&store, "ANONYMOUS", "test-client", ms(4.0), now),
            0
        );
        now += SECOND;
    }
    now += 500;
    assert_eq!(
        m.record_for(&store, "ANONYMOUS", "test-client", ms(67.1), now),
        210
    );
    // A huge request: the throttle is one window at most.
    assert_eq!(
        m.record_for(&store, "ANONYMOUS", "test-client", ms(60_000.0), now),
        1_000
    );
    assert!((request_percentage(1_000_000_000) - 100.0).abs() < 1e-9);
}

#[test]
fn byte_rate_throttles_are_not_capped_and_fetches_are_taken_back() {
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::ClientId(EntityName::Default),
            QuotaKey::ConsumerByteRate,
            Some(1_000.0),
        )
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Fetch, &config());
    let q = store
        .resolve(QuotaKey::ConsumerByteRate, "u", "reader")
        .unwrap();
    // 100 KB at once against a bucket of 1,000: 99 s until it is back to empty.
    assert_eq!(m.record(&q, 100_000.0, 0), 99_000);
    // Kafka answers the throttled fetch empty and takes its bytes back.
    m.unrecord(&q, 100_000.0, 0);
    assert_eq!(m.rate(&q.usage, 0), Some(0.0));
    assert_eq!(m.record(&q, 1_000.0, 10), 0);
    // Fetch sizes are capped at what the bucket holds (a larger fetch would be throttled,
    // emptied and taken back every time).
    assert_eq!(m.max_value_in_window(&store, "u", "reader"), Some(1_000.0));
    assert_eq!(
        ClientQuotaManager::new(ClientQuotaType::Produce, &config())
            .max_value_in_window(&store, "u", "reader"),
        None
    );
}

#[test]
fn a_quota_change_applies_to_the_usage_already_measured() {
    let mut store = QuotaStore::new();
    let e = QuotaEntity::ClientId(named("app"));
    store
        .set(&e, QuotaKey::ProducerByteRate, Some(10_000.0))
        .unwrap();
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &config());
    assert_eq!(m.record_for(&store, "u", "app", 10_000.0, 0), 0);
    store
        .set(&e, QuotaKey::ProducerByteRate, Some(1_000.0))
        .unwrap();
    // The bucket is empty and now refills at 1,000 B/s: 1,000 B wait a second.
    assert_eq!(m.record_for(&store, "u", "app", 1_000.0, 0), 1_000);
    // Removed: no quota, never throttled.
    store.set(&e, QuotaKey::ProducerByteRate, None).unwrap();
    assert_eq!(m.record_for(&store, "u", "app", 1e9, 0), 0);
}

#[test]
fn usage_state_is_bounded_and_expires() {
    let mut store = QuotaStore::new();
    store
        .set(
            &QuotaEntity::ClientId(EntityName::Default),
            QuotaKey::ProducerByteRate,
            Some(1e6),
        )
        .unwrap();
    let mut cfg = config();
    cfg.sensors_max = 100;
    let mut m = ClientQuotaManager::new(ClientQuotaType::Produce, &cfg);
    // A client cycling through client ids.
    for i in 0..10_000 {
        m.record_for(&store, "u", &format!("id-{i}"), 1.0, i);
    }
    assert_eq!(m.tracked(), 100);
    // An hour and a moment later, one record expires every idle one.
    m.record_for(
        &store,
        "u",
        "late",
        1.0,
        10_000 + INACTIVE_SENSOR_EXPIRATION_MS + 1,
    );
    assert_eq!(m.tracked(), 1);
}

// ---- connection creation rates -------------------------------------------------------------

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Kafka's ConnectionQuotasTest.testIpConnectionRateWhenActualRateAboveLimit: 2 samples of 1 s,
/// a limit of 20 a second on the address, 80 connections tried at 40 a second: the rate
/// accepted is 20 +- 1, refused connections are closed after a delay, and the acceptor never
/// pauses.
#[test]
fn an_address_over_its_rate_is_refused_at_its_rate() {
    let mut cfg = config();
    cfg.window_num = 2;
    let mut l = ConnectionRateLimiter::new(&cfg, &["EXTERNAL", "REPLICATION"], Some("REPLICATION"));
    let client = ip("192.0.2.7");
    l.set_ip_rate(Some(client), Some(20));
    let start = 5_000_i64;
    let mut now = start;
    let mut accepted = 0;
    for _ in 0..80 {
        match l.on_accept(client, "EXTERNAL", now) {
            Admission::Accept => accepted += 1,
            Admission::Refuse { close_after_ms } => assert!((1..=1_000).contains(&close_after_ms)),
            Admission::Delay(ms) => panic!("the acceptor paused {ms} ms"),
        }
        now += 25;
    }
    let rate = f64::from(accepted) / ((now - start) as f64 / 1_000.0);
    assert!((rate - 20.0).abs() <= 1.0, "{accepted} accepted: {rate}/s");
    // Another address has no limit.
    assert_eq!(
        l.on_accept(ip("192.0.2.8"), "EXTERNAL", now),
        Admission::Accept
    );
    assert_eq!(l.tracked_ips(), 1, "only limited addresses are tracked");
}

/// The broker-wide rate pauses the acceptor: accepting as fast as allowed (the next connection
/// comes as soon as the pause ends) holds the accepted rate to the limit; the inter-broker
/// listener is not limited while there are others.
#[test]
fn the_broker_rate_pauses_the_acceptor() {
    let mut cfg = config();
    cfg.window_num = 2;
    cfg.max_connection_creation_rate = 30;
    let mut l = ConnectionRateLimiter::new(&cfg, &["EXTERNAL", "REPLICATION"], Some("REPLICATION"));
    let client = ip("198.51.100.1");
    let clock = crate::clock::Clock::manual(1_700_000_000_000);
    let start = clock.now_ms();
    let mut accepted = 0;
    let mut paused = 0;
    while clock.now_ms() < start + 10 * SECOND {
        let mut a = l.on_accept(client, "EXTERNAL", clock.now_ms());
        if let Admission::Delay(ms) = a {
            assert!((1..=1_000).contains(&ms), "capped at one window: {ms}");
            paused += 1;
            clock.advance(i64::try_from(ms).unwrap());
            a = l.after_delay(client, "EXTERNAL", clock.now_ms());
        }
        assert_eq!(a, Admission::Accept);
        accepted += 1;
        clock.advance(5);
    }
    let now = clock.now_ms();
    let rate = f64::from(accepted) / ((now - start) as f64 / 1_000.0);
    assert!(paused > 0);
    assert!((rate - 30.0).abs() <= 3.0, "{accepted} accepted: {rate}/s");
    // The inter-broker listener: 500 connections at once, never paused.
    for _ in 0..500 {
        assert_eq!(l.on_accept(client, "REPLICATION", now), Admission::Accept);
    }
    // With a single listener, the inter-broker one is limited like any other.
    let mut single = ConnectionRateLimiter::new(&cfg, &["PLAINTEXT"], Some("PLAINTEXT"));
    let delayed = (0..500).any(|_| {
        matches!(
            single.on_accept(client, "PLAINTEXT", 0),
            Admission::Delay(_)
        )
    });
    assert!(delayed);
}

#[test]
fn a_listener_rate_and_a_zero_rate() {
    let cfg = config();
    let mut l = ConnectionRateLimiter::new(&cfg, &["A", "B"], None);
    l.set_listener_rate("A", Some(0));
    let c = ip("203.0.113.9");
    assert_eq!(
        l.on_accept(c, "A", 0),
        Admission::Delay(1_000),
        "rate 0: one window"
    );
    assert_eq!(l.on_accept(c, "B", 0), Admission::Accept);
    l.set_listener_rate("A", None);
    l.set_broker_rate(0);
    assert_eq!(l.on_accept(c, "B", 0), Admission::Delay(1_000));
}

/// A refused connection is taken back from the listener and broker counts: an address flooding
/// at its limit does not use up the broker's rate for others.
#[test]
fn refused_connections_do_not_count_against_the_broker() {
    let mut cfg = config();
    cfg.window_num = 2;
    cfg.max_connection_creation_rate = 50;
    let mut l = ConnectionRateLimiter::new(&cfg, &["EXTERNAL"], None);
    let flood = ip("192.0.2.66");
    l.set_ip_rate(Some(flood), Some(5));
    let mut now = 0;
    for _ in 0..1_000 {
        let a = l.on_accept(flood, "EXTERNAL", now);
        assert!(
            !matches!(a, Admission::Delay(_)),
            "the flood paused the acceptor"
        );
        now += 1;
    }
    // Someone else, at 20 a second, is never paused.
    for _ in 0..40 {
        assert_eq!(
            l.on_accept(ip("192.0.2.1"), "EXTERNAL", now),
            Admission::Accept
        );
        now += 50;
    }
}

#[test]
fn address_rates_follow_the_quota_records_and_are_bounded() {
    let mut cfg = config();
    cfg.sensors_max = 50;
    let mut l = ConnectionRateLimiter::new(&cfg, &["EXTERNAL"], None);
    let mut store = QuotaStore::new();
    let a = QuotaEntity::Ip(named("10.1.1.1"));
    let d = QuotaEntity::Ip(EntityName::Default);
    for (e, v) in [(&a, 3.0), (&d, 7.0)] {
        let out = store.alter(&[AlterEntry {
            entity: e
                .entries()
                .iter()
                .map(|(t, n)| (t.name().to_owned(), n.map(str::to_owned)))
                .collect(),
            ops: vec![("connection_creation_rate".into(), Some(v))],
        }]);
        for c in &out.changes {
            store.apply(c);
            l.apply(c);
        }
    }
    assert_eq!(l.ip_rate(ip("10.1.1.1")), Some(3));
    assert_eq!(l.ip_rate(ip("10.9.9.9")), Some(7), "the default address");
    let mut again = ConnectionRateLimiter::new(&cfg, &["EXTERNAL"], None);
    again.load(&store);
    assert_eq!(again.ip_rate(ip("10.1.1.1")), Some(3));
    let removal = QuotaChange {
        entity: d,
        key: QuotaKey::ConnectionCreationRate,
        value: None,
    };
    l.apply(&removal);
    assert_eq!(l.ip_rate(ip("10.9.9.9")), None);
    // Spraying addresses under a default limit keeps at most `quota.sensors.max` of them.
    l.set_ip_rate(None, Some(1));
    for i in 0..5_000_u32 {
        let addr = IpAddr::from(std::net::Ipv6Addr::from(u128::from(i) << 64 | 1));
        l.on_accept(addr, "EXTERNAL", i64::from(i));
    }
    assert_eq!(l.tracked_ips(), 50);
}

#[test]
fn describe_what_alter_set() {
    let mut s = QuotaStore::new();
    let out = s.alter(&[
        entry(
            &[(IP, Some("2001:db8::1"))],
            &[("connection_creation_rate", Some(30.0))],
        ),
        entry(
            &[(USER, None), (CLIENT_ID, Some("app"))],
            &[("request_percentage", Some(25.5))],
        ),
    ]);
    assert_eq!(out.results, vec![Ok(()), Ok(())]);
    for c in &out.changes {
        s.apply(c);
    }
    let ips = describe(&s, &[FilterComponent::specified(IP)], true).unwrap();
    assert_eq!(ips.len(), 1);
    assert_eq!(ips[0].entity, QuotaEntity::Ip(named("2001:db8::1")));
    assert_eq!(
        ips[0].values,
        vec![(QuotaKey::ConnectionCreationRate, 30.0)]
    );
    let users = describe(&s, &[FilterComponent::default_entity(USER)], false).unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(
        users[0].entity.entries(),
        vec![
            (EntityType::User, None),
            (EntityType::ClientId, Some("app"))
        ]
    );
    let e = describe(&s, &[FilterComponent::specified("group")], false).unwrap_err();
    assert_eq!(
        e.error_code(),
        kafka_protocol::error_code::ErrorCode::UNSUPPORTED_VERSION
    );
    let broker: crate::error::BrokerError = e.into();
    assert_eq!(broker.error_code().0, 35);
}

/// Hostile AlterClientQuotas: a huge entry and many entries for one entity are answered in
/// linear time, without a change.
#[test]
fn hostile_alter_requests() {
    let s = QuotaStore::new();
    let ops: Vec<(String, Option<f64>)> = (0..200_000).map(|i| (format!("k{i}"), None)).collect();
    let big = AlterEntry {
        entity: vec![(USER.into(), Some("u".into()))],
        ops,
    };
    let out = s.alter(std::slice::from_ref(&big));
    assert_eq!(out.results, vec![Ok(())]);
    assert!(out.changes.is_empty());
    let same = entry(&[(CLIENT_ID, None)], &[("producer_byte_rate", Some(1.0))]);
    let out = s.alter(&vec![same; 50_000]);
    assert!(out.results.iter().all(Result::is_err));
    assert!(out.changes.is_empty());
}
