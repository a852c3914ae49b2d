//! Partition changes when brokers leave or return: the ISR the controller wants and the
//! leader it elects, as one `PartitionChangeRecord` carrying only what changed (Kafka's
//! `PartitionChangeBuilder` without reassignments or eligible leader replicas).
//!
//! - The ISR never becomes empty: when the last member leaves it stays in (KIP-841), so the
//!   partition can elect it again when it returns.
//! - Election: the current leader stays if it is still in the ISR and acceptable; otherwise
//!   the first replica, in preferred (`replicas`) order, that is in the ISR and acceptable;
//!   otherwise, if unclean election is enabled for the topic, the first acceptable replica,
//!   which becomes the whole ISR and leads in recovery ([`RECOVERING`]); otherwise no leader.
//! - A changed leader bumps the leader epoch, any change the partition epoch (the image does
//!   that on apply).

use std::collections::BTreeSet;

use kafka_protocol::Uuid;
use kafka_protocol::metadata::{MetadataRecord, PartitionChangeRecord};

use super::ControllerConfig;
use crate::cluster::image::{
    MetadataImage, NO_LEADER, NO_LEADER_CHANGE, PartitionImage, RECOVERING, RESOURCE_BROKER,
    RESOURCE_TOPIC,
};

/// The topic key (and cluster-wide broker key) that enables unclean leader election.
const UNCLEAN_KEY: &str = "unclean.leader.election.enable";

/// Whether `topic` may elect a leader from outside its ISR: the topic's config, else the
/// cluster-wide default in the image, else the controller's configuration.
pub(super) fn unclean_enabled(
    config: &ControllerConfig,
    image: &MetadataImage,
    topic: &str,
) -> bool {
    image
        .config(RESOURCE_TOPIC, topic, UNCLEAN_KEY)
        .or_else(|| image.config(RESOURCE_BROKER, "", UNCLEAN_KEY))
        .map_or(config.unclean_leader_election, |v| {
            v.eq_ignore_ascii_case("true")
        })
}

/// The change to partition `index` of topic `topic_id` that gives it `target_isr` (`None`:
/// keep it) and a leader `acceptable` allows, or `None` if nothing changes.
pub(super) fn change(
    topic_id: Uuid,
    index: i32,
    p: &PartitionImage,
    target_isr: Option<Vec<i32>>,
    acceptable: &dyn Fn(i32) -> bool,
    unclean: bool,
) -> Option<PartitionChangeRecord> {
    let target_isr = match target_isr {
        Some(isr) if !isr.is_empty() => isr,
        _ => p.isr.clone(),
    };
    let valid = |r: i32| target_isr.contains(&r) && acceptable(r);
    let (leader, unclean_pick) = if p.leader != NO_LEADER && valid(p.leader) {
        (p.leader, false)
    } else if let Some(r) = p.replicas.iter().copied().find(|r| valid(*r)) {
        (r, false)
    } else if let Some(r) = unclean
        .then(|| p.replicas.iter().copied().find(|r| acceptable(*r)))
        .flatten()
    {
        (r, true)
    } else {
        (NO_LEADER, false)
    };
    let mut record = PartitionChangeRecord {
        partition_id: index,
        topic_id,
        ..Default::default()
    };
    if leader != p.leader {
        record.leader = leader;
    }
    if unclean_pick {
        record.isr = Some(vec![leader]);
        record.leader_recovery_state = RECOVERING;
    } else if target_isr != p.isr {
        record.isr = Some(target_isr);
    }
    let changed = record.leader != NO_LEADER_CHANGE || record.isr.is_some();
    changed.then_some(record)
}

/// Whether `id` is active in the image (registered, unfenced, not shutting down).
fn active(image: &MetadataImage, id: i32) -> bool {
    image.broker(id).is_some_and(|b| b.is_active())
}

/// The changes that take every broker of `leaving` out of the ISRs (unless it is the last
/// member) and out of leadership: for fencing, controlled shutdown and a new incarnation.
pub(super) fn remove_brokers(
    config: &ControllerConfig,
    image: &MetadataImage,
    leaving: &BTreeSet<i32>,
) -> Vec<MetadataRecord> {
    let acceptable = |r: i32| !leaving.contains(&r) && active(image, r);
    let mut out = Vec::new();
    for t in image.topics() {
        let unclean = unclean_enabled(config, image, &t.name);
        for (index, p) in &t.partitions {
            let touched = leaving.contains(&p.leader) || p.isr.iter().any(|r| leaving.contains(r));
            if !touched {
                continue;
            }
            let isr: Vec<i32> = p
                .isr
                .iter()
                .copied()
                .filter(|r| !leaving.contains(r))
                .collect();
            if let Some(c) = change(t.id, *index, p, Some(isr), &acceptable, unclean) {
                out.push(MetadataRecord::PartitionChange(c));
            }
        }
    }
    out
}

/// The elections for partitions without a leader now that `joining` is active too (it is
/// being unfenced in the same batch).
pub(super) fn elect_leaderless(
    config: &ControllerConfig,
    image: &MetadataImage,
    joining: i32,
) -> Vec<MetadataRecord> {
    let acceptable = |r: i32| r == joining || active(image, r);
    let mut out = Vec::new();
    for t in image.topics() {
        let unclean = unclean_enabled(config, image, &t.name);
        for (index, p) in &t.partitions {
            if p.leader != NO_LEADER {
                continue;
            }
            if let Some(c) = change(t.id, *index, p, None, &acceptable, unclean) {
                out.push(MetadataRecord::PartitionChange(c));
            }
        }
    }
    out
}
