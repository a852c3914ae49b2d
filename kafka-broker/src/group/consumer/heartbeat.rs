//! ConsumerGroupHeartbeat worked out on a group as it is, as Kafka's
//! `GroupMetadataManager.consumerGroupHeartbeat` does: the request's checks, the member found
//! or created (a static member replacing the one that left with epoch -2), its subscription
//! updated (a new group epoch when it changed), a new target assignment when the group epoch
//! passed the assignment epoch, and the member reconciled towards its target. Nothing
//! changes here: the records come out in Kafka's order and the manager replays them, so a
//! refused heartbeat (an assignor failure included) leaves no trace.

use std::collections::{BTreeMap, BTreeSet};

use super::assignor::{AssignmentMember, AssignorError, GroupSpec, MemberSubscription};
use super::config::ConsumerGroupConfig;
use super::group::{ConsumerGroup, MetadataDescriber};
use super::member::ConsumerGroupMember;
use super::reconcile::Reconcile;
use super::records::{
    ConsumerGroupRecord, CurrentAssignment, MemberSubscription as MemberSubscriptionValue,
    RecordKey, RecordValue, SubscriptionMetadata, TopicMetadata,
};
use super::regex;
use super::types::{
    ConsumerGroupError, HeartbeatRequest, HeartbeatResponse, JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberState, TopicPartitions,
    TopicsImage,
};

/// Resolved regexes: the topics each one matches.
pub(super) type Resolutions = BTreeMap<String, BTreeSet<String>>;

/// A heartbeat's outcome, to be applied by the manager.
#[derive(Debug)]
pub(super) struct Plan {
    pub records: Vec<ConsumerGroupRecord>,
    pub response: HeartbeatResponse,
    /// The rebalance timer: `Some(Some((epoch, timeout)))` to (re)arm, `Some(None)` to
    /// cancel, `None` to leave as is.
    pub rebalance: Option<Option<(i32, i32)>>,
    /// The static member this one replaced (its timers go).
    pub replaced: Option<String>,
    /// Regexes resolved for this heartbeat, to keep in the group.
    pub resolutions: Resolutions,
}

