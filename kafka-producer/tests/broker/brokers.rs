//! Our broker in this process (restartable on the same port), the `kafka-broker` binary as
//! a child process (SIGSTOP/SIGCONT), what its segment files hold, and this process's RSS.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_broker::BrokerConfig;

use crate::PARTITIONS;
use crate::peers::{tail, wait_bounded};

/// Our broker in this process, in a thread with its own runtime; stops when dropped.
pub(crate) struct InProcessBroker {
    pub(crate) addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcessBroker {
    /// Starts on `bind` (port 0: any), retrying a busy port for a while (a restart).
    pub(crate) fn start(data_dir: &Path, bind: SocketAddr) -> Self {
        let config = BrokerConfig {
            server: kafka_broker::config::ServerConfig {
                data_dir: data_dir.to_path_buf(),
                ..Default::default()
            },
            topics: kafka_broker::config::TopicsConfig {
                num_partitions: PARTITIONS,
                ..Default::default()
            },
            ..Default::default()
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let deadline = Instant::now() + Duration::from_secs(20);
                let listener = loop {
                    match tokio::net::TcpListener::bind(bind).await {
                        Ok(l) => break l,
                        Err(e) if Instant::now() < deadline => {
                            eprintln!("binding {bind}: {e}; retrying");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        Err(e) => panic!("cannot bind {bind}: {e}"),
                    }
                };
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                kafka_broker::run(listener, config, async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Self {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// An orderly shutdown: requests read are answered, connections close, logs are flushed.
    pub(crate) fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for InProcessBroker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The target directory of this build's profile (`target/debug`): the test executable is in
/// its `deps`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Builds a target of the workspace with the profile and target directory of this test, so
/// that `profile_dir()/<path>` is current. When the build fails the test fails: a binary
/// already there is never used in its place.
pub(crate) fn cargo_build(args: &[&str], path: &str) -> PathBuf {
    let dir = profile_dir();
    let bin = dir.join(path);
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build").args(args);
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
        None => {}
    }
    let log = std::env::temp_dir().join(format!(
        "kafka-producer-broker-test-build-{}.log",
        std::process::id()
    ));
    let out = File::create(&log).unwrap();
    let spawned = cmd
        .env("CARGO_TARGET_DIR", dir.parent().unwrap())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn();
    let status = match spawned {
        Ok(mut child) => wait_bounded(&mut child, Duration::from_secs(900)),
        Err(_) => None,
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    // A failed build fails the test: an existing binary may be stale (built from other
    // sources), and a test run against it would test something else.
    assert!(
        status.is_some_and(|s| s.success()),
        "cargo build {args:?} failed ({status:?}); not falling back to {} (it may be stale):\n{}",
        bin.display(),
        tail(&output, 30)
    );
    assert!(
        bin.is_file(),
        "cargo build {args:?} succeeded but {} is missing",
        bin.display()
    );
    bin
}

/// The `kafka-broker` binary as a child process on 127.0.0.1:0; killed when dropped.
pub(crate) struct ChildBroker {
    child: Child,
    /// `host:port` it listens on.
    pub(crate) addr: String,
    log_path: PathBuf,
    stopped: bool,
}

impl ChildBroker {
    pub(crate) fn start(bin: &Path, dir: &Path, settings: &[&str]) -> Self {
        let log_path = dir.join("broker.log");
        let out = File::create(&log_path).unwrap();
        let mut cmd = Command::new(bin);
        cmd.args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.join("data"));
        for kv in settings {
            cmd.args(["--set", kv]);
        }
        let child = cmd
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let mut broker = Self {
            child,
            addr: String::new(),
            log_path,
            stopped: false,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = broker.log();
            if let Some(rest) = log.split("kafka-broker listening on ").nth(1) {
                if let Some((addr, _)) = rest.split_once(',') {
                    broker.addr = addr.trim().to_owned();
                    return broker;
                }
            }
            if let Some(status) = broker.child.try_wait().unwrap() {
                panic!("the broker exited during start ({status}):\n{log}");
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not listen in time:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(crate) fn log(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.log_path).unwrap_or_default()).into_owned()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed: {status}");
    }

    /// SIGSTOP: the broker takes no CPU and answers nothing, its sockets stay open.
    pub(crate) fn pause(&mut self) {
        self.signal("STOP");
        self.stopped = true;
    }

    pub(crate) fn resume(&mut self) {
        self.signal("CONT");
        self.stopped = false;
    }
}

impl Drop for ChildBroker {
    fn drop(&mut self) {
        if self.stopped {
            self.signal("CONT");
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Every batch in the segment files of `topic` (`<data>/<topic>-<p>/*.log`): the compression
/// ids of the batches' attributes, counted.
pub(crate) fn codecs_on_disk(data_dir: &Path, topic: &str) -> BTreeMap<u8, usize> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(data_dir).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let is_topic = name
            .strip_prefix(topic)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|p| p.parse::<u32>().is_ok());
        if !is_topic {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let mut pos = 0usize;
            // baseOffset i64, batchLength i32, leader epoch i32, magic i8, crc u32,
            // attributes i16 (compression in bits 0-2).
            while pos + 23 <= bytes.len() {
                let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
                let attributes = i16::from_be_bytes(bytes[pos + 21..pos + 23].try_into().unwrap());
                assert_eq!(bytes[pos + 16], 2, "{}: magic at {pos}", path.display());
                *found.entry((attributes & 7) as u8).or_default() += 1;
                pos += 12 + usize::try_from(len).unwrap();
            }
        }
    }
    found
}

pub(crate) fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}
