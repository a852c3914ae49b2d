//! Topics created, deleted and growing, and regex subscriptions.

use kafka_protocol::error_code::ErrorCode;

use super::*;

const BAZ: Uuid = Uuid([3; 16]);

#[test]
fn a_topic_created_later_is_assigned_without_a_rejoin() {
    let mut env = Env::new();
    let a = env.join("a", &["foo", "baz"]).assignment.unwrap();
    assert!(!env.group().subscription_metadata().contains_key("baz"));
    env.take();
    // Unrelated changes leave the group alone.
    env.image.add("other", Uuid([9; 16]), 4);
    env.metadata();
    assert!(env.take().is_empty());

    env.image.add("baz", BAZ, 2);
    env.metadata();
    assert_eq!(
        kinds(&env.take()),
        ["PartitionMetadata", "Epoch", "Target(a)", "TargetEpoch"]
    );
    assert_eq!(
        (env.group().group_epoch(), env.group().assignment_epoch()),
        (2, 2)
    );
    let r = env.beat("a", 1, a).unwrap();
    assert_eq!(r.member_epoch, 2);
    assert_eq!(
        r.assignment,
        Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5]), (BAZ, &[0, 1])]))
    );
    env.check_replay();
}

#[test]
fn partitions_added_and_topics_deleted_change_the_target() {
    let mut env = Env::new();
    let a = env.join("a", &["foo", "bar"]).assignment.unwrap();
    env.image.add("bar", BAR, 5);
    env.metadata();
    let r = env.beat("a", 1, a).unwrap();
    let owned = r.assignment.unwrap();
    assert_eq!(owned[&BAR], BTreeSet::from([0, 1, 2, 3, 4]));
    assert_eq!(env.group().subscription_metadata()["bar"].num_partitions, 5);

    // bar deleted: a must revoke its partitions first.
    env.image.remove("bar");
    env.metadata();
    assert_eq!(env.group().group_epoch(), 3);
    assert!(!env.group().subscription_metadata().contains_key("bar"));
    let r = env.beat("a", 2, owned).unwrap();
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])));
    let r = env.beat("a", 2, tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])).unwrap();
    assert_eq!(r.member_epoch, 3);
    assert_eq!(env.group().state(), ConsumerGroupState::Stable);
    env.check_replay();
}

#[test]
fn a_metadata_change_with_a_failing_assignor_keeps_the_target_until_a_heartbeat() {
    let mut env = Env::new();
    let a = env.join("a", &["foo", "baz"]).assignment.unwrap();
    env.image.add("baz", BAZ, 2);
    env.assignor.prepare(Err(assignor::AssignorError::Failed {
        assignor: "mock",
        reason: "down".into(),
    }));
    env.metadata();
    assert_eq!(kinds(&env.take()).last().unwrap(), "Epoch");
    assert_eq!(
        (env.group().group_epoch(), env.group().assignment_epoch()),
        (2, 1)
    );
    assert_eq!(env.group().state(), ConsumerGroupState::Assigning);
    let r = env.beat("a", 1, a).unwrap();
    assert_eq!(r.member_epoch, 2);
    assert!(r.assignment.unwrap().contains_key(&BAZ));
    env.check_replay();
}

fn regex_join(member: &str, regex: &str) -> HeartbeatRequest {
    let mut req = Env::join_req(member, &[]);
    req.subscribed_topic_names = None;
    req.subscribed_topic_regex = Some(regex.into());
    req
}

