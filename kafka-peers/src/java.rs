//! The Java world: Apache Kafka's jars (resolved by `kafka-peers/fetch`), a JVM to run their
//! main classes (the broker, Kafka's tools), and the small programs of `kafka-peers/java/src`
//! compiled against them with `javac`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::{Run, run};
use crate::{PeerError, crate_dir, peers_dir};

/// The Apache Kafka version the jars are pinned to (`kafka-peers/java/pom.xml`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// Heap of every JVM a test starts unless it says otherwise: several run next to our broker on
/// a 2-core machine.
pub const DEFAULT_HEAP: &str = "-Xmx512m";

/// A JVM with Apache Kafka's jars (and, after [`Jvm::with_programs`], our Java programs) on its
/// class path.
#[derive(Debug, Clone)]
pub struct Jvm {
    java: PathBuf,
    classpath: Vec<PathBuf>,
}

impl Jvm {
    /// Apache Kafka's jars from the cache, and `java` from `JAVA_HOME` or the path.
    pub fn find() -> Result<Jvm, PeerError> {
        let libs = libs_dir();
        if !libs.join("../complete").exists() {
            return Err(PeerError::Missing(format!(
                "Apache Kafka {KAFKA_VERSION} jars are not in {}",
                libs.display()
            )));
        }
        let java = match std::env::var_os("JAVA_HOME") {
            Some(home) => PathBuf::from(home).join("bin/java"),
            None => PathBuf::from("java"),
        };
        if Command::new(&java).arg("-version").output().is_err() {
            return Err(PeerError::Missing(format!("cannot run {}", java.display())));
        }
        Ok(Jvm {
            java,
            classpath: vec![libs.join("*")],
        })
    }

    /// This JVM with the programs of `kafka-peers/java/src` compiled (once per edit of their
    /// sources, shared by every test process) and on its class path.
    pub fn with_programs(mut self) -> Result<Jvm, PeerError> {
        let classes = compile(&self)?;
        self.classpath.insert(0, classes);
        Ok(self)
    }

    /// The class path, as `java -cp` takes it.
    pub fn classpath(&self) -> String {
        let parts: Vec<String> = self
            .classpath
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        parts.join(":")
    }

    /// `java` with the heap bound, quiet logging (warnings and worse on stderr) and the class
    /// path; the caller adds the main class's arguments.
    pub fn command(&self, main: &str) -> Command {
        self.command_with(&[], main)
    }

    /// [`Jvm::command`] with extra JVM options (`-D...`, a larger heap) before the main class.
    pub fn command_with(&self, jvm_options: &[&str], main: &str) -> Command {
        let mut cmd = Command::new(&self.java);
        cmd.arg(DEFAULT_HEAP)
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
            .arg("-Dorg.slf4j.simpleLogger.logFile=System.err")
            .args(jvm_options)
            .arg("-cp")
            .arg(self.classpath())
            .arg(main);
        cmd
    }

    /// `java` with the class path and `jvm_options` only (none of the test defaults: the
    /// caller sets heap, collector and compiler, as a benchmark of a server does).
    pub fn command_bare(&self, jvm_options: &[&str], main: &str) -> Command {
        let mut cmd = Command::new(&self.java);
        cmd.args(jvm_options)
            .arg("-cp")
            .arg(self.classpath())
            .arg(main);
        cmd
    }

    /// Runs `main` with `args` (and `stdin` fed to it) to its end; a non-zero exit or a run
    /// longer than `timeout` is an error carrying what it printed.
    pub fn run(
        &self,
        main: &str,
        args: &[&str],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Run, PeerError> {
        let mut cmd = self.command(main);
        cmd.args(args);
        let out = run(cmd, stdin, timeout)?;
        if out.success() {
            Ok(out)
        } else {
            Err(PeerError::Failed(format!(
                "java {main} {args:?} failed: {}",
                out.describe()
            )))
        }
    }
}

/// Where `fetch` puts Apache Kafka's jars.
pub fn libs_dir() -> PathBuf {
    peers_dir().join(format!("kafka-{KAFKA_VERSION}/libs"))
}

/// The folder of our Java programs' sources.
pub fn sources_dir() -> PathBuf {
    crate_dir().join("java/src")
}

/// Compiles every `.java` file of [`sources_dir`] into `java-classes/<hash of the sources>/`
/// unless that folder exists. Several test processes may race here: each compiles into its
/// own temporary folder and renames it into place; the loser's copy is dropped.
fn compile(jvm: &Jvm) -> Result<PathBuf, PeerError> {
    let mut sources = Vec::new();
    collect_java(&sources_dir(), &mut sources)?;
    sources.sort();
    let mut hasher = DefaultHasher::new();
    for s in &sources {
        s.hash(&mut hasher);
        std::fs::read(s)
            .map_err(PeerError::io(format!("reading {}", s.display())))?
            .hash(&mut hasher);
    }
    let out = peers_dir()
        .join("java-classes")
        .join(format!("{:016x}", hasher.finish()));
    if out.exists() {
        return Ok(out);
    }
    let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(PeerError::io(format!("creating {}", tmp.display())))?;
    let javac = jvm
        .java
        .parent()
        .map(|bin| bin.join("javac"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("javac"));
    let mut cmd = Command::new(javac);
    cmd.arg("-nowarn")
        .arg("-d")
        .arg(&tmp)
        .arg("-cp")
        .arg(jvm.classpath())
        .args(&sources);
    let result = run(cmd, None, Duration::from_secs(300))?;
    if !result.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(PeerError::Failed(format!(
            "javac failed: {}",
            result.describe()
        )));
    }
    if std::fs::rename(&tmp, &out).is_err() {
        // Another process put its copy there first.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(out)
}

fn collect_java(dir: &Path, into: &mut Vec<PathBuf>) -> Result<(), PeerError> {
    let entries =
        std::fs::read_dir(dir).map_err(PeerError::io(format!("listing {}", dir.display())))?;
    for entry in entries {
        let path = entry
            .map_err(PeerError::io(format!("listing {}", dir.display())))?
            .path();
        if path.is_dir() {
            collect_java(&path, into)?;
        } else if path.extension().is_some_and(|e| e == "java") {
            into.push(path);
        }
    }
    Ok(())
}