/// Kafka's checks of a heartbeat before it looks at any group.
pub(super) fn validate(
    req: &HeartbeatRequest,
    config: &ConsumerGroupConfig,
) -> Result<(), ConsumerGroupError> {
    let invalid = |s: &str| Err(ConsumerGroupError::InvalidRequest(s.to_owned()));
    let blank = |s: &Option<String>| s.as_ref().is_some_and(|v| v.trim().is_empty());
    let epoch = req.member_epoch;
    if (req.version >= 1
        || epoch > 0
        || epoch == LEAVE_GROUP_MEMBER_EPOCH
        || epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        && req.member_id.trim().is_empty()
    {
        return invalid("MemberId can't be empty.");
    }
    if req.group_id.trim().is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if blank(&req.instance_id) {
        return invalid("InstanceId can't be empty.");
    }
    if blank(&req.rack_id) {
        return invalid("RackId can't be empty.");
    }
    if epoch == JOIN_GROUP_MEMBER_EPOCH {
        if req.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if req
            .topic_partitions
            .as_ref()
            .is_none_or(|tp| tp.values().any(|p| !p.is_empty()))
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if req.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if req.rebalance_timeout_ms < -1 {
        return invalid("RebalanceTimeoutMs is invalid.");
    }
    if let Some(re) = &req.subscribed_topic_regex {
        if !re.is_empty() {
            regex::compile(re, config.regex_size_limit)?;
        }
    }
    if let Some(name) = &req.server_assignor {
        if config.assignor(name).is_none() {
            let supported: Vec<&str> = config.assignors.iter().map(|a| a.name()).collect();
            return Err(ConsumerGroupError::UnsupportedAssignor {
                name: name.clone(),
                supported: supported.join(", "),
            });
        }
    }
    Ok(())
}

/// Kafka's epoch rule: a greater epoch is fenced; a smaller one too, unless it is the
/// member's previous epoch and what it owns is a subset of what it is assigned (the answer
/// that bumped the epoch may have been lost).
pub(super) fn check_epoch(
    member: &ConsumerGroupMember,
    received: i32,
    owned: Option<&TopicPartitions>,
) -> Result<(), ConsumerGroupError> {
    let fenced = Err(ConsumerGroupError::FencedMemberEpoch {
        received,
        expected: member.member_epoch,
    });
    if received > member.member_epoch {
        return fenced;
    }
    if received < member.member_epoch {
        let subset = owned.is_some_and(|owned| {
            owned.iter().all(|(topic, ps)| {
                member
                    .assigned
                    .get(topic)
                    .is_some_and(|a| ps.iter().all(|p| a.contains(p)))
            })
        });
        if received != member.previous_member_epoch || !subset {
            return fenced;
        }
    }
    Ok(())
}

/// The topics `member` subscribes to: its names and its regex's topics.
pub(super) fn member_topics(
    member: &ConsumerGroupMember,
    resolutions: &Resolutions,
) -> BTreeSet<String> {
    let mut topics = member.subscribed_topic_names.clone();
    if member.has_regex() {
        if let Some(resolved) = resolutions.get(&member.subscribed_topic_regex) {
            topics.extend(resolved.iter().cloned());
        }
    }
    topics
}

/// Every member of `group` but `removed`, with `updated` in place of its namesake.
pub(super) fn members_view<'a>(
    group: &'a ConsumerGroup,
    removed: Option<&str>,
    updated: Option<&'a ConsumerGroupMember>,
) -> BTreeMap<&'a str, &'a ConsumerGroupMember> {
    let mut view: BTreeMap<&str, &ConsumerGroupMember> = group
        .members
        .iter()
        .filter(|(id, _)| Some(id.as_str()) != removed)
        .map(|(id, m)| (id.as_str(), m))
        .collect();
    if let Some(u) = updated {
        view.insert(u.member_id.as_str(), u);
    }
    view
}

/// The topics a set of members subscribes to.
pub(super) fn subscribed_topics<'a>(
    members: impl Iterator<Item = &'a ConsumerGroupMember>,
    resolutions: &Resolutions,
) -> BTreeSet<String> {
    members
        .flat_map(|m| member_topics(m, resolutions))
        .collect()
}

/// The metadata of `topics` in `image` (topics it does not know are left out).
pub(super) fn compute_metadata(
    topics: &BTreeSet<String>,
    image: &dyn TopicsImage,
) -> SubscriptionMetadata {
    let mut out = SubscriptionMetadata::new();
    for name in topics {
        let Some(id) = image.topic_id(name) else {
            continue;
        };
        let Some(num_partitions) = image.partition_count(id) else {
            continue;
        };
        let racks = (0..num_partitions)
            .map(|p| (p, image.partition_racks(id, p)))
            .filter(|(_, r)| !r.is_empty())
            .collect();
        out.insert(
            name.clone(),
            TopicMetadata {
                id,
                name: name.clone(),
                num_partitions,
                racks,
            },
        );
    }
    out
}

/// The assignor the group uses: the one most members ask for (ties: the first configured),
/// else the default (Kafka's `computePreferredServerAssignor`).
pub(super) fn preferred_assignor<'a>(
    members: impl Iterator<Item = &'a ConsumerGroupMember>,
    config: &ConsumerGroupConfig,
) -> Option<&'a str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in members {
        if let Some(a) = m.server_assignor.as_deref() {
            *counts.entry(a).or_default() += 1;
        }
    }
    let rank = |name: &str| config.assignors.iter().position(|a| a.name() == name);
    counts
        .into_iter()
        .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then_with(|| rank(b).cmp(&rank(a))))
        .map(|(name, _)| name)
}

