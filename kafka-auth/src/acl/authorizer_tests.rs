//! Tests of the authorizer: one per rule of Kafka's semantics, a differential test against a
//! brute-force reading of the same rules, and 100,000 ACLs.

use super::*;
use crate::acl::{AccessControlEntry, AclBindingFilter, ResourcePattern, ResourcePatternFilter};

use AclOperation as Op;
use AclPermissionType::{Allow, Deny};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

fn id(n: u64) -> AclId {
    let mut bytes = [0u8; 16];
    bytes[8..].copy_from_slice(&n.to_be_bytes());
    AclId(bytes)
}

fn binding(
    rt: ResourceType,
    name: &str,
    pt: PatternType,
    principal: &str,
    host: &str,
    op: AclOperation,
    perm: AclPermissionType,
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(rt, name, pt),
        AccessControlEntry::new(principal, host, op, perm),
    )
}

fn lit(name: &str, principal: &str, op: AclOperation, perm: AclPermissionType) -> AclBinding {
    binding(Topic, name, PatternType::Literal, principal, "*", op, perm)
}

fn pre(name: &str, principal: &str, op: AclOperation, perm: AclPermissionType) -> AclBinding {
    binding(Topic, name, PatternType::Prefixed, principal, "*", op, perm)
}

fn authorizer(acls: Vec<AclBinding>) -> AclAuthorizer {
    authorizer_with(AuthorizerConfig::default(), acls)
}

fn authorizer_with(config: AuthorizerConfig, acls: Vec<AclBinding>) -> AclAuthorizer {
    let mut a = AclAuthorizer::new(config);
    for (n, acl) in acls.into_iter().enumerate() {
        a.add(id(n as u64), acl).unwrap();
    }
    a
}

fn allowed(a: &AclAuthorizer, principal: &str, op: AclOperation, topic: &str) -> bool {
    allowed_on(a, principal, "10.0.0.1", op, Topic, topic)
}

fn allowed_on(
    a: &AclAuthorizer,
    principal: &str,
    host: &str,
    op: AclOperation,
    rt: ResourceType,
    name: &str,
) -> bool {
    a.authorize(&Action {
        principal,
        host,
        operation: op,
        resource_type: rt,
        resource_name: name,
    })
    .allowed
}

const ALICE: &str = "User:alice";
const BOB: &str = "User:bob";

#[test]
fn super_users_are_allowed_everything_even_against_a_deny() {
    let config = AuthorizerConfig {
        super_users: vec!["User:admin".into()],
        allow_everyone_if_no_acl_found: false,
    };
    let a = authorizer_with(config, vec![lit("t", "User:admin", Op::All, Deny)]);
    assert!(allowed(&a, "User:admin", Op::Delete, "t"));
    assert!(allowed_on(
        &a,
        "User:admin",
        "1.2.3.4",
        Op::ClusterAction,
        Cluster,
        "kafka-cluster"
    ));
    let decision = a.authorize(&Action {
        principal: "User:admin",
        host: "h",
        operation: Op::Read,
        resource_type: Topic,
        resource_name: "t",
    });
    assert_eq!(decision.rule, DecidingRule::SuperUser);
    assert_eq!(decision.to_string(), "SuperUser");
    // Only the exact principal text is a super user.
    assert!(!allowed(&a, "User:Admin", Op::Read, "t"));
}

#[test]
fn deny_beats_allow() {
    let a = authorizer(vec![
        lit("t", ALICE, Op::Read, Allow),
        lit("t", ALICE, Op::Read, Deny),
    ]);
    assert!(!allowed(&a, ALICE, Op::Read, "t"));
    // A prefixed deny beats a literal allow, and a wildcard deny beats both.
    let a = authorizer(vec![
        lit("orders", ALICE, Op::Write, Allow),
        pre("ord", ALICE, Op::Write, Deny),
    ]);
    assert!(!allowed(&a, ALICE, Op::Write, "orders"));
    let a = authorizer(vec![
        pre("ord", ALICE, Op::Write, Allow),
        lit("*", "User:*", Op::Write, Deny),
    ]);
    assert!(!allowed(&a, ALICE, Op::Write, "orders"));
    let decision = a.authorize(&Action {
        principal: ALICE,
        host: "h",
        operation: Op::Write,
        resource_type: Topic,
        resource_name: "orders",
    });
    match decision.rule {
        DecidingRule::Acl { binding, .. } => assert_eq!(binding.entry.permission_type, Deny),
        other => panic!("unexpected rule {other:?}"),
    }
    assert!(decision.to_string().starts_with("MatchingAcl("));
}

