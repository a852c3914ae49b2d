//! What the cluster benchmarks share besides the cluster: their command-line options, their
//! `main`, progress output, and measurements over rounds summarized as min / median / max.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::harness::Error;

/// `broker.heartbeat.interval.ms` (at most a third of the session timeout).
const HEARTBEAT_MS: u64 = 500;

/// Milliseconds of `d`.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A benchmark's `main`: runs `bench` on `rt` (whatever it holds, the nodes and the data
/// directory, is dropped before the exit) and turns an error into a message on stderr and a
/// failed exit.
pub fn run_main<F>(rt: std::io::Result<tokio::runtime::Runtime>, bench: F) -> ExitCode
where
    F: Future<Output = Result<(), Error>>,
{
    let result = match rt {
        Ok(rt) => rt.block_on(bench),
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Flushes what a benchmark printed so far (progress lines without a newline, or piped).
pub fn progress_flush() {
    let _ = std::io::stdout().flush();
}

/// What the cluster benchmarks take on the command line: `--broker PATH [--quick]
/// [--rounds N] [--session-timeout-ms MS] [--json] [--out PATH] [--dir PATH]`.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The `kafka-broker` binary.
    pub broker: PathBuf,
    pub quick: bool,
    pub rounds: usize,
    /// `broker.session.timeout.ms` of every node (default 3000).
    pub session_timeout_ms: u64,
    /// Print the result as JSON on the last line.
    pub json: bool,
    /// Write the JSON here too.
    pub out: Option<PathBuf>,
    /// Where the data directory goes (default: the temp dir).
    pub dir: Option<PathBuf>,
}

impl BenchOptions {
    /// Parses `args`; without `--rounds`, `rounds` rounds (`quick_rounds` with `--quick`),
    /// and at most `max_rounds`.
    pub fn parse(
        args: &[String],
        rounds: usize,
        quick_rounds: usize,
        max_rounds: usize,
    ) -> Result<Self, Error> {
        let mut quick = false;
        let mut given_rounds = None;
        let mut broker = None;
        let mut session_timeout_ms = 3000;
        let mut json = false;
        let mut out = None;
        let mut dir = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "--quick" => quick = true,
                "--json" => json = true,
                "--rounds" => {
                    let n: usize = it.next().ok_or("--rounds needs a number")?.parse()?;
                    if !(1..=max_rounds).contains(&n) {
                        return Err(format!("--rounds: 1 to {max_rounds}").into());
                    }
                    given_rounds = Some(n);
                }
                "--session-timeout-ms" => {
                    let ms: u64 = it
                        .next()
                        .ok_or("--session-timeout-ms needs a number")?
                        .parse()?;
                    if !(300..=120_000).contains(&ms) {
                        return Err("--session-timeout-ms: 300 to 120000".into());
                    }
                    session_timeout_ms = ms;
                }
                "--broker" => {
                    broker = Some(PathBuf::from(it.next().ok_or("--broker needs a path")?));
                }
                "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a path")?)),
                "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a path")?)),
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        Ok(Self {
            broker: broker.ok_or("say where the broker binary is: --broker PATH")?,
            quick,
            rounds: given_rounds.unwrap_or(if quick { quick_rounds } else { rounds }),
            session_timeout_ms,
            json,
            out,
            dir,
        })
    }

    /// `broker.heartbeat.interval.ms` of every node: 500, at most a third of the session
    /// timeout.
    pub fn heartbeat_ms(&self) -> u64 {
        HEARTBEAT_MS.min(self.session_timeout_ms / 3)
    }

    /// Writes the result `json` to `--out` (saying so, as `what`) and prints it as the last
    /// line with `--json`.
    pub fn emit(&self, what: &str, json: &str) -> Result<(), Error> {
        if let Some(out) = &self.out {
            std::fs::write(out, format!("{json}\n"))?;
            println!("{what}: JSON in {}", out.display());
        }
        if self.json {
            println!("{json}");
        }
        Ok(())
    }

    /// How long a round that waits out a session may take: `base` with the default session
    /// timeout, plus twice what the session timeout has above 3 s.
    pub fn round_limit(&self, base: Duration) -> Duration {
        base + 2 * Duration::from_millis(self.session_timeout_ms.saturating_sub(3000))
    }
}

