use super::*;

/// The configuration's values `open` takes.
#[derive(Debug, Clone)]
struct Config {
    data_dir: PathBuf,
    node_id: i32,
    cluster_id: Option<String>,
    /// `process.roles` is set.
    clustered: bool,
}

/// A single-node broker's values (node 1, no cluster id) with its data in `dir`.
fn config(dir: &Path) -> Config {
    Config {
        data_dir: dir.to_path_buf(),
        node_id: 1,
        cluster_id: None,
        clustered: false,
    }
}

fn open(c: &Config) -> Result<MetaProperties, BrokerError> {
    super::open(&c.data_dir, c.node_id, c.cluster_id.as_deref(), c.clustered)
}

fn err(r: Result<impl std::fmt::Debug, BrokerError>) -> String {
    r.unwrap_err().to_string()
}

#[test]
fn a_new_cluster_id_is_a_v4_uuid_and_a_stored_one_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let id = open(&cfg).unwrap().cluster_id.unwrap();
    // URL-safe base64 of 16 bytes: 22 characters; decoded, a version-4 UUID.
    assert_eq!(id.len(), 22, "{id}");
    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits: u128 = 0;
    for (i, c) in id.chars().enumerate() {
        let v = ALPHABET.find(c).unwrap() as u128;
        bits = if i < 21 {
            bits << 6 | v
        } else {
            bits << 2 | v >> 4
        };
    }
    let bytes = bits.to_be_bytes();
    assert_eq!(bytes[6] >> 4, 4, "{id}");
    assert_eq!(topics::uuid_base64(&kafka_protocol::Uuid(bytes)), id);
    // Stored: the same id again, and a different one for another data directory.
    assert_eq!(open(&cfg).unwrap().cluster_id.unwrap(), id);
    let other = tempfile::tempdir().unwrap();
    assert_ne!(open(&config(other.path())).unwrap().cluster_id.unwrap(), id);
    // An id stored by an older version (any 22 characters) is kept as it is.
    std::fs::write(
        dir.path().join("meta.properties"),
        "version=1\ncluster.id=oldOLDold_-0123456789a\nnode.id=1\n",
    )
    .unwrap();
    assert_eq!(
        open(&cfg).unwrap().cluster_id.unwrap(),
        "oldOLDold_-0123456789a"
    );
}

#[test]
fn a_new_directory_gets_a_v1_file_with_every_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.node_id = 7;
    let meta = open(&c).unwrap();
    assert_eq!(meta.version, 1);
    assert_eq!(meta.node_id, Some(7));
    let directory_id = meta.directory_id.clone().unwrap();
    assert_eq!(directory_id.len(), 22);
    assert_ne!(meta.cluster_id, meta.directory_id);
    // On disk as read back, no temp file left; the next open changes nothing.
    assert_eq!(
        MetaProperties::read(dir.path()).unwrap(),
        Some(meta.clone())
    );
    assert!(!dir.path().join(TEMP_NAME).exists());
    let text = std::fs::read_to_string(path(dir.path())).unwrap();
    assert!(text.contains("version=1\n"), "{text}");
    assert!(text.contains("node.id=7\n"), "{text}");
    assert!(
        text.contains(&format!("directory.id={directory_id}\n")),
        "{text}"
    );
    assert_eq!(open(&c).unwrap(), meta);
    assert_eq!(std::fs::read_to_string(path(dir.path())).unwrap(), text);
    // A configured cluster id is the one stored.
    let dir2 = tempfile::tempdir().unwrap();
    let mut c2 = config(dir2.path());
    c2.cluster_id = Some("MkU3OEVBNTcwNTJENDM2Qk".into());
    assert_eq!(
        open(&c2).unwrap().cluster_id.as_deref(),
        Some("MkU3OEVBNTcwNTJENDM2Qk")
    );
}

#[test]
fn an_old_format_file_opens_and_gets_a_directory_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        path(dir.path()),
        "version=1\ncluster.id=abcdefghijklmnopqrstuv\nnode.id=1\n",
    )
    .unwrap();
    let meta = open(&config(dir.path())).unwrap();
    assert_eq!(meta.cluster_id.as_deref(), Some("abcdefghijklmnopqrstuv"));
    assert_eq!(meta.node_id, Some(1));
    assert!(meta.directory_id.is_some());
    assert_eq!(MetaProperties::read(dir.path()).unwrap(), Some(meta));
}