#[test]
fn which_patterns_apply_to_a_name() {
    let a = authorizer(vec![
        lit("foo", ALICE, Op::Read, Allow),
        pre("bar", ALICE, Op::Read, Allow),
        lit("*", BOB, Op::Read, Allow),
    ]);
    // LITERAL: only the exact name.
    assert!(allowed(&a, ALICE, Op::Read, "foo"));
    assert!(!allowed(&a, ALICE, Op::Read, "foobar"));
    assert!(!allowed(&a, ALICE, Op::Read, "fo"));
    // PREFIXED: every name starting with the prefix, the prefix itself included.
    assert!(allowed(&a, ALICE, Op::Read, "bar"));
    assert!(allowed(&a, ALICE, Op::Read, "barrel"));
    assert!(!allowed(&a, ALICE, Op::Read, "ba"));
    assert!(!allowed(&a, ALICE, Op::Read, "xbar"));
    // LITERAL `*`: every name, including ones starting with `*`.
    assert!(allowed(&a, BOB, Op::Read, "anything"));
    assert!(allowed(&a, BOB, Op::Read, "*"));
    assert!(allowed(&a, BOB, Op::Read, "*abc"));
    // Another resource type is another world.
    assert!(!allowed_on(&a, BOB, "h", Op::Read, Group, "anything"));
}

#[test]
fn principal_matches_exactly_or_by_user_wildcard() {
    let a = authorizer(vec![
        lit("t", ALICE, Op::Read, Allow),
        lit("u", "User:*", Op::Read, Allow),
    ]);
    assert!(allowed(&a, ALICE, Op::Read, "t"));
    assert!(!allowed(&a, BOB, Op::Read, "t"));
    assert!(!allowed(&a, "User:Alice", Op::Read, "t"));
    assert!(allowed(&a, BOB, Op::Read, "u"));
    // `User:*` is Kafka's only wildcard principal and matches principals of any type.
    assert!(allowed(&a, "Group:devs", Op::Read, "u"));
    let a = authorizer(vec![lit("t", "Group:*", Op::Read, Allow)]);
    assert!(!allowed(&a, "Group:devs", Op::Read, "t"));
}

#[test]
fn host_matches_exactly_or_by_wildcard() {
    let a = authorizer(vec![
        binding(
            Topic,
            "t",
            PatternType::Literal,
            ALICE,
            "10.0.0.1",
            Op::Read,
            Allow,
        ),
        binding(
            Topic,
            "u",
            PatternType::Literal,
            ALICE,
            "*",
            Op::Read,
            Allow,
        ),
    ]);
    assert!(allowed_on(&a, ALICE, "10.0.0.1", Op::Read, Topic, "t"));
    assert!(!allowed_on(&a, ALICE, "10.0.0.2", Op::Read, Topic, "t"));
    assert!(allowed_on(
        &a,
        ALICE,
        "0:0:0:0:0:0:0:1",
        Op::Read,
        Topic,
        "u"
    ));
    // A deny from one host only denies that host.
    let a = authorizer(vec![
        lit("t", ALICE, Op::Read, Allow),
        binding(
            Topic,
            "t",
            PatternType::Literal,
            ALICE,
            "10.9.9.9",
            Op::Read,
            Deny,
        ),
    ]);
    assert!(!allowed_on(&a, ALICE, "10.9.9.9", Op::Read, Topic, "t"));
    assert!(allowed_on(&a, ALICE, "10.0.0.1", Op::Read, Topic, "t"));
}

