use kafka_protocol::messages::update_features_request::FeatureUpdateKey;

use super::*;

fn update(feature: &str, level: i16, upgrade: UpgradeType) -> Update {
    Update {
        feature: feature.to_owned(),
        level,
        upgrade,
    }
}

fn request(updates: &[(&str, i16, i8)], validate_only: bool) -> UpdateFeaturesRequest {
    UpdateFeaturesRequest {
        feature_updates: updates
            .iter()
            .map(|(f, level, t)| FeatureUpdateKey {
                feature: KStr::from((*f).to_owned()),
                max_version_level: *level,
                upgrade_type: *t,
                ..Default::default()
            })
            .collect(),
        validate_only,
        ..Default::default()
    }
}

#[test]
fn api_versions_lists_supported_and_finalized_features_as_kafka_does() {
    let finalized = Finalized {
        epoch: 42,
        levels: BTreeMap::from([(METADATA_VERSION.to_owned(), 21), ("x".to_owned(), 0)]),
    };
    let (supported, epoch, levels) = api_versions_fields(4, &finalized);
    let names: Vec<&str> = supported.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "metadata.version",
            "kraft.version",
            "transaction.version",
            "group.version"
        ]
    );
    assert_eq!(
        (supported[0].min_version, supported[0].max_version),
        (7, 21)
    );
    assert_eq!(epoch, 42);
    // Level 0 is not finalized; a finalized level is its own min and max.
    assert_eq!(levels.len(), 1);
    assert_eq!(levels[0].name.as_str(), "metadata.version");
    assert_eq!(
        (levels[0].min_version_level, levels[0].max_version_level),
        (21, 21)
    );
    // Before v4 a feature whose minimum is 0 is left out (KAFKA-17492).
    let (supported, _, _) = api_versions_fields(3, &finalized);
    let names: Vec<&str> = supported.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["metadata.version"]);
}

#[test]
fn decide_follows_kafkas_controller() {
    let current = bootstrap_levels();
    let brokers = [(2, BTreeMap::from([(METADATA_VERSION.to_owned(), (7, 20))]))];
    let ok = |u: Update| decide(&current, &[u], 1, &[]);
    let err = |u: Update| ok(u).unwrap_err().1;
    // Same level: accepted (nothing changes).
    assert_eq!(
        ok(update(METADATA_VERSION, 21, UpgradeType::Upgrade)).unwrap(),
        BTreeMap::from([(METADATA_VERSION.to_owned(), 21)])
    );
    assert_eq!(
        err(update("kraft.version", 1, UpgradeType::Upgrade)),
        "Invalid update version 1 for feature kraft.version. Local controller 1 does not \
         support this feature."
    );
    assert_eq!(
        err(update("no.such.feature", 1, UpgradeType::Upgrade)),
        "Invalid update version 1 for feature no.such.feature. Local controller 1 does not \
         support this feature."
    );
    assert_eq!(
        err(update(METADATA_VERSION, 22, UpgradeType::Upgrade)),
        "Invalid update version 22 for feature metadata.version. Local controller 1 only \
         supports versions 7-21"
    );
    assert!(err(update(METADATA_VERSION, 20, UpgradeType::Upgrade)).contains("Can't downgrade"));
    assert!(
        err(update(METADATA_VERSION, 20, UpgradeType::SafeDowngrade))
            .starts_with("Invalid metadata.version 20. Refusing")
    );
    assert!(err(update(METADATA_VERSION, 20, UpgradeType::UnsafeDowngrade)).contains("Unsafe"));
    assert!(err(update("kraft.version", -1, UpgradeType::SafeDowngrade)).contains("less than 0"));
    assert!(err(update("kraft.version", 0, UpgradeType::Unknown)).contains("upgrade type"));
    // Disabling a feature nothing finalized: level 0 is supported by everyone.
    assert_eq!(
        ok(update("kraft.version", 0, UpgradeType::SafeDowngrade)).unwrap(),
        BTreeMap::from([("kraft.version".to_owned(), 0)])
    );
    // A registered broker that supports less refuses the level for the cluster.
    let refused = decide(
        &BTreeMap::from([(METADATA_VERSION.to_owned(), 19)]),
        &[update(METADATA_VERSION, 21, UpgradeType::Upgrade)],
        1,
        &brokers,
    )
    .unwrap_err();
    assert_eq!(refused.0, ErrorCode::INVALID_UPDATE_VERSION);
    assert!(
        refused.1.ends_with("Broker 2 only supports versions 7-20"),
        "{}",
        refused.1
    );
    // ... and a level it does support passes.
    let upgraded = decide(
        &BTreeMap::from([(METADATA_VERSION.to_owned(), 19)]),
        &[update(METADATA_VERSION, 20, UpgradeType::Upgrade)],
        1,
        &brokers,
    );
    assert_eq!(upgraded.unwrap()[METADATA_VERSION], 20);
}

#[test]
fn a_single_nodes_levels_survive_a_restart_and_validate_only_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let node = Features::open(dir.path()).unwrap();
    assert_eq!(node.finalized().levels, bootstrap_levels());
    assert_eq!(
        node.finalized().epoch,
        1,
        "two bootstrap records: metadata.version, group.version"
    );
    // Refused whole: nothing written.
    let r = node.update(&request(&[("kraft.version", 1, 1)], false), 1, 1);
    assert_eq!(r.error_code, ErrorCode::INVALID_UPDATE_VERSION.0);
    assert!(r.results.is_empty());
    assert!(
        r.error_message
            .unwrap()
            .as_str()
            .starts_with("The update failed for all features")
    );
    // Validate only: answered, nothing changes.
    let r = node.update(&request(&[(METADATA_VERSION, 21, 1)], true), 1, 1);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.results.len(), 1);
    assert_eq!(node.finalized().epoch, 1);
    // Accepted: kept in the file, read back with the same epoch.
    let r = node.update(
        &request(&[(METADATA_VERSION, 21, 1), ("kraft.version", 0, 2)], false),
        2,
        1,
    );
    assert_eq!(r.error_code, 0);
    assert!(r.results.is_empty(), "v2 has no per-feature results");
    let epoch = node.finalized().epoch;
    assert_eq!(epoch, 3);
    let again = Features::open(dir.path()).unwrap();
    assert_eq!(again.finalized(), node.finalized());
}

#[test]
fn a_cluster_node_follows_the_newest_image_only() {
    let node = Features::clustered();
    assert_eq!(node.finalized(), Finalized::default());
    node.follow_image(
        10,
        [
            (METADATA_VERSION, 21),
            ("group.version", 1),
            ("kraft.version", 0),
        ],
    );
    assert_eq!(node.finalized().epoch, 10);
    assert_eq!(node.finalized().levels, bootstrap_levels());
    node.follow_image(5, [(METADATA_VERSION, 7)]);
    assert_eq!(node.finalized().levels[METADATA_VERSION], 21);
}

#[test]
fn bootstrap_records_fill_in_only_what_is_missing() {
    // metadata.version and group.version (KIP-848 consumer groups) for a new cluster.
    assert_eq!(bootstrap_records(&BTreeMap::new()).len(), 2);
    assert_eq!(
        bootstrap_levels(),
        BTreeMap::from([
            (METADATA_VERSION.to_owned(), 21),
            ("group.version".to_owned(), 1)
        ])
    );
    assert!(bootstrap_records(&bootstrap_levels()).is_empty());
    // A cluster whose log has levels already (created by an older build) is not given
    // group.version: it stays off until an upgrade.
    let older = BTreeMap::from([(METADATA_VERSION.to_owned(), 21)]);
    assert!(bootstrap_records(&older).is_empty());
}
