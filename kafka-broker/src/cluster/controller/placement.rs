//! Replica placement for new partitions, in the spirit of Kafka's striped placer.
//!
//! The brokers (active ones only: the caller filters) are laid out in one ring that
//! alternates racks: the first broker of every rack, then the second of every rack, and so
//! on (racks by name, brokers by id; brokers without a rack form one rack). Partition `i` of a
//! request starting at `start` gets as first replica (its leader) the broker at ring position
//! `start + i`, so leadership rotates over every broker; each further replica is the next
//! broker along the ring that is not yet a replica and, while the partition has not covered
//! every rack, is on a rack it does not have yet. A partition's replicas are distinct, and
//! spread over as many racks as there are before a rack repeats.

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;

use crate::error::BrokerError;

/// One broker that can take replicas: its id and rack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Candidate {
    pub(super) id: i32,
    pub(super) rack: Option<String>,
}

/// Assigns `count` partitions of `replication_factor` replicas each over `brokers`, the first
/// partition's leader at ring position `start` (mod the number of brokers).
pub(super) fn place(
    brokers: &[Candidate],
    start: u64,
    count: usize,
    replication_factor: usize,
) -> Result<Vec<Vec<i32>>, BrokerError> {
    if replication_factor == 0 {
        return Err(BrokerError::kafka(
            ErrorCode::INVALID_REPLICATION_FACTOR,
            "replication factor must be at least 1",
        ));
    }
    if replication_factor > brokers.len() {
        return Err(too_few(replication_factor, brokers.len()));
    }
    let ring = ring(brokers);
    let n = ring.len();
    // Rack of each ring position, as a small number.
    let racks: BTreeMap<&Option<String>, usize> = ring
        .iter()
        .map(|c| &c.rack)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, i))
        .collect();
    let rack_of: Vec<usize> = ring
        .iter()
        .map(|c| racks.get(&c.rack).copied().unwrap_or(0))
        .collect();
    let rack_count = racks.len();
    let first = usize::try_from(start % n as u64).unwrap_or(0);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let leader = (first + i % n) % n;
        let mut chosen = vec![false; n];
        let mut racks_used = vec![false; rack_count];
        let mut used = 0;
        let mut replicas = Vec::with_capacity(replication_factor);
        let mut pos = leader;
        chosen[pos] = true;
        racks_used[rack_of[pos]] = true;
        used += 1;
        replicas.push(ring[pos].id);
        while replicas.len() < replication_factor {
            if used == rack_count {
                racks_used.iter_mut().for_each(|u| *u = false);
                used = 0;
            }
            let next = (1..n)
                .map(|k| (pos + k) % n)
                .find(|&q| !chosen[q] && !racks_used[rack_of[q]]);
            let Some(q) = next else {
                // Every rack without a replica yet has no broker left; start a new round.
                racks_used.iter_mut().for_each(|u| *u = false);
                used = 0;
                continue;
            };
            chosen[q] = true;
            racks_used[rack_of[q]] = true;
            used += 1;
            replicas.push(ring[q].id);
            pos = q;
        }
        out.push(replicas);
    }
    Ok(out)
}

/// INVALID_REPLICATION_FACTOR for a factor above the number of brokers that can take it.
pub(super) fn too_few(replication_factor: usize, available: usize) -> BrokerError {
    BrokerError::kafka(
        ErrorCode::INVALID_REPLICATION_FACTOR,
        format!(
            "replication factor {replication_factor} is larger than the number of available \
             (unfenced, not shutting down) brokers, {available}"
        ),
    )
}

/// The brokers in ring order: racks alternate.
fn ring(brokers: &[Candidate]) -> Vec<&Candidate> {
    let mut by_rack: BTreeMap<&Option<String>, Vec<&Candidate>> = BTreeMap::new();
    for b in brokers {
        by_rack.entry(&b.rack).or_default().push(b);
    }
    for list in by_rack.values_mut() {
        list.sort_by_key(|c| c.id);
    }
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(brokers.len());
    for round in 0..longest {
        for list in by_rack.values() {
            if let Some(c) = list.get(round) {
                out.push(*c);
            }
        }
    }
    out
}
