//! The real `kafka-broker` binary as a child process: started on a loopback port the kernel
//! picks (read back from its "listening on" log line, so there is no port race), stopped with
//! SIGKILL or SIGTERM, its log output kept in a file per start. Every process is killed when
//! its handle is dropped, panics included. Also a tmpfs mount that is always unmounted.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a broker may take to start listening: a liveness bound, not a speed check (a
/// restart that recovers 2,050 logs took over 20 s on a loaded 2-core machine).
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// Where `prlimit` (util-linux) is.
pub(crate) const PRLIMIT: &str = "/usr/bin/prlimit";
/// How long a clean shutdown may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A data directory and the settings a broker runs with there. Each start writes its output
/// to its own file under `logs`.
pub(crate) struct Node {
    pub(crate) data_dir: PathBuf,
    logs: PathBuf,
    settings: Vec<String>,
    starts: u32,
    /// `RUST_LOG` of the broker process.
    log_filter: String,
    /// A descriptor limit (soft and hard) set with `prlimit` on the broker process.
    nofile: Option<u64>,
}

impl Node {
    /// `settings` are `key=value` pairs passed with `--set`.
    pub(crate) fn new(data_dir: PathBuf, logs: PathBuf, settings: &[&str]) -> Self {
        std::fs::create_dir_all(&logs).unwrap();
        Self {
            data_dir,
            logs,
            settings: settings.iter().map(|s| (*s).to_owned()).collect(),
            starts: 0,
            log_filter: "info".to_owned(),
            nofile: None,
        }
    }

    /// Runs the broker under `prlimit --nofile=n:n` (which execs it: the pid is the broker's).
    pub(crate) fn nofile(mut self, n: u64) -> Self {
        self.nofile = Some(n);
        self
    }

    /// Runs the broker with this `RUST_LOG` instead of `info`.
    pub(crate) fn log_filter(mut self, filter: &str) -> Self {
        self.log_filter = filter.to_owned();
        self
    }

    /// Starts the broker with the node's settings plus `extra`, and waits until it listens.
    pub(crate) async fn start(&mut self, extra: &[String]) -> Broker {
        match self.try_start(extra).await {
            Ok(broker) => broker,
            Err((status, output)) => {
                panic!("the broker exited during start ({status}); its output:\n{output}")
            }
        }
    }

    /// [`Self::start`], or the exit status and output of a broker that refused to start.
    pub(crate) async fn try_start(
        &mut self,
        extra: &[String],
    ) -> Result<Broker, (ExitStatus, String)> {
        self.starts += 1;
        let log_path = self.logs.join(format!("broker-{}.log", self.starts));
        let out = File::create(&log_path).unwrap();
        let err = out.try_clone().unwrap();
        let bin = env!("CARGO_BIN_EXE_kafka-broker");
        let mut cmd = match self.nofile {
            Some(n) => {
                let mut c = Command::new(PRLIMIT);
                c.arg(format!("--nofile={n}:{n}")).arg("--").arg(bin);
                c
            }
            None => Command::new(bin),
        };
        cmd.arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(&self.data_dir);
        for kv in self.settings.iter().chain(extra) {
            cmd.arg("--set").arg(kv);
        }
        cmd.env("RUST_LOG", &self.log_filter)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd.spawn().unwrap();
        let mut broker = Broker {
            child,
            addr: String::new(),
            log_path,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(addr) = listening_addr(&broker.log()) {
                broker.addr = addr;
                return Ok(broker);
            }
            if let Some(status) = broker.child.try_wait().unwrap() {
                return Err((status, broker.log()));
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not listen within {START_TIMEOUT:?}; its output:\n{}",
                broker.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Whether the cleaner has cleaned everything up to the active segment: its checkpoint (the
/// first dirty offset) equals the base offset of the newest segment file.
pub(crate) fn cleaned_up_to_active(log_dir: &Path) -> bool {
    let checkpoint = std::fs::read_to_string(log_dir.join("cleaner-offset-checkpoint"))
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse::<i64>().ok()));
    let active = std::fs::read_dir(log_dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter_map(|n| n.strip_suffix(".log")?.parse::<i64>().ok())
                .max()
        })
        .ok()
        .flatten();
    checkpoint.is_some() && checkpoint == active
}

/// A running broker process; dropping the handle kills it.
pub(crate) struct Broker {
    child: Child,
    /// `host:port` it listens on.
    pub(crate) addr: String,
    log_path: PathBuf,
}

impl Broker {
    /// Waits until the log cleaner has cleaned the partition in `log_dir` up to its active
    /// segment ([`cleaned_up_to_active`]).
    pub(crate) async fn wait_until_cleaned(&self, log_dir: &Path, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !cleaned_up_to_active(log_dir) {
            assert!(
                Instant::now() < deadline,
                "the cleaner did not reach the active segment of {} within {timeout:?}; \
                 broker output:\n{}",
                log_dir.display(),
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Its output so far, without terminal colour codes.
    pub(crate) fn log(&self) -> String {
        let raw = std::fs::read(&self.log_path).unwrap_or_default();
        strip_ansi(&String::from_utf8_lossy(&raw))
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, then reaps the process: nothing of the broker runs after this returns.
    pub(crate) fn kill(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "the broker died on its own ({status}) before it was killed; output:\n{}",
                self.log()
            );
        }
        // `Child::kill` sends SIGKILL on Unix.
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        assert!(!status.success(), "a SIGKILLed broker exited with success");
    }

    /// SIGTERM (a clean shutdown), waiting for the process to exit; returns its status.
    pub(crate) async fn terminate(&mut self) -> ExitStatus {
        send_signal(self.pid(), libc::SIGTERM);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                self.kill();
                panic!(
                    "the broker did not stop within {STOP_TIMEOUT:?} of SIGTERM; output:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

#[allow(unsafe_code)]
fn send_signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: kill(2) takes plain integers and touches no memory of this process; the pid is
    // our own child, not yet reaped (the caller holds its `Child`), so it cannot be reused.
    let rc = unsafe { libc::kill(pid, signal) };
    assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
}

/// The address in the broker's "kafka-broker listening on ADDR, data in ..." line.
fn listening_addr(log: &str) -> Option<String> {
    let rest = log.split("kafka-broker listening on ").nth(1)?;
    let addr = rest.split(',').next()?;
    (rest.contains(',') && !addr.is_empty()).then(|| addr.trim().to_owned())
}

/// Removes ANSI escape sequences (`ESC [ ... final byte`), in case colours are on.
pub(crate) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// A tmpfs mounted on a directory for the life of the guard.
pub(crate) struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `2m`) on `dir`; the error says why not (no permission
    /// in a container, no `mount` program, ...).
    pub(crate) fn mount(dir: &Path, size: &str) -> Result<Self, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if out.status.success() {
            Ok(Self {
                dir: dir.to_owned(),
            })
        } else {
            Err(format!(
                "mount -t tmpfs failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Busy (a process still has a file open): detach it now, it goes once released.
            let lazy = Command::new("umount").arg("-l").arg(&self.dir).status();
            if !lazy.is_ok_and(|s| s.success()) {
                eprintln!(
                    "WARNING: could not unmount the tmpfs on {}",
                    self.dir.display()
                );
            }
        }
    }
}