#[test]
fn implied_operations_in_the_allow_direction() {
    for op in [Op::Read, Op::Write, Op::Delete, Op::Alter] {
        let a = authorizer(vec![lit("t", ALICE, op, Allow)]);
        assert!(
            allowed(&a, ALICE, Op::Describe, "t"),
            "{op} implies DESCRIBE"
        );
        assert!(
            !allowed(&a, ALICE, Op::DescribeConfigs, "t"),
            "{op} does not imply DESCRIBE_CONFIGS"
        );
    }
    let a = authorizer(vec![lit("t", ALICE, Op::AlterConfigs, Allow)]);
    assert!(allowed(&a, ALICE, Op::DescribeConfigs, "t"));
    assert!(!allowed(&a, ALICE, Op::Describe, "t"));
    // Nothing else is implied: DESCRIBE gives no READ, CREATE no DESCRIBE, ALTER no
    // ALTER_CONFIGS, WRITE no READ.
    let a = authorizer(vec![lit("t", ALICE, Op::Describe, Allow)]);
    assert!(!allowed(&a, ALICE, Op::Read, "t"));
    let a = authorizer(vec![lit("t", ALICE, Op::Create, Allow)]);
    assert!(!allowed(&a, ALICE, Op::Describe, "t"));
    let a = authorizer(vec![lit("t", ALICE, Op::Alter, Allow)]);
    assert!(!allowed(&a, ALICE, Op::AlterConfigs, "t"));
    let a = authorizer(vec![lit("t", ALICE, Op::Write, Allow)]);
    assert!(!allowed(&a, ALICE, Op::Read, "t"));
    // ALLOW ALL allows every operation.
    let a = authorizer(vec![lit("t", ALICE, Op::All, Allow)]);
    for op in [
        Op::Read,
        Op::Write,
        Op::Describe,
        Op::AlterConfigs,
        Op::ClusterAction,
    ] {
        assert!(allowed(&a, ALICE, op, "t"), "ALL allows {op}");
    }
}

#[test]
fn denies_are_not_implied_but_deny_all_denies_everything() {
    // DENY READ does not deny DESCRIBE, which the ALLOW of DESCRIBE then allows.
    let a = authorizer(vec![
        lit("t", ALICE, Op::Read, Deny),
        lit("t", ALICE, Op::Describe, Allow),
    ]);
    assert!(allowed(&a, ALICE, Op::Describe, "t"));
    assert!(!allowed(&a, ALICE, Op::Read, "t"));
    // DENY ALTER_CONFIGS does not deny DESCRIBE_CONFIGS.
    let a = authorizer(vec![
        lit("t", ALICE, Op::AlterConfigs, Deny),
        lit("t", ALICE, Op::DescribeConfigs, Allow),
    ]);
    assert!(allowed(&a, ALICE, Op::DescribeConfigs, "t"));
    // DENY ALL denies every operation, whatever is allowed.
    let a = authorizer(vec![
        lit("t", ALICE, Op::All, Deny),
        lit("t", ALICE, Op::All, Allow),
    ]);
    for op in [Op::Read, Op::Describe, Op::DescribeConfigs, Op::Write] {
        assert!(!allowed(&a, ALICE, op, "t"), "DENY ALL denies {op}");
    }
    // A DENY of DESCRIBE does not deny READ.
    let a = authorizer(vec![
        lit("t", ALICE, Op::Describe, Deny),
        lit("t", ALICE, Op::Read, Allow),
    ]);
    assert!(allowed(&a, ALICE, Op::Read, "t"));
    assert!(!allowed(&a, ALICE, Op::Describe, "t"));
}

#[test]
fn allow_everyone_only_when_no_acl_at_all_applies_to_the_resource() {
    let open = AuthorizerConfig {
        super_users: vec![],
        allow_everyone_if_no_acl_found: true,
    };
    let a = authorizer_with(
        open.clone(),
        vec![
            lit("guarded", BOB, Op::Write, Allow),
            pre("fam-", BOB, Op::Read, Allow),
            binding(Group, "g", PatternType::Literal, BOB, "*", Op::Read, Allow),
        ],
    );
    // No ACL applies to "free": everyone is allowed.
    assert!(allowed(&a, ALICE, Op::Read, "free"));
    let d = a.authorize(&Action {
        principal: ALICE,
        host: "h",
        operation: Op::Read,
        resource_type: Topic,
        resource_name: "free",
    });
    assert_eq!(d.rule, DecidingRule::NoAclOnResource);
    assert_eq!(d.to_string(), "DefaultAllow");
    // An ACL for another principal and another operation still counts.
    assert!(!allowed(&a, ALICE, Op::Read, "guarded"));
    let d = a.authorize(&Action {
        principal: ALICE,
        host: "h",
        operation: Op::Read,
        resource_type: Topic,
        resource_name: "guarded",
    });
    assert_eq!(d.rule, DecidingRule::NoMatchingAllow);
    assert_eq!(d.to_string(), "DefaultDeny");
    // So does a prefixed ACL covering the name.
    assert!(!allowed(&a, ALICE, Op::Read, "fam-1"));
    // A group ACL named "g" does not cover the topic "g".
    assert!(allowed(&a, ALICE, Op::Read, "g"));
    // A wildcard ACL for someone else covers every name.
    let a = authorizer_with(open, vec![lit("*", BOB, Op::Write, Allow)]);
    assert!(!allowed(&a, ALICE, Op::Read, "free"));
    // With the default (false), no ACL means no access.
    let a = authorizer(vec![]);
    assert!(!allowed(&a, ALICE, Op::Read, "free"));
}

