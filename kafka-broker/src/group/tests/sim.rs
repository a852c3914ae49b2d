//! Many simulated consumers on virtual time: they join (v4+ style, dynamic and static),
//! heartbeat, rejoin when told to, leave, crash and restart, with requests interleaved in
//! random orders. Checked throughout:
//!
//! - no live consumer is ever told UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID;
//! - live consumers never own the same partition at the same time;
//! - whenever the group is Stable, every partition has exactly one owner;
//! - once the chaos stops, the group settles with every live consumer holding its share.

use super::*;

const G: &str = "sim";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Joining(RequestId),
    Syncing(RequestId),
    Stable,
    Crashed,
}

#[derive(Debug)]
struct Client {
    name: String,
    instance: Option<String>,
    member_id: String,
    generation: i32,
    phase: Phase,
    owned: BTreeSet<(String, i32)>,
    next_heartbeat: i64,
}

impl Client {
    fn new(name: String, instance: Option<String>) -> Self {
        Self {
            name,
            instance,
            member_id: String::new(),
            generation: -1,
            phase: Phase::Idle,
            owned: BTreeSet::new(),
            next_heartbeat: 0,
        }
    }

    fn live(&self) -> bool {
        self.phase != Phase::Crashed
    }
}

const TOPICS: &[&str] = &["orders", "payments"];
const HEARTBEAT_MS: i64 = 1_000;

struct Sim {
    h: H,
    rng: Rng,
    clients: Vec<Client>,
    parts: BTreeMap<String, i32>,
    serial: usize,
    generations_seen: BTreeSet<i32>,
    /// Crashes, LeaveGroups, static restarts.
    events: [usize; 3],
}

impl Sim {
    fn new(seed: u64) -> Self {
        Self {
            h: H::new(),
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            clients: Vec::new(),
            parts: topics(&[("orders", 6), ("payments", 3)]),
            serial: 0,
            generations_seen: BTreeSet::new(),
            events: [0; 3],
        }
    }

    fn add(&mut self, static_member: bool) {
        self.serial += 1;
        let name = format!("c{}", self.serial);
        let instance = static_member.then(|| format!("pod-{}", self.serial));
        self.clients.push(Client::new(name, instance));
    }

    /// A static consumer restarting: the old process is gone, a new one with the same
    /// instance id starts with no member id.
    fn restart(&mut self, i: usize) {
        let Some(old) = self.clients.get_mut(i) else {
            return;
        };
        old.phase = Phase::Crashed;
        self.events[2] += 1;
        let (name, instance) = (format!("{}-r", old.name), old.instance.clone());
        self.clients.push(Client::new(name, instance));
    }

    fn heartbeat(&mut self, i: usize) -> ErrorCode {
        let c = &self.clients[i];
        let req = HeartbeatRequest {
            group_id: G.into(),
            generation_id: c.generation,
            member_id: c.member_id.clone(),
            group_instance_id: c.instance.clone(),
        };
        let e = self.h.m.heartbeat(&req, self.h.now);
        self.h.collect();
        e
    }