#[test]
fn regex_subscriptions_match_whole_names_and_follow_topic_creation() {
    let mut env = Env::new();
    env.image.add("t-1", Uuid([11; 16]), 2);
    env.image.add("t", Uuid([12; 16]), 1);
    env.image.add("xt-1", Uuid([13; 16]), 1);
    env.image.add("__consumer_offsets", Uuid([14; 16]), 3);
    let r = env.hb(regex_join("a", "t-.*")).unwrap();
    assert_eq!(r.assignment, Some(tp(&[(Uuid([11; 16]), &[0, 1])])));
    assert_eq!(env.member("a").subscribed_topic_regex, "t-.*");
    // Internal topics never match.
    env.hb(regex_join("b", "__.*|fo+")).unwrap();
    assert_eq!(
        env.group()
            .subscription_metadata()
            .keys()
            .collect::<Vec<_>>(),
        ["foo", "t-1"]
    );

    // A topic created later is picked up.
    let owned = env.member("a").assigned.clone();
    env.image.add("t-2", Uuid([15; 16]), 1);
    env.metadata();
    assert!(env.group().subscription_metadata().contains_key("t-2"));
    let r = env.beat("a", 1, owned).unwrap();
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment.unwrap()[&Uuid([15; 16])], BTreeSet::from([0]));
    env.check_replay();

    // Changing the regex is a subscription change.
    let epoch = env.group().group_epoch();
    let mut req = HeartbeatRequest::new(GROUP, "a", 3);
    req.subscribed_topic_regex = Some("t-2".into());
    req.topic_partitions = Some(env.member("a").assigned.clone());
    env.hb(req).unwrap();
    assert_eq!(env.group().group_epoch(), epoch + 1);
    assert!(!env.group().subscription_metadata().contains_key("t-1"));
    env.check_replay();
}

#[test]
fn a_topic_both_named_and_matched_counts_for_the_regex_member_too() {
    let mut env = Env::new();
    env.join("a", &["foo"]);
    env.hb(regex_join("b", "ba.")).unwrap();
    let before = env.group().group_epoch();
    // baz exists now: the union grows.
    env.image.add("baz", BAZ, 1);
    env.metadata();
    assert_eq!(env.group().group_epoch(), before + 1);
    // b also subscribes to foo by regex once it matches it: the union stays the same but
    // b's subscription changed, so the group epoch moves on.
    let mut req = HeartbeatRequest::new(GROUP, "b", env.member("b").member_epoch);
    req.subscribed_topic_regex = Some("ba.|foo".into());
    req.topic_partitions = Some(env.member("b").assigned.clone());
    env.hb(req).unwrap();
    let spec = env.assignor.specs.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        spec.members["b"].subscription.subscribed_topic_ids,
        BTreeSet::from([FOO, BAR, BAZ])
    );
}

#[test]
fn invalid_and_hostile_regexes_are_refused() {
    let mut env = Env::new();
    for bad in ["t-(", "a)|(b", "\\Qa.b\\E", "[z-a]", "(?<!x)y"] {
        let err = env.hb(regex_join("a", bad)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::INVALID_REGULAR_EXPRESSION, "{bad}");
    }
    // A program over the size limit.
    let mut env = Env::with_config(|c| c.regex_size_limit = 10_000);
    let err = env.hb(regex_join("a", "(\\w{20}){20}")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::INVALID_REGULAR_EXPRESSION);
    assert!(env.log.is_empty());
    // A pattern that is fine alone stays anchored (no partial match of "xfoo").
    env.image.add("xfoo", Uuid([20; 16]), 1);
    env.hb(regex_join("a", "foo|bar")).unwrap();
    assert_eq!(
        env.group()
            .subscription_metadata()
            .keys()
            .collect::<Vec<_>>(),
        ["bar", "foo"]
    );
}

#[test]
fn regex_module_resolves_against_an_image() {
    let mut image = TopicsSnapshot::default();
    image.add("orders-eu", Uuid([1; 16]), 1);
    image.add("orders-us", Uuid([2; 16]), 1);
    image.add("orders", Uuid([3; 16]), 1);
    image.add("__transaction_state", Uuid([4; 16]), 1);
    let got = regex::resolve("orders-(eu|us)", &image, 1 << 20).unwrap();
    assert_eq!(
        got,
        BTreeSet::from(["orders-eu".to_owned(), "orders-us".to_owned()])
    );
    let got = regex::resolve(".*", &image, 1 << 20).unwrap();
    assert_eq!(got.len(), 3);
}