#[test]
fn prefixes_sharing_parts_are_all_found() {
    // The walk jumps over names that are not prefixes; every real prefix must still count.
    let a = authorizer(vec![
        pre("a", ALICE, Op::Read, Allow),
        pre("ab", BOB, Op::Read, Allow),
        lit("abc", "User:carol", Op::Read, Allow),
        pre("abd", "User:dave", Op::Read, Allow),
        pre("abcde", "User:erin", Op::Read, Allow),
        pre("abca", "User:frank", Op::Read, Allow),
        pre("abcd", "User:gina", Op::Read, Deny),
    ]);
    assert!(allowed(&a, ALICE, Op::Read, "abcd"));
    assert!(allowed(&a, BOB, Op::Read, "abcd"));
    assert!(!allowed(&a, "User:carol", Op::Read, "abcd"));
    assert!(!allowed(&a, "User:dave", Op::Read, "abcd"));
    assert!(!allowed(&a, "User:erin", Op::Read, "abcd"));
    assert!(!allowed(&a, "User:frank", Op::Read, "abcd"));
    assert!(allowed(&a, "User:carol", Op::Read, "abc"));
    assert!(allowed(&a, "User:erin", Op::Read, "abcdef"));
    // Multi-byte names: prefixes compare as text.
    let a = authorizer(vec![
        pre("é", ALICE, Op::Read, Allow),
        pre("e", BOB, Op::Read, Allow),
    ]);
    assert!(allowed(&a, ALICE, Op::Read, "été"));
    assert!(!allowed(&a, BOB, Op::Read, "été"));
}

#[test]
fn add_and_remove() {
    let mut a = AclAuthorizer::new(AuthorizerConfig::default());
    let acl = lit("t", ALICE, Op::Read, Allow);
    a.add(id(1), acl.clone()).unwrap();
    assert_eq!(
        a.add(id(1), lit("u", ALICE, Op::Read, Allow)),
        Err(AclError::DuplicateId(id(1)))
    );
    assert_eq!(
        a.add(id(2), acl.clone()),
        Err(AclError::DuplicateAcl {
            existing: id(1),
            new: id(2)
        })
    );
    // The same entry on a PREFIXED pattern is another ACL.
    a.add(id(2), pre("t", ALICE, Op::Read, Allow)).unwrap();
    assert_eq!(a.len(), 2);
    assert_eq!(a.get(&id(1)), Some(&acl));
    assert!(allowed(&a, ALICE, Op::Read, "t"));
    assert_eq!(a.remove(&id(1)), Some(acl));
    assert_eq!(a.remove(&id(1)), None);
    // The prefixed one still allows.
    assert!(allowed(&a, ALICE, Op::Read, "t"));
    assert!(a.remove(&id(2)).is_some());
    assert!(!allowed(&a, ALICE, Op::Read, "t"));
    assert!(a.is_empty());
    assert!(a.index.is_empty(), "empty slots are dropped");
    // Bindings that could never be created are refused.
    let mut bad = lit("t", ALICE, Op::Any, Allow);
    assert_eq!(
        a.add(id(3), bad.clone()),
        Err(AclError::InvalidOperation(Op::Any))
    );
    bad.entry.operation = Op::Read;
    bad.pattern.pattern_type = PatternType::Match;
    assert!(a.add(id(3), bad).is_err());
    assert!(a.is_empty());
}