    fn step_client(&mut self, i: usize) {
        let now = self.h.now;
        let phase = self.clients[i].phase;
        match phase {
            Phase::Crashed => {}
            Phase::Idle => {
                let c = &self.clients[i];
                let mut req = join_req(G, &c.member_id, &c.name, &[("range", TOPICS)]);
                req.group_instance_id = c.instance.clone();
                req.require_known_member_id = true;
                let id = self.h.join(req);
                self.clients[i].phase = Phase::Joining(id);
            }
            Phase::Joining(id) => {
                let Some(r) = self.h.joined(id) else {
                    return;
                };
                let c = &mut self.clients[i];
                match r.error {
                    ErrorCode::NONE => {
                        c.member_id = r.member_id.clone();
                        c.generation = r.generation_id;
                        let assignments = if r.leader == r.member_id {
                            range_assign(&r.members, &self.parts)
                        } else {
                            Vec::new()
                        };
                        let instance = c.instance.clone();
                        let id = self.h.sync(SyncRequest {
                            group_id: G.into(),
                            generation_id: r.generation_id,
                            member_id: r.member_id,
                            group_instance_id: instance,
                            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.into()),
                            protocol_name: r.protocol_name,
                            assignments,
                        });
                        self.clients[i].phase = Phase::Syncing(id);
                    }
                    ErrorCode::MEMBER_ID_REQUIRED => {
                        c.member_id = r.member_id;
                        c.phase = Phase::Idle;
                    }
                    ErrorCode::REBALANCE_IN_PROGRESS => c.phase = Phase::Idle,
                    e => panic!("live consumer {} told {e:?} on JoinGroup", c.name),
                }
            }
            Phase::Syncing(id) => {
                let Some(r) = self.h.synced(id) else {
                    return;
                };
                let c = &mut self.clients[i];
                match r.error {
                    ErrorCode::NONE => {
                        c.owned = owned(&r.assignment);
                        c.phase = Phase::Stable;
                        c.next_heartbeat = now + HEARTBEAT_MS;
                    }
                    ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION => {
                        c.phase = Phase::Idle
                    }
                    e => panic!("live consumer {} told {e:?} on SyncGroup", c.name),
                }
            }
            Phase::Stable => {
                if now < self.clients[i].next_heartbeat {
                    return;
                }
                let e = self.heartbeat(i);
                let c = &mut self.clients[i];
                match e {
                    ErrorCode::NONE => c.next_heartbeat = now + HEARTBEAT_MS,
                    // Eager protocol: give everything up, then rejoin.
                    ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION => {
                        c.owned.clear();
                        c.phase = Phase::Idle;
                    }
                    e => panic!("live consumer {} told {e:?} on Heartbeat", c.name),
                }
            }
        }
    }

    fn chaos(&mut self) {
        let live: Vec<usize> = (0..self.clients.len())
            .filter(|i| self.clients[*i].live())
            .collect();
        if live.is_empty() || (live.len() < 6 && self.rng.chance(30)) {
            let static_member = self.rng.chance(40);
            self.add(static_member);
            return;
        }
        let pick = live[self.rng.below(live.len() as u64) as usize];
        match self.rng.below(100) {
            // Crash: stops without a word; its session has to expire.
            0..=14 => {
                self.clients[pick].phase = Phase::Crashed;
                self.events[0] += 1;
            }
            // Close: LeaveGroup, then gone.
            15..=34 if self.clients[pick].phase == Phase::Stable => {
                let c = &self.clients[pick];
                let leaving = LeavingMember {
                    member_id: c.member_id.clone(),
                    group_instance_id: c.instance.clone(),
                };
                let r = self.h.m.leave(G, &[leaving], self.h.now);
                self.h.collect();
                assert_eq!(r.members[0].1, ErrorCode::NONE, "leave of {}", c.name);
                self.clients[pick].phase = Phase::Crashed;
                self.events[1] += 1;
            }
            // A static consumer restarts quickly.
            35..=54 if self.clients[pick].instance.is_some() => self.restart(pick),
            _ => {}
        }
    }

    fn check(&mut self) {
        let mut owners: BTreeMap<(String, i32), &str> = BTreeMap::new();
        for c in self.clients.iter().filter(|c| c.phase == Phase::Stable) {
            for tp in &c.owned {
                if let Some(other) = owners.insert(tp.clone(), &c.name) {
                    panic!("{tp:?} owned by live consumers {other} and {}", c.name);
                }
            }
        }
        if let Some(group) = self.h.m.group(G) {
            if group.state() == GroupState::Stable {
                assert_exact_cover(group, &self.parts);
                self.generations_seen.insert(group.generation());
                for c in self.clients.iter().filter(|c| c.phase == Phase::Stable) {
                    if c.generation == group.generation() {
                        let m = group
                            .member(&c.member_id)
                            .expect("stable consumer is a member");
                        assert_eq!(owned(m.assignment()), c.owned, "{}", c.name);
                    }
                }
            }
        }
    }

    fn run(&mut self, steps: usize, chaos: bool) {
        for _ in 0..steps {
            if chaos && self.rng.chance(5) {
                self.chaos();
            }
            // Clients act in a random order each step.
            let mut order: Vec<usize> = (0..self.clients.len()).collect();
            for k in (1..order.len()).rev() {
                let j = self.rng.below(k as u64 + 1) as usize;
                order.swap(k, j);
            }
            for i in order {
                self.step_client(i);
            }
            self.check();
            let dt = self.rng.below(300) as i64;
            self.h.advance(dt);
            self.check();
        }
    }
}

#[test]
fn consumers_under_churn_keep_the_group_consistent() {
    for seed in 1..=12u64 {
        let mut sim = Sim::new(seed);
        for k in 0..3 {
            sim.add(k == 0);
        }
        sim.run(2_500, true);
        // Calm: everyone alive settles into one generation covering every partition.
        if !sim.clients.iter().any(Client::live) {
            sim.add(false);
        }
        sim.run(400, false);
        let group = sim.h.group(G);
        assert_eq!(group.state(), GroupState::Stable, "seed {seed}");
        let generation = group.generation();
        let mut union = BTreeSet::new();
        for c in sim.clients.iter().filter(|c| c.live()) {
            assert_eq!(c.phase, Phase::Stable, "seed {seed}: {} settled", c.name);
            assert_eq!(c.generation, generation, "seed {seed}: {}", c.name);
            union.extend(c.owned.iter().cloned());
        }
        assert_eq!(union.len(), 9, "seed {seed}: every partition consumed");
        assert!(
            sim.generations_seen.len() > 10 && sim.events.iter().all(|n| *n > 0),
            "seed {seed}: too little churn: generations {:?}, crashes/leaves/restarts {:?}",
            sim.generations_seen,
            sim.events
        );
    }
}