/// Computes the target assignment of epoch `epoch` for `members` (each with its current
/// target): the records of the members whose target changed, then the target epoch
/// (Kafka's `TargetAssignmentBuilder`), and every member's new target.
pub(super) fn compute_target(
    group: &ConsumerGroup,
    config: &ConsumerGroupConfig,
    epoch: i32,
    metadata: &SubscriptionMetadata,
    resolutions: &Resolutions,
    members: &BTreeMap<&str, (&ConsumerGroupMember, TopicPartitions)>,
) -> Result<(Vec<ConsumerGroupRecord>, BTreeMap<String, TopicPartitions>), ConsumerGroupError> {
    let failed = |source| ConsumerGroupError::AssignorFailed { epoch, source };
    let preferred = preferred_assignor(members.values().map(|(m, _)| *m), config);
    let assignor = preferred
        .and_then(|name| config.assignor(name))
        .or_else(|| config.default_assignor())
        .ok_or_else(|| {
            failed(AssignorError::Failed {
                assignor: "none",
                reason: "no assignor is configured".to_owned(),
            })
        })?;
    let ids: BTreeMap<&str, kafka_protocol::Uuid> =
        metadata.values().map(|t| (t.name.as_str(), t.id)).collect();
    let mut spec = BTreeMap::new();
    for (id, (m, current)) in members {
        let subscribed_topic_ids = member_topics(m, resolutions)
            .iter()
            .filter_map(|name| ids.get(name.as_str()).copied())
            .collect();
        spec.insert(
            (*id).to_owned(),
            AssignmentMember {
                subscription: MemberSubscription {
                    rack_id: m.rack_id.clone(),
                    subscribed_topic_ids,
                },
                current: current.clone(),
            },
        );
    }
    let spec = GroupSpec::new(spec);
    let describer = MetadataDescriber::new(metadata);
    let mut result = assignor.assign(&spec, &describer).map_err(failed)?;

    // Kept to what the assignor may give: subscribed topics, existing partitions, each
    // partition once (an assignor that breaks its contract cannot break the group's).
    let partitions: BTreeMap<kafka_protocol::Uuid, i32> = metadata
        .values()
        .map(|t| (t.id, t.num_partitions))
        .collect();
    let mut taken = BTreeSet::new();
    let mut targets = BTreeMap::new();
    let mut records = Vec::new();
    for (id, member) in &spec.members {
        let mut clean = TopicPartitions::new();
        for (topic, ps) in result.remove(id).unwrap_or_default() {
            if !member.subscription.subscribed_topic_ids.contains(&topic) {
                continue;
            }
            let count = partitions.get(&topic).copied().unwrap_or(0);
            let kept: BTreeSet<i32> = ps
                .into_iter()
                .filter(|&p| (0..count).contains(&p) && taken.insert((topic, p)))
                .collect();
            if !kept.is_empty() {
                clean.insert(topic, kept);
            }
        }
        if group.target.get(id) != Some(&clean) {
            records.push(ConsumerGroupRecord {
                key: RecordKey::TargetAssignmentMember {
                    group_id: group.group_id.clone(),
                    member_id: id.clone(),
                },
                value: Some(RecordValue::TargetAssignmentMember(clean.clone())),
            });
        }
        targets.insert(id.clone(), clean);
    }
    records.push(ConsumerGroupRecord {
        key: RecordKey::TargetAssignmentMetadata {
            group_id: group.group_id.clone(),
        },
        value: Some(RecordValue::TargetAssignmentMetadata {
            assignment_epoch: epoch,
        }),
    });
    Ok((records, targets))
}

/// The records Kafka writes to remove `member_id`: its current assignment, target and
/// metadata tombstones, in that order.
pub(super) fn member_tombstones(group_id: &str, member_id: &str) -> [ConsumerGroupRecord; 3] {
    let g = group_id.to_owned();
    let m = member_id.to_owned();
    [
        ConsumerGroupRecord {
            key: RecordKey::CurrentMemberAssignment {
                group_id: g.clone(),
                member_id: m.clone(),
            },
            value: None,
        },
        ConsumerGroupRecord {
            key: RecordKey::TargetAssignmentMember {
                group_id: g.clone(),
                member_id: m.clone(),
            },
            value: None,
        },
        ConsumerGroupRecord {
            key: RecordKey::MemberMetadata {
                group_id: g,
                member_id: m,
            },
            value: None,
        },
    ]
}