#[test]
fn bindings_by_filter() {
    let a = authorizer(vec![
        lit("orders", ALICE, Op::Read, Allow),
        pre("ord", BOB, Op::Write, Allow),
        lit("*", ALICE, Op::Describe, Allow),
        lit("payments", ALICE, Op::Read, Deny),
        binding(
            Group,
            "orders",
            PatternType::Literal,
            ALICE,
            "*",
            Op::Read,
            Allow,
        ),
    ]);
    let names = |filter: &AclBindingFilter| -> Vec<String> {
        a.bindings(filter)
            .iter()
            .map(|(_, b)| {
                format!(
                    "{}:{}:{}",
                    b.pattern.resource_type, b.pattern.pattern_type, b.pattern.name
                )
            })
            .collect()
    };
    assert_eq!(a.bindings(&AclBindingFilter::any()).len(), 5);
    let mut exact = AclBindingFilter::any();
    exact.pattern = ResourcePatternFilter::new(Topic, Some("orders".into()), PatternType::Literal);
    assert_eq!(names(&exact), ["TOPIC:LITERAL:orders"]);
    let mut any_type = exact.clone();
    any_type.pattern.pattern_type = PatternType::Any;
    assert_eq!(names(&any_type), ["TOPIC:LITERAL:orders"]);
    let mut matching = exact.clone();
    matching.pattern.pattern_type = PatternType::Match;
    let mut found = names(&matching);
    found.sort();
    assert_eq!(
        found,
        [
            "TOPIC:LITERAL:*",
            "TOPIC:LITERAL:orders",
            "TOPIC:PREFIXED:ord"
        ]
    );
    let mut by_principal = AclBindingFilter::any();
    by_principal.entry.principal = Some(BOB.into());
    assert_eq!(names(&by_principal), ["TOPIC:PREFIXED:ord"]);
    let mut denies = AclBindingFilter::any();
    denies.entry.permission_type = Deny;
    assert_eq!(names(&denies), ["TOPIC:LITERAL:payments"]);
    let mut groups = AclBindingFilter::any();
    groups.pattern.resource_type = Group;
    assert_eq!(names(&groups), ["GROUP:LITERAL:orders"]);
    // The ids come back with the bindings, for DeleteAcls.
    let ids: Vec<AclId> = a.bindings(&denies).iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [id(3)]);
}

#[test]
fn by_resource_type_follows_kafkas_default() {
    let write_any = |a: &AclAuthorizer| {
        a.authorize_by_resource_type(ALICE, "10.0.0.1", Op::Write, Topic)
            .unwrap()
    };
    // Nothing allowed.
    assert!(!write_any(&authorizer(vec![])));
    // allow.everyone.if.no.acl.found answers through the `hardcode` probe.
    let open = AuthorizerConfig {
        super_users: vec![],
        allow_everyone_if_no_acl_found: true,
    };
    assert!(write_any(&authorizer_with(open, vec![])));
    // A super user may.
    let admin = AuthorizerConfig {
        super_users: vec![ALICE.into()],
        allow_everyone_if_no_acl_found: false,
    };
    assert!(write_any(&authorizer_with(
        admin,
        vec![lit("*", ALICE, Op::All, Deny)]
    )));
    // One literal allow is enough.
    assert!(write_any(&authorizer(vec![lit(
        "t",
        ALICE,
        Op::Write,
        Allow
    )])));
    assert!(write_any(&authorizer(vec![lit(
        "t",
        ALICE,
        Op::All,
        Allow
    )])));
    // ... unless denied literally, or by a prefix of its name.
    assert!(!write_any(&authorizer(vec![
        lit("t", ALICE, Op::Write, Allow),
        lit("t", ALICE, Op::Write, Deny)
    ])));
    assert!(!write_any(&authorizer(vec![
        lit("abc", ALICE, Op::Write, Allow),
        pre("ab", ALICE, Op::Write, Deny)
    ])));
    assert!(!write_any(&authorizer(vec![
        lit("abc", ALICE, Op::Write, Allow),
        pre("abc", ALICE, Op::Write, Deny)
    ])));
    // A longer prefix deny does not dominate.
    assert!(write_any(&authorizer(vec![
        lit("abc", ALICE, Op::Write, Allow),
        pre("abcd", ALICE, Op::Write, Deny)
    ])));
    // A literal deny does not dominate a prefixed allow of the same name; a prefix deny does.
    assert!(write_any(&authorizer(vec![
        pre("ab", ALICE, Op::Write, Allow),
        lit("ab", ALICE, Op::Write, Deny)
    ])));
    assert!(!write_any(&authorizer(vec![
        pre("ab", ALICE, Op::Write, Allow),
        pre("a", ALICE, Op::Write, Deny)
    ])));
    // Wildcards: an allow on `*` allows, a deny on `*` denies even with other allows.
    assert!(write_any(&authorizer(vec![lit(
        "*",
        "User:*",
        Op::Write,
        Allow
    )])));
    assert!(!write_any(&authorizer(vec![
        lit("t", ALICE, Op::Write, Allow),
        lit("*", ALICE, Op::Write, Deny)
    ])));
    // Deny ALL on a prefix dominates.
    assert!(!write_any(&authorizer(vec![
        lit("abc", ALICE, Op::Write, Allow),
        pre("a", ALICE, Op::All, Deny)
    ])));
    // No implied operations here: READ does not count for DESCRIBE.
    let a = authorizer(vec![lit("t", ALICE, Op::Read, Allow)]);
    assert!(
        !a.authorize_by_resource_type(ALICE, "h", Op::Describe, Topic)
            .unwrap()
    );
    assert!(
        a.authorize_by_resource_type(ALICE, "h", Op::Read, Topic)
            .unwrap()
    );
    // Someone else's allow, another host, another resource type: no.
    assert!(!write_any(&authorizer(vec![lit(
        "t",
        BOB,
        Op::Write,
        Allow
    )])));
    assert!(!write_any(&authorizer(vec![binding(
        Topic,
        "t",
        PatternType::Literal,
        ALICE,
        "10.9.9.9",
        Op::Write,
        Allow
    )])));
    assert!(!write_any(&authorizer(vec![binding(
        TransactionalId,
        "t",
        PatternType::Literal,
        ALICE,
        "*",
        Op::Write,
        Allow
    )])));
    // Filter values are refused with Kafka's text.
    let a = authorizer(vec![]);
    let err = a
        .authorize_by_resource_type(ALICE, "h", Op::Write, ResourceType::Any)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Must specify a non-filter resource type for authorizeByResourceType"
    );
    let err = a
        .authorize_by_resource_type(ALICE, "h", Op::Any, Topic)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Must specify a non-filter operation type for authorizeByResourceType"
    );
    assert!(
        a.authorize_by_resource_type(ALICE, "h", Op::Unknown, Topic)
            .is_err()
    );
    assert!(
        a.authorize_by_resource_type(ALICE, "h", Op::Read, ResourceType::Unknown)
            .is_err()
    );
    // The last type code (USER) has no type above it in the index.
    let a = authorizer(vec![binding(
        ResourceType::User,
        "bob",
        PatternType::Literal,
        ALICE,
        "*",
        Op::CreateTokens,
        Allow,
    )]);
    assert!(
        a.authorize_by_resource_type(ALICE, "h", Op::CreateTokens, ResourceType::User)
            .unwrap()
    );
}