#[test]
fn kafka_written_files_read() {
    // As `kafka-storage format` writes it: a comment with the date, keys in any order.
    let text = "#\n#Tue Mar 05 10:00:00 UTC 2024\nnode.id=3\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\n\
                version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n";
    let meta = MetaProperties::parse(text, Path::new("x/meta.properties")).unwrap();
    assert_eq!(
        meta,
        MetaProperties {
            version: 1,
            cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qk".into()),
            node_id: Some(3),
            directory_id: Some("J8aAPcfLQt2bqs1JT_rMgQ".into()),
        }
    );
    // Version 0 (ZooKeeper era): the node id is broker.id; escapes are undone.
    let v0 = MetaProperties::parse(
        "version=0\nbroker.id=4\ncluster.id=a\\:b\n",
        Path::new("meta.properties"),
    )
    .unwrap();
    assert_eq!((v0.version, v0.node_id), (0, Some(4)));
    assert_eq!(v0.cluster_id.as_deref(), Some("a:b"));
    // Written and read back: the same, version 0 keeps broker.id.
    let dir = tempfile::tempdir().unwrap();
    let v0 = MetaProperties {
        cluster_id: Some("ab".into()),
        ..v0
    };
    v0.write(dir.path()).unwrap();
    assert!(
        std::fs::read_to_string(path(dir.path()))
            .unwrap()
            .contains("broker.id=4\n")
    );
    assert_eq!(MetaProperties::read(dir.path()).unwrap(), Some(v0));
}

#[test]
fn malformed_files_are_errors_naming_the_file_and_line() {
    let p = Path::new("/data/meta.properties");
    for (text, expect) in [
        ("version=1\nnode.id=1\nthis is not a property\n", "line 3"),
        ("version=x\n", "line 1"),
        ("version=1\nnode.id=one\n", "line 2"),
        ("version=1\nnode.id=99999999999\n", "line 2"),
        ("version=1\nnode.id=1\nnode.id=2\n", "line 3"),
        ("version=1\nnode.id=1\ncluster.id=\n", "line 3"),
        ("version=1\nnode.id=1\ncluster.id=abc\\\n", "line 3"),
        ("version=-1\nnode.id=1\n", "line 1"),
        ("node.id=1\n", "no version"),
        ("version=1\ncluster.id=abc\n", "no node.id"),
        ("version=2\nnode.id=1\n", "unsupported version 2"),
        ("version=1\nnode.id=1\nbroker.id=2\n", "disagree"),
    ] {
        let e = MetaProperties::parse(text, p).unwrap_err().to_string();
        assert!(e.contains("/data/meta.properties"), "{text:?}: {e}");
        assert!(e.contains(expect), "{text:?}: {e}");
    }
    // Through open: the broker refuses to start.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(path(dir.path()), "garbage\n").unwrap();
    let e = err(open(&config(dir.path())));
    assert!(e.contains("meta.properties line 1"), "{e}");
}

#[test]
fn another_nodes_or_clusters_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.node_id = 2;
    c.cluster_id = Some("clusterAAAAAAAAAAAAAAA".into());
    open(&c).unwrap();
    let before = std::fs::read_to_string(path(dir.path())).unwrap();

    let mut other_node = c.clone();
    other_node.node_id = 3;
    let e = err(open(&other_node));
    assert!(e.contains("node.id=3"), "{e}");
    assert!(e.contains("node.id=2"), "{e}");
    assert!(e.contains("meta.properties"), "{e}");

    let mut other_cluster = c.clone();
    other_cluster.cluster_id = Some("clusterBBBBBBBBBBBBBBB".into());
    let e = err(open(&other_cluster));
    assert!(e.contains("cluster.id=clusterBBBBBBBBBBBBBBB"), "{e}");
    assert!(e.contains("cluster.id=clusterAAAAAAAAAAAAAAA"), "{e}");
    assert!(e.contains("meta.properties"), "{e}");

    // Refusals leave the file alone; without a configured cluster id the stored one is used.
    assert_eq!(std::fs::read_to_string(path(dir.path())).unwrap(), before);
    let mut unset = c.clone();
    unset.cluster_id = None;
    assert_eq!(
        open(&unset).unwrap().cluster_id.as_deref(),
        Some("clusterAAAAAAAAAAAAAAA")
    );
}