/// The member metadata record of `m`.
pub(super) fn member_record(group_id: &str, m: &ConsumerGroupMember) -> ConsumerGroupRecord {
    ConsumerGroupRecord {
        key: RecordKey::MemberMetadata {
            group_id: group_id.to_owned(),
            member_id: m.member_id.clone(),
        },
        value: Some(RecordValue::MemberMetadata(MemberSubscriptionValue::of(m))),
    }
}

/// The current assignment record of `m`.
pub(super) fn assignment_record(group_id: &str, m: &ConsumerGroupMember) -> ConsumerGroupRecord {
    ConsumerGroupRecord {
        key: RecordKey::CurrentMemberAssignment {
            group_id: group_id.to_owned(),
            member_id: m.member_id.clone(),
        },
        value: Some(RecordValue::CurrentMemberAssignment(CurrentAssignment::of(
            m,
        ))),
    }
}

/// The group epoch record.
pub(super) fn epoch_record(group_id: &str, epoch: i32) -> ConsumerGroupRecord {
    ConsumerGroupRecord {
        key: RecordKey::GroupMetadata {
            group_id: group_id.to_owned(),
        },
        value: Some(RecordValue::GroupMetadata { epoch }),
    }
}

/// The subscription metadata record.
pub(super) fn metadata_record(
    group_id: &str,
    metadata: &SubscriptionMetadata,
) -> ConsumerGroupRecord {
    ConsumerGroupRecord {
        key: RecordKey::PartitionMetadata {
            group_id: group_id.to_owned(),
        },
        value: Some(RecordValue::PartitionMetadata(metadata.clone())),
    }
}