#[test]
fn authorized_operations_bits() {
    let a = authorizer(vec![
        lit("t", ALICE, Op::Read, Allow),
        binding(
            Cluster,
            "kafka-cluster",
            PatternType::Literal,
            ALICE,
            "*",
            Op::All,
            Allow,
        ),
        binding(
            Group,
            "g",
            PatternType::Literal,
            ALICE,
            "*",
            Op::Delete,
            Allow,
        ),
    ]);
    // READ and the DESCRIBE it implies: bits 3 and 8.
    assert_eq!(
        a.authorized_operations(ALICE, "h", Topic, "t"),
        (1 << 3) | (1 << 8)
    );
    // ALL on the cluster: the seven cluster operations (CREATE 5, ALTER 7, DESCRIBE 8,
    // CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12).
    assert_eq!(
        a.authorized_operations(ALICE, "h", Cluster, "kafka-cluster"),
        (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
    );
    // DELETE on a group: DELETE 6 and DESCRIBE 8.
    assert_eq!(
        a.authorized_operations(ALICE, "h", Group, "g"),
        (1 << 6) | (1 << 8)
    );
    assert_eq!(a.authorized_operations(BOB, "h", Topic, "t"), 0);
    let admin = AuthorizerConfig {
        super_users: vec![BOB.into()],
        allow_everyone_if_no_acl_found: false,
    };
    let a = authorizer_with(admin, vec![]);
    // Every topic operation: 3, 4, 5, 6, 7, 8, 10, 11.
    assert_eq!(
        a.authorized_operations(BOB, "h", Topic, "t"),
        0b1101_1111_1000
    );
}

#[test]
fn config_parsing() {
    assert_eq!(
        AuthorizerConfig::parse_super_users(" User:admin ; ;User:ops;").unwrap(),
        ["User:admin", "User:ops"]
    );
    assert_eq!(
        AuthorizerConfig::parse_super_users("").unwrap(),
        Vec::<String>::new()
    );
    let err = AuthorizerConfig::parse_super_users("User:admin;root").unwrap_err();
    assert_eq!(err, AclError::InvalidSuperUser("root".into()));
    assert_eq!(err.error_code(), 40);
    assert!(AuthorizerConfig::parse_allow_everyone(" TRUE "));
    assert!(!AuthorizerConfig::parse_allow_everyone("yes"));
    // Reconfiguring keeps the ACLs.
    let mut a = authorizer(vec![lit("t", ALICE, Op::Read, Allow)]);
    a.reconfigure(AuthorizerConfig {
        super_users: vec![BOB.into()],
        allow_everyone_if_no_acl_found: true,
    });
    assert!(allowed(&a, BOB, Op::Delete, "t"));
    assert!(allowed(&a, ALICE, Op::Read, "t"));
    assert!(allowed(&a, ALICE, Op::Read, "free"));
}

/// A small deterministic generator (xorshift64*), so the random tests repeat exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn pick_str(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }

    /// A name over a three-letter alphabet, so that names share many prefixes.
    fn name(&mut self, max_len: usize) -> String {
        let len = 1 + self.below(max_len);
        (0..len).map(|_| *self.pick(&['a', 'b', 'c'])).collect()
    }
}

