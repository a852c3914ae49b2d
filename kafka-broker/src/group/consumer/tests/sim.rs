//! A seeded random simulation: clients join, heartbeat, leave, restart as static members
//! and crash while topics grow and appear. Invariants at every step: no partition held by
//! two members in the coordinator, nor believed owned by two live clients; once the churn
//! stops and everyone heartbeats, the group becomes stable with every subscribed partition
//! owned exactly once; and the records replay to the same groups.

use kafka_protocol::error_code::ErrorCode;

use super::*;

/// A splitmix64 stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }
}

/// A client as the KIP-848 consumer behaves: it owns what the last answer assigned, acks
/// revocations on its next heartbeat, and rejoins empty when fenced. While `away` (paused, or
/// restarting as a static member) it is not counted as owning anything: a paused client
/// learns it was fenced from its first heartbeat back, as a real one does.
#[derive(Debug, Clone)]
struct Client {
    member_id: String,
    instance_id: Option<String>,
    epoch: i32,
    owned: TopicPartitions,
    topics: Vec<String>,
    regex: Option<String>,
    /// Whether it must (re)join with epoch 0.
    joining: bool,
    /// Away (paused, or restarting as a static member) for this many more rounds.
    away: u32,
    /// Stopped after a fatal error.
    dead: bool,
}

impl Client {
    fn request(&self) -> HeartbeatRequest {
        let mut req = HeartbeatRequest::new(
            GROUP,
            &self.member_id,
            if self.joining { 0 } else { self.epoch },
        );
        req.instance_id = self.instance_id.clone();
        req.topic_partitions = Some(self.owned.clone());
        if self.joining {
            req.rebalance_timeout_ms = REBALANCE_MS;
            if let Some(r) = &self.regex {
                req.subscribed_topic_regex = Some(r.clone());
            } else {
                req.subscribed_topic_names = Some(self.topics.clone());
            }
        }
        req
    }

    fn handle(&mut self, r: Result<HeartbeatResponse, ConsumerGroupError>) {
        match r {
            Ok(resp) => {
                self.joining = false;
                self.member_id = resp.member_id;
                self.epoch = resp.member_epoch;
                if let Some(a) = resp.assignment {
                    self.owned = a;
                }
            }
            Err(e)
                if matches!(
                    e.code(),
                    ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::UNKNOWN_MEMBER_ID
                ) =>
            {
                self.owned.clear();
                self.joining = true;
            }
            // A fenced static member rejoining while its instance id is still held (Kafka's
            // rule): fatal for the client, which stops.
            Err(e)
                if e.code() == ErrorCode::UNRELEASED_INSTANCE_ID && self.instance_id.is_some() =>
            {
                self.owned.clear();
                self.dead = true;
            }
            Err(e) => panic!("{} got {e}", self.member_id),
        }
    }
}

fn check_clients(clients: &[Client]) {
    let mut seen = BTreeMap::new();
    for c in clients.iter().filter(|c| c.away == 0) {
        for (t, ps) in &c.owned {
            for p in ps {
                if let Some(other) = seen.insert((*t, *p), &c.member_id) {
                    panic!("{t}-{p} owned by clients {other} and {}", c.member_id);
                }
            }
        }
    }
}

/// What a run went through, so that the test can tell it exercised every path.
#[derive(Debug, Default)]
struct Seen {
    revocations: usize,
    unreleased: usize,
    static_leaves: usize,
    removals: usize,
    fenced_answers: usize,
}

