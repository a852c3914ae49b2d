//! What the client benchmarks (`producer_bench`, `consumer_bench`) share: the clients and run
//! modes, running a release broker as a child process, running measured phases in child
//! processes of their own and accounting for CPU time around them.

use std::fs::File;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::cpu_time_of;
use crate::tls::BrokerTls;

/// The benchmarks' error type.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The client a phase of a client benchmark measures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Client {
    Ours,
    Librdkafka,
}

impl Client {
    /// The name in tables, JSON and phase arguments.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::Librdkafka => "librdkafka",
        }
    }

    /// The client named `s` (see [`name`](Self::name)).
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "ours" => Ok(Self::Ours),
            "librdkafka" => Ok(Self::Librdkafka),
            other => Err(format!("unknown client {other}").into()),
        }
    }
}

/// How many cases a client benchmark runs (`--quick`, the default, `--full`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Quick,
    Default,
    Full,
}

impl Mode {
    /// The name in the headline and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Default => "default",
            Self::Full => "full",
        }
    }
}

/// A child process; killed (and reaped) on drop.
#[derive(Debug)]
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// Creates `<base>/<name>-<pid>`, where `base` is `dir` if given, else `/dev/shm` when
    /// there is one (the clients are measured, not the disk), else the temp dir.
    pub fn new(dir: Option<PathBuf>, name: &str) -> Result<Self, Error> {
        let shm = Path::new("/dev/shm");
        let base = dir.unwrap_or_else(|| {
            if shm.is_dir() {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        });
        let path = base.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The broker a benchmark runs against: our binary as a child process, or Apache Kafka.
#[derive(Debug)]
pub struct Broker {
    pub child: Option<ChildGuard>,
    /// Apache Kafka's node, stopped on drop.
    pub kafka: Option<kafka_peers::ApacheKafka>,
    pub pid: String,
    /// The `PLAINTEXT` listener's `host:port`.
    pub addr: String,
    /// The `SSL` listener's `host:port`, when the broker was started with one
    /// ([`start_broker_with`]).
    pub tls_addr: Option<String>,
}

/// Starts one Apache Kafka node (broker and controller) with Kafka's own server JVM settings
/// and its data under `dir`, from the jars `kafka-peers/fetch` caches.
pub fn start_apache_kafka(dir: &Path) -> Result<Broker, Error> {
    let jvm = kafka_peers::Jvm::find()?;
    let kafka = kafka_peers::ApacheKafka::start(
        &jvm,
        &kafka_peers::KafkaOptions {
            server_jvm: true,
            base_dir: Some(dir.to_path_buf()),
            ..Default::default()
        },
    )?;
    let pid = kafka
        .pid(0)
        .ok_or("Apache Kafka is not running")?
        .to_string();
    Ok(Broker {
        child: None,
        pid,
        addr: kafka.bootstrap(),
        tls_addr: None,
        kafka: Some(kafka),
    })
}

/// Starts the broker binary at `path` on a free loopback port with its data in
/// `dir/data` (log in `dir/broker.log`) and waits until it accepts connections.
pub fn start_broker(path: &Path, dir: &Path) -> Result<Broker, Error> {
    start_broker_with(path, dir, None)
}

/// A free loopback port: bind to port 0, note the port, release it.
fn free_port() -> Result<u16, Error> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// [`start_broker`], and with `tls` a second listener, `SSL`, on another free loopback port
/// ([`Broker::tls_addr`]) serving `tls`'s keystore; waits until both accept connections.
pub fn start_broker_with(
    path: &Path,
    dir: &Path,
    tls: Option<&BrokerTls>,
) -> Result<Broker, Error> {
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(path);
    cmd.arg("--listen").arg(&addr);
    let mut tls_addr = None;
    if let Some(tls) = tls {
        let tls_port = free_port()?;
        for kv in tls.broker_settings(port, tls_port) {
            cmd.arg("--set").arg(kv);
        }
        tls_addr = Some(format!("127.0.0.1:{tls_port}"));
    }
    let log = File::create(dir.join("broker.log"))?;
    let child = cmd
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", path.display()))?;
    let mut broker = Broker {
        pid: child.id().to_string(),
        child: Some(ChildGuard(child)),
        kafka: None,
        addr,
        tls_addr,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listening = |a: &str| TcpStream::connect(a).is_ok();
        if listening(&broker.addr) && broker.tls_addr.as_deref().is_none_or(listening) {
            return Ok(broker);
        }
        let exited = match broker.child.as_mut() {
            Some(c) => c.0.try_wait()?,
            None => None,
        };
        if let Some(status) = exited {
            return Err(format!(
                "the broker exited ({status}); see {}",
                dir.join("broker.log").display()
            )
            .into());
        }
        if Instant::now() > deadline {
            return Err("the broker did not start listening within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Busy CPU time of the whole machine so far (all cores, `/proc/stat`), in seconds.
pub fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let busy: u64 = ticks.iter().take(8).sum::<u64>() - ticks.get(3)? - ticks.get(4)?;
    Some(busy as f64 / 100.0)
}

/// CPU seconds this process used since `start` (a `cpu_time_of("self")` reading).
pub fn cpu_since(start: Option<Duration>) -> f64 {
    cpu_time_of("self")
        .zip(start)
        .map_or(f64::NAN, |(b, a)| b.saturating_sub(a).as_secs_f64())
}

/// What [`run_self`] saw of a child run.
#[derive(Debug)]
pub struct ChildRun {
    pub status: ExitStatus,
    /// Everything the child printed on stdout (its stderr goes to ours).
    pub stdout: String,
    /// Wall time of the child's life, seconds.
    pub wall_s: f64,
    /// CPU seconds process `watch` (the broker) used over the child's life.
    pub watched_cpu_s: f64,
    /// CPU seconds the whole machine was busy over the child's life.
    pub machine_busy_s: f64,
}

/// Runs this executable with `args` as a child process, killing it after `deadline`;
/// measures the CPU time of process `watch` and of the machine meanwhile.
pub fn run_self(args: &[String], deadline: Duration, watch: &str) -> Result<ChildRun, Error> {
    let watched0 = cpu_time_of(watch);
    let (busy0, wall0) = (machine_busy(), Instant::now());
    let mut child = ChildGuard(
        Command::new(std::env::current_exe()?)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?,
    );
    let mut stdout = child.0.stdout.take().ok_or("child has no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.0.try_wait()? {
            break status;
        }
        if Instant::now() > until {
            return Err(format!("child still running after {} s", deadline.as_secs()).into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let watched_cpu_s = cpu_time_of(watch)
        .zip(watched0)
        .map_or(f64::NAN, |(b, a)| b.saturating_sub(a).as_secs_f64());
    let machine_busy_s = machine_busy().zip(busy0).map_or(f64::NAN, |(b, a)| b - a);
    let wall_s = wall0.elapsed().as_secs_f64();
    let stdout = reader.join().map_err(|_| "stdout reader panicked")?;
    Ok(ChildRun {
        status,
        stdout,
        wall_s,
        watched_cpu_s,
        machine_busy_s,
    })
}

/// Extra settings from environment variable `var` (`key=value,...`), for experiments.
pub fn extra_settings(var: &str) -> Result<Vec<(String, String)>, Error> {
    let Ok(s) = std::env::var(var) else {
        return Ok(Vec::new());
    };
    s.split(',')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| format!("{var}: expected key=value, got {kv}"))
        })
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

/// `x` with `decimals` decimals, or JSON `null` when not finite.
pub fn num(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "null".into()
    }
}

/// Topic administration through librdkafka's admin client.
#[cfg(feature = "rdkafka")]
pub mod topics {
    use std::time::Duration;

    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::config::ClientConfig;

    use super::Error;

    fn admin(addr: &str) -> Result<AdminClient<DefaultClientContext>, Error> {
        Ok(ClientConfig::new()
            .set("bootstrap.servers", addr)
            .create()?)
    }

    /// Creates `topic` with `partitions` partitions (replication factor 1).
    pub fn create(addr: &str, topic: &str, partitions: i32) -> Result<(), Error> {
        let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        let results = futures::executor::block_on(admin(addr)?.create_topics([&new], &opts))?;
        for r in results {
            if let Err((t, e)) = r {
                return Err(format!("creating topic {t}: {e}").into());
            }
        }
        Ok(())
    }

    /// Deletes `topic`.
    pub fn delete(addr: &str, topic: &str) -> Result<(), Error> {
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        let results = futures::executor::block_on(admin(addr)?.delete_topics(&[topic], &opts))?;
        for r in results {
            if let Err((t, e)) = r {
                return Err(format!("deleting topic {t}: {e}").into());
            }
        }
        Ok(())
    }
}