#[test]
fn a_cluster_node_records_the_quorums_cluster_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.clustered = true;
    c.node_id = 1;
    // Not known yet: no cluster id invented, the file has node and directory ids only.
    let meta = open(&c).unwrap();
    assert_eq!(meta.cluster_id, None);
    let directory_id = meta.directory_id.clone().unwrap();
    assert!(
        !std::fs::read_to_string(path(dir.path()))
            .unwrap()
            .contains("cluster.id")
    );
    assert_eq!(open(&c).unwrap().cluster_id, None);

    // Learned from the quorum: stored, the directory id kept; the same id again is fine.
    record_cluster_id(dir.path(), 1, "quorumQQQQQQQQQQQQQQQQ").unwrap();
    let meta = MetaProperties::read(dir.path()).unwrap().unwrap();
    assert_eq!(meta.cluster_id.as_deref(), Some("quorumQQQQQQQQQQQQQQQQ"));
    assert_eq!(meta.directory_id.as_deref(), Some(directory_id.as_str()));
    record_cluster_id(dir.path(), 1, "quorumQQQQQQQQQQQQQQQQ").unwrap();
    assert_eq!(
        open(&c).unwrap().cluster_id.as_deref(),
        Some("quorumQQQQQQQQQQQQQQQQ")
    );

    // Another cluster's id, or another node: refused, naming both.
    let e = err(record_cluster_id(dir.path(), 1, "otherOOOOOOOOOOOOOOOOO"));
    assert!(
        e.contains("belongs to cluster quorumQQQQQQQQQQQQQQQQ"),
        "{e}"
    );
    assert!(
        e.contains("the quorum is cluster otherOOOOOOOOOOOOOOOOO"),
        "{e}"
    );
    let e = err(record_cluster_id(dir.path(), 2, "quorumQQQQQQQQQQQQQQQQ"));
    assert!(e.contains("node.id=1"), "{e}");
    assert!(e.contains("node.id=2"), "{e}");
    assert!(err(record_cluster_id(dir.path(), 1, "has space")).contains("cluster.id"));

    // No file yet: created.
    let fresh = tempfile::tempdir().unwrap();
    record_cluster_id(fresh.path(), 5, "freshFFFFFFFFFFFFFFFFF").unwrap();
    let meta = MetaProperties::read(fresh.path()).unwrap().unwrap();
    assert_eq!(meta.node_id, Some(5));
    assert_eq!(meta.cluster_id.as_deref(), Some("freshFFFFFFFFFFFFFFFFF"));
    assert!(meta.directory_id.is_some());
}

#[test]
fn a_failed_write_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let meta = MetaProperties::new(1, Some("keepKKKKKKKKKKKKKKKKKK".into()));
    meta.write(dir.path()).unwrap();
    // The temp file's name taken by a directory: the write fails, the old file stays whole.
    std::fs::create_dir(dir.path().join(TEMP_NAME)).unwrap();
    let e = err(MetaProperties::new(1, Some("newNNNNNNNNNNNNNNNNNNN".into())).write(dir.path()));
    assert!(e.contains(TEMP_NAME), "{e}");
    assert_eq!(MetaProperties::read(dir.path()).unwrap(), Some(meta));
}

#[test]
fn ids_are_checked_before_they_are_written() {
    assert!(check_id("cluster.id", "MkU3OEVBNTcwNTJENDM2Qk").is_ok());
    for bad in ["", "a b", "a\nb", "a\\b"] {
        let e = check_id("cluster.id", bad).unwrap_err().to_string();
        assert!(e.contains("cluster.id"), "{bad:?}: {e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let e = err(MetaProperties::new(1, Some("a b".into())).write(dir.path()));
    assert!(e.contains("cluster.id"), "{e}");
    assert!(MetaProperties::read(dir.path()).unwrap().is_none());
}