fn run(seed: u64, seen: &mut Seen) {
    let mut rng = Rng(seed);
    let mut env = Env::new();
    env.image.add("t-1", Uuid([11; 16]), 4);
    let mut clients: Vec<Client> = Vec::new();
    let mut next_id = 0u32;
    let mut next_topic = 2u8;
    let new_client = |rng: &mut Rng, next_id: &mut u32| {
        *next_id += 1;
        let kind = rng.below(3);
        Client {
            member_id: format!("m{next_id}"),
            instance_id: (rng.below(3) == 0).then(|| format!("i{next_id}")),
            epoch: 0,
            owned: TopicPartitions::new(),
            topics: if kind == 0 {
                vec!["foo".into()]
            } else {
                vec!["foo".into(), "bar".into()]
            },
            regex: (kind == 2).then(|| "t-.*|foo".to_owned()),
            joining: true,
            away: 0,
            dead: false,
        }
    };

    for _round in 0..400 {
        // Churn.
        match rng.below(20) {
            0 | 1 if clients.len() < 8 => clients.push(new_client(&mut rng, &mut next_id)),
            2 if !clients.is_empty() => {
                // Leaves for good.
                let i = rng.below(clients.len());
                let c = clients.remove(i);
                if !c.joining && c.away == 0 {
                    let mut req = HeartbeatRequest::new(GROUP, &c.member_id, -1);
                    req.instance_id = c.instance_id.clone();
                    env.hb(req).unwrap();
                }
            }
            3 if !clients.is_empty() => {
                // Crashes: its session expires later.
                let i = rng.below(clients.len());
                clients.remove(i);
            }
            4 if !clients.is_empty() => {
                // A static member restarts: leaves with -2, comes back with a new id.
                let i = rng.below(clients.len());
                let c = &mut clients[i];
                if c.instance_id.is_some() && !c.joining && c.away == 0 {
                    let mut req = HeartbeatRequest::new(GROUP, &c.member_id, -2);
                    req.instance_id = c.instance_id.clone();
                    env.hb(req).unwrap();
                    c.owned.clear();
                    c.away = 1 + u32::try_from(rng.below(5)).unwrap();
                    next_id += 1;
                    c.member_id = format!("m{next_id}");
                    c.joining = true;
                }
            }
            6 if !clients.is_empty() => {
                // An answer lost: the client retries with what it had.
                let i = rng.below(clients.len());
                if clients[i].away == 0 && !clients[i].joining {
                    let _ = env.hb(clients[i].request());
                }
            }
            7 if !clients.is_empty() => {
                // A long pause (a GC, a stalled host): its session may expire meanwhile.
                let i = rng.below(clients.len());
                if clients[i].away == 0 && !clients[i].joining {
                    clients[i].away = 10 + u32::try_from(rng.below(30)).unwrap();
                }
            }
            5 => {
                // Topics grow or appear.
                if rng.below(2) == 0 {
                    let n = i32::try_from(4 + rng.below(4)).unwrap();
                    env.image.add(
                        "t-1",
                        Uuid([11; 16]),
                        n.max(env.image.partition_count(Uuid([11; 16])).unwrap_or(0)),
                    );
                } else if next_topic < 6 {
                    next_topic += 1;
                    env.image
                        .add(&format!("t-{next_topic}"), Uuid([10 + next_topic; 16]), 2);
                }
                env.metadata();
            }
            _ => {}
        }
        // Heartbeats, in a random order.
        let mut order: Vec<usize> = (0..clients.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for i in order {
            let c = &mut clients[i];
            if c.away > 0 {
                c.away -= 1;
                if c.away > 0 {
                    continue;
                }
            }
            let r = env.hb(c.request());
            if r.is_err() {
                seen.fenced_answers += 1;
            }
            c.handle(r);
        }
        clients.retain(|c| !c.dead);
        check_clients(&clients);
        env.advance(1_000 + i64::try_from(rng.below(2_000)).unwrap());
    }

    // Calm: everyone heartbeats until the group settles.
    for c in &mut clients {
        c.away = 0;
    }
    for _ in 0..70 {
        for c in clients.iter_mut() {
            let r = env.hb(c.request());
            c.handle(r);
        }
        clients.retain(|c| !c.dead);
        check_clients(&clients);
        env.advance(1_000);
    }
    for r in &env.log {
        match (&r.key, &r.value) {
            (_, Some(RecordValue::CurrentMemberAssignment(a))) => match a.state {
                MemberState::UnrevokedPartitions => seen.revocations += 1,
                MemberState::UnreleasedPartitions => seen.unreleased += 1,
                _ if a.member_epoch == -2 => seen.static_leaves += 1,
                _ => {}
            },
            (RecordKey::MemberMetadata { .. }, None) => seen.removals += 1,
            _ => {}
        }
    }
    if clients.is_empty() {
        env.check_replay();
        return;
    }
    let group = env.group();
    assert_eq!(group.state(), ConsumerGroupState::Stable, "seed {seed}");
    assert_eq!(group.members().len(), clients.len(), "seed {seed}");
    let mut owned = BTreeSet::new();
    for c in &clients {
        assert_eq!(
            group.member(&c.member_id).unwrap().assigned,
            c.owned,
            "seed {seed}"
        );
        for (t, ps) in &c.owned {
            owned.extend(ps.iter().map(|p| (*t, *p)));
        }
    }
    let mut expected = BTreeSet::new();
    for meta in group.subscription_metadata().values() {
        expected.extend((0..meta.num_partitions).map(|p| (meta.id, p)));
    }
    assert_eq!(
        owned, expected,
        "seed {seed}: every subscribed partition owned once"
    );
    env.check_replay();
}

#[test]
fn random_membership_keeps_ownership_exclusive_and_converges() {
    let mut seen = Seen::default();
    for seed in 1..=12 {
        run(seed, &mut seen);
    }
    assert!(seen.revocations > 10, "{seen:?}");
    assert!(seen.unreleased > 10, "{seen:?}");
    assert!(seen.static_leaves > 3, "{seen:?}");
    assert!(seen.removals > 10, "{seen:?}");
    assert!(seen.fenced_answers > 0, "{seen:?}");
}
