//! The preferred read replica (KIP-392, Kafka's `ReplicaSelector`): which replica a partition
//! leader tells a consumer to fetch from next.
//!
//! A leader asks only for a consumer's fetch that carries client metadata (Fetch v11+, no
//! replica id) and only when `replica.selector.class` names a selector. The candidates are the
//! leader and the in-sync followers that hold the fetch offset (their log start at or before
//! it, their log end at or after it, as the leader last heard from them) and that clients can
//! reach on the consumer's listener. The rack-aware selector picks, among the candidates in
//! the consumer's rack (`client.rack` sent as the request's `RackId`), the leader if it is
//! one of them, else the most caught-up follower (the largest log end; on a tie the largest
//! broker id, as Kafka's comparator orders them); with no rack, or none in that rack, the
//! leader. Choosing the leader means no preferred replica: the leader answers the fetch
//! itself. Choosing a follower means the leader answers with that replica's id and no records.
//!
//! Pure: the fetch handler gathers the views from the partition layer and the metadata image.

use crate::config::ReplicaSelectorClass;

/// One replica as the selector sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaView {
    pub broker_id: i32,
    /// Its broker's `broker.rack`.
    pub rack: Option<String>,
    /// Its log start offset (a follower's as its last fetch said; -1 if not known yet).
    pub log_start_offset: i64,
    /// Its log end offset (a follower's as its last fetch said; -1 if not known yet).
    pub log_end_offset: i64,
    pub in_sync: bool,
    /// Clients can reach it on the consumer's listener (a live broker with that listener).
    pub reachable: bool,
}

impl ReplicaView {
    fn holds(&self, offset: i64) -> bool {
        self.log_start_offset <= offset && offset <= self.log_end_offset
    }
}

/// The replica other than the leader that a consumer in `client_rack` fetching at
/// `fetch_offset` should read from, if any (`None`: the leader answers).
pub fn preferred_read_replica(
    selector: ReplicaSelectorClass,
    client_rack: &str,
    fetch_offset: i64,
    leader: &ReplicaView,
    followers: &[ReplicaView],
) -> Option<i32> {
    match selector {
        ReplicaSelectorClass::RackAware => {
            if client_rack.is_empty() {
                return None;
            }
            let in_rack = |r: &ReplicaView| r.rack.as_deref() == Some(client_rack);
            if in_rack(leader) {
                return None;
            }
            followers
                .iter()
                .filter(|f| f.broker_id != leader.broker_id)
                .filter(|f| f.in_sync && f.reachable && f.holds(fetch_offset))
                .filter(|f| in_rack(f))
                .max_by_key(|f| (f.log_end_offset, f.broker_id))
                .map(|f| f.broker_id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(broker_id: i32, rack: &str, log_start: i64, log_end: i64) -> ReplicaView {
        ReplicaView {
            broker_id,
            rack: (!rack.is_empty()).then(|| rack.to_owned()),
            log_start_offset: log_start,
            log_end_offset: log_end,
            in_sync: true,
            reachable: true,
        }
    }

    fn pick(
        rack: &str,
        offset: i64,
        leader: &ReplicaView,
        followers: &[ReplicaView],
    ) -> Option<i32> {
        preferred_read_replica(
            ReplicaSelectorClass::RackAware,
            rack,
            offset,
            leader,
            followers,
        )
    }

    #[test]
    fn a_follower_in_the_consumers_rack_is_preferred() {
        let leader = view(1, "r1", 0, 100);
        let followers = [view(2, "r2", 0, 100), view(3, "r3", 0, 100)];
        assert_eq!(pick("r2", 50, &leader, &followers), Some(2));
        assert_eq!(pick("r3", 100, &leader, &followers), Some(3));
    }

    #[test]
    fn the_leader_answers_in_its_own_rack_without_a_rack_or_without_a_match() {
        let leader = view(1, "r1", 0, 100);
        let followers = [view(2, "r1", 0, 100), view(3, "r3", 0, 100)];
        // The leader is in the consumer's rack (a follower there too): the leader.
        assert_eq!(pick("r1", 10, &leader, &followers), None);
        assert_eq!(pick("", 10, &leader, &followers), None);
        assert_eq!(pick("r9", 10, &leader, &followers), None);
        // Brokers without a rack never match.
        let bare = [view(2, "", 0, 100)];
        assert_eq!(pick("r2", 10, &view(1, "", 0, 100), &bare), None);
    }

    #[test]
    fn only_in_sync_reachable_followers_holding_the_offset_qualify() {
        let leader = view(1, "r1", 0, 100);
        let behind = view(2, "r2", 0, 40);
        assert_eq!(pick("r2", 50, &leader, std::slice::from_ref(&behind)), None);
        assert_eq!(pick("r2", 40, &leader, &[behind]), Some(2));
        let trimmed = view(2, "r2", 60, 100);
        assert_eq!(pick("r2", 50, &leader, &[trimmed]), None);
        let mut out_of_sync = view(2, "r2", 0, 100);
        out_of_sync.in_sync = false;
        assert_eq!(pick("r2", 50, &leader, &[out_of_sync]), None);
        let mut fenced = view(2, "r2", 0, 100);
        fenced.reachable = false;
        assert_eq!(pick("r2", 50, &leader, &[fenced]), None);
        // Not heard from yet.
        assert_eq!(pick("r2", 0, &leader, &[view(2, "r2", -1, -1)]), None);
    }

    #[test]
    fn the_most_caught_up_follower_of_the_rack_wins_then_the_larger_id() {
        let leader = view(1, "r1", 0, 100);
        let followers = [
            view(2, "r2", 0, 90),
            view(3, "r2", 0, 100),
            view(4, "r2", 0, 95),
        ];
        assert_eq!(pick("r2", 50, &leader, &followers), Some(3));
        let tied = [view(5, "r2", 0, 100), view(4, "r2", 0, 100)];
        assert_eq!(pick("r2", 50, &leader, &tied), Some(5));
    }
}