/// Kafka's rules read straight, over every ACL: the reference the index must agree with.
fn reference(acls: &[AclBinding], config: &AuthorizerConfig, action: &Action<'_>) -> bool {
    if config.super_users.iter().any(|u| u == action.principal) {
        return true;
    }
    let applies: Vec<&AclBinding> = acls
        .iter()
        .filter(|b| b.pattern.resource_type == action.resource_type)
        .filter(|b| match b.pattern.pattern_type {
            PatternType::Literal => b.pattern.name == action.resource_name || b.pattern.name == "*",
            PatternType::Prefixed => action.resource_name.starts_with(b.pattern.name.as_str()),
            _ => false,
        })
        .collect();
    if applies.is_empty() {
        return config.allow_everyone_if_no_acl_found;
    }
    let who = |b: &AclBinding| {
        (b.entry.principal == action.principal || b.entry.principal == "User:*")
            && (b.entry.host == "*" || b.entry.host == action.host)
    };
    let op = action.operation;
    let denied = applies.iter().filter(|b| who(b)).any(|b| {
        b.entry.permission_type == Deny && (b.entry.operation == Op::All || b.entry.operation == op)
    });
    if denied {
        return false;
    }
    applies.iter().filter(|b| who(b)).any(|b| {
        let acl_op = b.entry.operation;
        b.entry.permission_type == Allow
            && (acl_op == Op::All
                || acl_op == op
                || (op == Op::Describe
                    && matches!(acl_op, Op::Read | Op::Write | Op::Delete | Op::Alter))
                || (op == Op::DescribeConfigs && acl_op == Op::AlterConfigs))
    })
}

const PRINCIPALS: [&str; 4] = ["User:alice", "User:bob", "User:*", "User:carol"];
const HOSTS: [&str; 3] = ["*", "10.0.0.1", "10.0.0.2"];
const OPS: [AclOperation; 6] = [
    Op::Read,
    Op::Write,
    Op::Describe,
    Op::All,
    Op::AlterConfigs,
    Op::DescribeConfigs,
];

fn random_acls(rng: &mut Rng, count: usize) -> Vec<AclBinding> {
    let mut acls = Vec::with_capacity(count);
    let mut seen = HashSet::new();
    while acls.len() < count {
        let name = if rng.below(20) == 0 {
            "*".to_string()
        } else {
            rng.name(5)
        };
        let pt = if name != "*" && rng.below(2) == 0 {
            PatternType::Prefixed
        } else {
            PatternType::Literal
        };
        let acl = binding(
            *rng.pick(&[Topic, Group]),
            &name,
            pt,
            rng.pick_str(&PRINCIPALS),
            rng.pick_str(&HOSTS),
            *rng.pick(&OPS),
            if rng.below(4) == 0 { Deny } else { Allow },
        );
        if seen.insert(acl.clone()) {
            acls.push(acl);
        }
    }
    acls
}

#[test]
fn agrees_with_the_rules_read_straight_on_random_acls() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..40 {
        let count = 1 + rng.below(120);
        let acls = random_acls(&mut rng, count);
        let config = AuthorizerConfig {
            super_users: vec![],
            allow_everyone_if_no_acl_found: round % 2 == 0,
        };
        let a = authorizer_with(config.clone(), acls.clone());
        for _ in 0..300 {
            let name = rng.name(7);
            let action = Action {
                principal: rng.pick_str(&["User:alice", "User:bob", "User:carol", "User:dave"]),
                host: rng.pick_str(&["10.0.0.1", "10.0.0.2", "10.0.0.3"]),
                operation: *rng.pick(&[
                    Op::Read,
                    Op::Write,
                    Op::Describe,
                    Op::DescribeConfigs,
                    Op::AlterConfigs,
                ]),
                resource_type: *rng.pick(&[Topic, Group]),
                resource_name: &name,
            };
            assert_eq!(
                a.authorize(&action).allowed,
                reference(&acls, &config, &action),
                "round {round}, {action:?}"
            );
        }
        // Removing half the ACLs keeps the index consistent with what is left.
        let mut a = a;
        let mut left = Vec::new();
        for (n, acl) in acls.iter().enumerate() {
            if n % 2 == 0 {
                assert_eq!(a.remove(&id(n as u64)).as_ref(), Some(acl));
            } else {
                left.push(acl.clone());
            }
        }
        for _ in 0..100 {
            let name = rng.name(7);
            let action = Action {
                principal: rng.pick_str(&["User:alice", "User:bob"]),
                host: "10.0.0.1",
                operation: *rng.pick(&[Op::Read, Op::Describe]),
                resource_type: Topic,
                resource_name: &name,
            };
            assert_eq!(
                a.authorize(&action).allowed,
                reference(&left, &config, &action)
            );
        }
    }
}