/// A regular heartbeat (not a leave) of `member_id` on `group` (a new, empty one when the
/// member creates it).
pub(super) fn plan(
    group: &ConsumerGroup,
    config: &ConsumerGroupConfig,
    req: &HeartbeatRequest,
    member_id: &str,
    image: &dyn TopicsImage,
) -> Result<Plan, ConsumerGroupError> {
    let gid = group.group_id.as_str();
    let joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH;
    let owned = req.topic_partitions.as_ref();
    let mut records = Vec::new();
    let mut replaced = None;

    let member = match &req.instance_id {
        None => {
            let m = match group.members.get(member_id) {
                Some(m) => m.clone(),
                None if joining => ConsumerGroupMember::new(member_id),
                None => return Err(ConsumerGroupError::UnknownMemberId(member_id.to_owned())),
            };
            check_epoch(&m, req.member_epoch, owned)?;
            m
        }
        Some(instance) => match (group.static_member(instance), joining) {
            (None, true) => match group.members.get(member_id) {
                Some(m) => m.clone(),
                None => ConsumerGroupMember::new(member_id),
            },
            (Some(old), true) => {
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    return Err(ConsumerGroupError::UnreleasedInstanceId {
                        instance_id: instance.clone(),
                        owner: old.member_id.clone(),
                    });
                }
                let mut m = old.clone();
                m.member_id = member_id.to_owned();
                m.member_epoch = 0;
                m.previous_member_epoch = 0;
                records.extend(member_tombstones(gid, &old.member_id));
                records.push(member_record(gid, &m));
                records.push(ConsumerGroupRecord {
                    key: RecordKey::TargetAssignmentMember {
                        group_id: gid.to_owned(),
                        member_id: m.member_id.clone(),
                    },
                    value: Some(RecordValue::TargetAssignmentMember(
                        group
                            .target
                            .get(&old.member_id)
                            .cloned()
                            .unwrap_or_default(),
                    )),
                });
                records.push(assignment_record(gid, &m));
                replaced = Some(old.member_id.clone());
                m
            }
            (None, false) => {
                return Err(ConsumerGroupError::UnknownMemberId(format!(
                    "instance id {instance}"
                )));
            }
            (Some(old), false) => {
                if old.member_id != member_id {
                    return Err(ConsumerGroupError::FencedInstanceId {
                        member_id: member_id.to_owned(),
                        instance_id: instance.clone(),
                        owner: old.member_id.clone(),
                    });
                }
                check_epoch(old, req.member_epoch, owned)?;
                old.clone()
            }
        },
    };

    // 1. The member's subscription; a new group epoch when it changed.
    let updated = member.updated_with(req);
    let is_new = replaced.is_none() && !group.members.contains_key(member_id);
    let mut bump = is_new;
    if is_new || updated.metadata_differs(&member) {
        records.push(member_record(gid, &updated));
        bump |= updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;
    }
    let mut resolutions = group.resolved_regexes.clone();
    let mut new_resolutions = Resolutions::new();
    if updated.has_regex() && !resolutions.contains_key(&updated.subscribed_topic_regex) {
        let topics = regex::resolve(
            &updated.subscribed_topic_regex,
            image,
            config.regex_size_limit,
        )?;
        new_resolutions.insert(updated.subscribed_topic_regex.clone(), topics.clone());
        resolutions.insert(updated.subscribed_topic_regex.clone(), topics);
    }

    let view = members_view(group, replaced.as_deref(), Some(&updated));
    let mut group_epoch = group.group_epoch;
    let mut metadata = std::borrow::Cow::Borrowed(&group.subscription_metadata);
    if bump {
        let topics = subscribed_topics(view.values().copied(), &resolutions);
        let fresh = compute_metadata(&topics, image);
        if fresh != group.subscription_metadata {
            records.push(metadata_record(gid, &fresh));
        }
        group_epoch = group_epoch.saturating_add(1);
        records.push(epoch_record(gid, group_epoch));
        metadata = std::borrow::Cow::Owned(fresh);
    }

    // 2. A new target assignment when the group epoch passed the assignment epoch.
    let (target_epoch, target) = if group_epoch > group.assignment_epoch {
        let members: BTreeMap<&str, (&ConsumerGroupMember, TopicPartitions)> = view
            .iter()
            .map(|(id, m)| {
                let current = if *id == updated.member_id {
                    let from = replaced.as_deref().unwrap_or(id);
                    group.target.get(from).cloned().unwrap_or_default()
                } else {
                    group.target.get(*id).cloned().unwrap_or_default()
                };
                (*id, (*m, current))
            })
            .collect();
        let (recs, mut targets) = compute_target(
            group,
            config,
            group_epoch,
            &metadata,
            &resolutions,
            &members,
        )?;
        records.extend(recs);
        (
            group_epoch,
            targets.remove(&updated.member_id).unwrap_or_default(),
        )
    } else {
        let target = group.target_of(&updated.member_id, updated.instance_id.as_deref());
        (group.assignment_epoch, target)
    };

    // 3. The member reconciled towards its target.
    let mut current = updated;
    let mut rebalance = None;
    if !current.is_reconciled_to(target_epoch) {
        let epochs = |t, p| group.partition_epoch(t, p);
        let step = Reconcile {
            target_epoch,
            target: &target,
            owned,
            partition_epoch: &epochs,
        };
        let next = step.apply(&current)?;
        if next.assignment_differs(&current) {
            records.push(assignment_record(gid, &next));
            rebalance = Some(if next.state == MemberState::UnrevokedPartitions {
                Some((next.member_epoch, next.rebalance_timeout_ms))
            } else {
                None
            });
        }
        current = next;
    }

    let full = joining
        || (req.rebalance_timeout_ms != -1
            && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
            && owned.is_some());
    let assignment =
        (full || current.assigned != member.assigned).then(|| current.assigned.clone());
    Ok(Plan {
        records,
        response: HeartbeatResponse {
            member_id: current.member_id.clone(),
            member_epoch: current.member_epoch,
            heartbeat_interval_ms: config.heartbeat_interval_ms,
            assignment,
        },
        rebalance,
        replaced,
        resolutions: new_resolutions,
    })
}