/// A measurement over rounds: its JSON key, its label in the table and one sample per round.
#[derive(Debug, Clone)]
pub struct Stat {
    pub key: &'static str,
    pub label: &'static str,
    pub samples: Vec<f64>,
}

impl Stat {
    fn sorted(&self) -> Vec<f64> {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        s
    }

    /// The smallest sample (NaN without samples).
    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    /// The largest sample (NaN without samples).
    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }

    /// The median (of the two middle samples, their mean; NaN without samples).
    pub fn median(&self) -> f64 {
        let s = self.sorted();
        match s.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }

    /// `"key":{"min":..,"median":..,"max":..,"samples":[..]}` with `decimals` decimals.
    pub fn to_json(&self, decimals: usize) -> String {
        let num = |x| crate::harness::num(x, decimals);
        let samples: Vec<String> = self.samples.iter().map(|x| num(*x)).collect();
        format!(
            "\"{}\":{{\"min\":{},\"median\":{},\"max\":{},\"samples\":[{}]}}",
            self.key,
            num(self.min()),
            num(self.median()),
            num(self.max()),
            samples.join(",")
        )
    }
}

/// Prints `stats` as a table of min / median / max in ms, `note` after each row.
pub fn print_stats(stats: &[Stat], note: impl Fn(&Stat) -> String) {
    println!(
        "{:<46} {:>10} {:>10} {:>10}",
        "measurement (ms)", "min", "median", "max"
    );
    for s in stats {
        println!(
            "{:<46} {:>10.1} {:>10.1} {:>10.1}{}",
            s.label,
            s.min(),
            s.median(),
            s.max(),
            note(s)
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn stats_over_rounds() {
        let s = Stat {
            key: "k",
            label: "l",
            samples: vec![3.0, 1.0, 2.0, 10.0],
        };
        assert_eq!((s.min(), s.median(), s.max()), (1.0, 2.5, 10.0));
        assert_eq!(
            s.to_json(1),
            "\"k\":{\"min\":1.0,\"median\":2.5,\"max\":10.0,\"samples\":[3.0,1.0,2.0,10.0]}"
        );
        let none = Stat {
            samples: vec![],
            ..s
        };
        assert!(none.median().is_nan());
        assert!(none.to_json(0).contains("\"min\":null"));
    }

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_of_the_cluster_benchmarks() {
        let o = BenchOptions::parse(&strings(&["--broker", "b", "--quick"]), 10, 3, 100).unwrap();
        assert_eq!(
            (o.rounds, o.session_timeout_ms, o.heartbeat_ms()),
            (3, 3000, 500)
        );
        assert_eq!(
            o.round_limit(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        let o = BenchOptions::parse(
            &strings(&[
                "--broker",
                "b",
                "--rounds",
                "7",
                "--session-timeout-ms",
                "900",
                "--json",
                "--out",
                "o.json",
            ]),
            10,
            3,
            100,
        )
        .unwrap();
        assert_eq!((o.rounds, o.heartbeat_ms(), o.json), (7, 300, true));
        assert_eq!(o.out.as_deref(), Some(Path::new("o.json")));
        let o = BenchOptions::parse(
            &strings(&["--broker", "b", "--session-timeout-ms", "6000"]),
            10,
            3,
            100,
        )
        .unwrap();
        assert_eq!(o.rounds, 10);
        assert_eq!(
            o.round_limit(Duration::from_secs(60)),
            Duration::from_secs(66)
        );
        for bad in [
            &[][..],
            &["--broker", "b", "--rounds", "101"],
            &["--broker", "b", "--rounds", "0"],
            &["--broker", "b", "--session-timeout-ms", "100"],
            &["--broker", "b", "--full"],
            &["--broker"],
        ] {
            assert!(
                BenchOptions::parse(&strings(bad), 10, 3, 100).is_err(),
                "{bad:?}"
            );
        }
    }
}