#[test]
fn one_hundred_thousand_acls() {
    // 100,000 ACLs: a literal READ per (topic, user), prefixed WRITEs per team, a few denies
    // and wildcards; then checks whose answers follow from the construction, and a sample
    // compared with the rules read straight.
    let mut acls = Vec::with_capacity(100_000);
    for i in 0..90_000u32 {
        acls.push(lit(
            &format!("topic-{i:05}"),
            &format!("User:u{}", i % 1000),
            Op::Read,
            Allow,
        ));
    }
    for i in 0..9_990u32 {
        acls.push(pre(
            &format!("team-{i:04}-"),
            &format!("User:u{}", i % 1000),
            Op::Write,
            Allow,
        ));
    }
    for i in 0..9u32 {
        acls.push(pre(&format!("topic-0{i}"), "User:u7", Op::Read, Deny));
    }
    acls.push(lit("*", "User:auditor", Op::Describe, Allow));
    assert_eq!(acls.len(), 100_000);
    let a = authorizer(acls.clone());
    assert_eq!(a.len(), 100_000);
    let config = AuthorizerConfig::default();
    // Literal READ: the owner reads, a neighbour does not, DESCRIBE is implied.
    assert!(allowed(&a, "User:u42", Op::Read, "topic-12042"));
    assert!(allowed(&a, "User:u42", Op::Describe, "topic-12042"));
    assert!(!allowed(&a, "User:u43", Op::Read, "topic-12042"));
    assert!(!allowed(&a, "User:u42", Op::Write, "topic-12042"));
    // u7 owns topic-00007 and topic-09007; the prefixed denies on "topic-00" .. "topic-08"
    // take the first back.
    assert!(!allowed(&a, "User:u7", Op::Read, "topic-00007"));
    assert!(allowed(&a, "User:u7", Op::Read, "topic-09007"));
    // Prefixed WRITE: any topic of the team.
    assert!(allowed(&a, "User:u5", Op::Write, "team-0005-orders"));
    assert!(allowed(&a, "User:u5", Op::Describe, "team-1005-x"));
    assert!(!allowed(&a, "User:u6", Op::Write, "team-0005-orders"));
    assert!(!allowed(&a, "User:u5", Op::Write, "team-0005"));
    // The wildcard DESCRIBE reaches every topic.
    assert!(allowed(&a, "User:auditor", Op::Describe, "topic-55555"));
    assert!(allowed(&a, "User:auditor", Op::Describe, "no-such-topic"));
    assert!(!allowed(&a, "User:auditor", Op::Read, "topic-55555"));
    // A sample against the rules read straight.
    let mut rng = Rng(42);
    for _ in 0..60 {
        let n = rng.below(100_000);
        let name = match rng.below(3) {
            0 => format!("topic-{n:05}"),
            1 => format!("team-{:04}-{}", n % 10_000, rng.below(9)),
            _ => format!("other-{n}"),
        };
        let principal = format!("User:u{}", rng.below(1000));
        let action = Action {
            principal: &principal,
            host: "10.0.0.1",
            operation: *rng.pick(&[Op::Read, Op::Write, Op::Describe]),
            resource_type: Topic,
            resource_name: &name,
        };
        assert_eq!(
            a.authorize(&action).allowed,
            reference(&acls, &config, &action),
            "{action:?}"
        );
    }
    // Filters reach exactly the ACLs asked for.
    let mut team = AclBindingFilter::any();
    team.pattern =
        ResourcePatternFilter::new(Topic, Some("team-0005-orders".into()), PatternType::Match);
    let found = a.bindings(&team);
    assert_eq!(found.len(), 2, "the team prefix and the wildcard");
}
