//! The summary of a run in rounds (`--baseline`, `--apache-kafka`, `--tls`, `--rounds`): per
//! case and broker the median over the rounds of produce and consume throughput and of broker
//! CPU time per record, the ratios of the first broker to the second (ours/baseline,
//! ours/kafka, tls/plain) from the medians and round by round, and per broker the peak RSS and
//! the latency; as a table and as JSON.

use crate::{Binary, Case, Phase, Row, Run, kib};

/// The median of the finite values of `v` (NaN when there are none).
fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The broker's CPU time (user + system) per record written and read in one case, in ns.
fn cpu_ns_per_record(produce: &Phase, consume: &Phase) -> f64 {
    let records = produce.records + consume.records;
    (produce.broker_cpu + consume.broker_cpu).as_nanos() as f64 / records.max(1) as f64
}

/// One binary's figures for one case: medians over the rounds.
struct CaseFigures {
    produce_per_sec: f64,
    produce_mb_per_sec: f64,
    consume_per_sec: f64,
    consume_mb_per_sec: f64,
    cpu_ns_per_record: f64,
    /// Records not written or not read back, over all rounds.
    errors: u64,
    /// Produce and consume records/s of every round, in order.
    rounds: Vec<(f64, f64)>,
}

impl CaseFigures {
    /// Case `case` (an index into the cases) of `runs`, one binary's runs.
    fn of(runs: &[Run], case: usize) -> Self {
        let rows: Vec<&Row> = runs.iter().filter_map(|r| r.rows.get(case)).collect();
        let med = |f: &dyn Fn(&Row) -> f64| median(rows.iter().map(|r| f(r)).collect());
        Self {
            produce_per_sec: med(&|r| r.produce.per_sec()),
            produce_mb_per_sec: med(&|r| r.produce.mb_per_sec()),
            consume_per_sec: med(&|r| r.consume.per_sec()),
            consume_mb_per_sec: med(&|r| r.consume.mb_per_sec()),
            cpu_ns_per_record: med(&|r| cpu_ns_per_record(&r.produce, &r.consume)),
            errors: rows
                .iter()
                .map(|r| r.produce.errors + r.consume.errors)
                .sum(),
            rounds: rows
                .iter()
                .map(|r| (r.produce.per_sec(), r.consume.per_sec()))
                .collect(),
        }
    }
}

/// One binary's figures over its whole runs: medians over the rounds (peak RSS also the
/// highest).
struct BrokerFigures {
    rss_kib: f64,
    rss_kib_max: Option<u64>,
    cpu_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// kafka-producer-perf-test records/s and average latency (ms).
    perf_test_per_sec: f64,
    perf_test_latency_ms: f64,
}

impl BrokerFigures {
    fn of(runs: &[Run]) -> Self {
        let med = |f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
        Self {
            rss_kib: med(&|r| r.broker_rss.map_or(f64::NAN, |k| k as f64)),
            rss_kib_max: runs.iter().filter_map(|r| r.broker_rss).max(),
            cpu_s: med(&|r| r.broker_cpu.map_or(f64::NAN, |d| d.as_secs_f64())),
            p50_ms: med(&|r| r.latency.p50_ms),
            p99_ms: med(&|r| r.latency.p99_ms),
            perf_test_per_sec: med(&|r| r.perf_test.map_or(f64::NAN, |p| p.0)),
            perf_test_latency_ms: med(&|r| r.perf_test.map_or(f64::NAN, |p| p.1)),
        }
    }
}

/// `a / b`, NaN unless both are finite and `b` is positive.
fn ratio(a: f64, b: f64) -> f64 {
    if a.is_finite() && b.is_finite() && b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// The ratios first/second of produce and consume records/s of case `i` in each round (the
/// two brokers of a round ran back to back, so these see the same machine); empty unless
/// there are two brokers.
fn round_ratios(runs: &[Vec<Run>], i: usize) -> Vec<[f64; 2]> {
    let [first, second] = runs else {
        return Vec::new();
    };
    first
        .iter()
        .zip(second)
        .filter_map(|(a, b)| {
            let (a, b) = (a.rows.get(i)?, b.rows.get(i)?);
            Some([
                ratio(a.produce.per_sec(), b.produce.per_sec()),
                ratio(a.consume.per_sec(), b.consume.per_sec()),
            ])
        })
        .collect()
}

/// The figures of every binary for case `i`; with a second broker, also the ratios
/// first/second of produce and consume throughput and of CPU per record.
fn case_figures(runs: &[Vec<Run>], i: usize) -> (Vec<CaseFigures>, Option<[f64; 3]>) {
    let figs: Vec<CaseFigures> = runs.iter().map(|r| CaseFigures::of(r, i)).collect();
    let ratios = match figs.as_slice() {
        [ours, base] => Some([
            ratio(ours.produce_per_sec, base.produce_per_sec),
            ratio(ours.consume_per_sec, base.consume_per_sec),
            ratio(ours.cpu_ns_per_record, base.cpu_ns_per_record),
        ]),
        _ => None,
    };
    (figs, ratios)
}

fn times(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}x")
    } else {
        "?".into()
    }
}

/// Prints the summary table: a line per case and binary, the ratios on ours.
pub(crate) fn print_summary(
    cases: &[Case],
    binaries: &[Binary],
    runs: &[Vec<Run>],
    disk_mb_s: f64,
) {
    let rounds = runs.first().map_or(0, Vec::len);
    // The brokers the ratios compare: "ours" with "baseline" or "kafka", or "tls" with
    // "plain".
    let first = binaries.first().map_or("ours", |b| b.name);
    let other = binaries.get(1).map_or("base", |b| b.name);
    println!(
        "\n| {:<26} | {:<8} | {:>13} | {:>12} | {:>13} | {:>12} | {:>14} | {:>19} |",
        "case",
        "broker",
        "produce rec/s",
        "produce MB/s",
        "consume rec/s",
        "consume MB/s",
        "broker CPU/rec",
        format!("{first}/{other} p, c, CPU")
    );
    println!(
        "|{:-<28}|{:-<10}|{:-<15}|{:-<14}|{:-<15}|{:-<14}|{:-<16}|{:-<21}|",
        "", "", "", "", "", "", "", ""
    );
    let mut errors = 0;
    for (i, case) in cases.iter().enumerate() {
        let (figs, ratios) = case_figures(runs, i);
        for (b, (bin, f)) in binaries.iter().zip(&figs).enumerate() {
            errors += f.errors;
            let ratios = match ratios {
                Some([p, c, cpu]) if b == 0 => {
                    format!("{}, {}, {}", times(p), times(c), times(cpu))
                }
                _ => String::new(),
            };
            println!(
                "| {:<26} | {:<8} | {:>13.0} | {:>12.1} | {:>13.0} | {:>12.1} | {:>11.0} ns | {:>19} |",
                if b == 0 { case.name() } else { String::new() },
                bin.name,
                f.produce_per_sec,
                f.produce_mb_per_sec,
                f.consume_per_sec,
                f.consume_mb_per_sec,
                f.cpu_ns_per_record,
                ratios
            );
        }
    }
    println!(
        "\nmedians over {rounds} round(s), each on a fresh broker of each binary, alternating \
         which goes first; broker CPU/rec: the broker's user + system time over a case's produce \
         and consume phases per record written and read. {first}/{other}: produce and consume \
         records/s, CPU per record (ratios of the medians)."
    );
    if binaries.len() == 2 {
        println!("{first}/{other} round by round (produce, consume records/s):");
        for (i, case) in cases.iter().enumerate() {
            let each: Vec<String> = round_ratios(runs, i)
                .iter()
                .map(|[p, c]| format!("{} {}", times(*p), times(*c)))
                .collect();
            println!("  {:<26} {}", case.name(), each.join(" | "));
        }
    }
    println!("disk sequential write (256 MiB + fsync): {disk_mb_s:.0} MB/s");
    for (bin, runs) in binaries.iter().zip(runs) {
        let f = BrokerFigures::of(runs);
        println!(
            "{} ({}): peak RSS {} (median; highest {}), CPU {:.2} s per run, latency p50 {:.2} \
             ms, p99 {:.2} ms (medians; 100 B, acks=all, 2,000 msgs/s)",
            bin.name,
            bin.path.display(),
            kib(f.rss_kib.is_finite().then_some(f.rss_kib as u64)),
            kib(f.rss_kib_max),
            f.cpu_s,
            f.p50_ms,
            f.p99_ms
        );
        if f.perf_test_per_sec.is_finite() {
            println!(
                "  kafka-producer-perf-test (the Java producer, acks=all, 100 B): {:.0} records/s, \
                 average latency {:.1} ms (medians)",
                f.perf_test_per_sec, f.perf_test_latency_ms
            );
        }
    }
    if errors > 0 {
        println!("WARNING: {errors} records not written or not read back (see above).");
    }
}

fn num(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "null".into()
    }
}

/// `s` as a JSON string.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The summary as JSON.
pub(crate) fn to_json(
    cases: &[Case],
    binaries: &[Binary],
    runs: &[Vec<Run>],
    disk_mb_s: f64,
    quick: bool,
    tls_fetch: Option<&str>,
) -> String {
    let rounds = runs.first().map_or(0, Vec::len);
    let brokers: Vec<String> = binaries
        .iter()
        .zip(runs)
        .map(|(bin, runs)| {
            let f = BrokerFigures::of(runs);
            format!(
                "    {{\"name\": \"{}\", \"path\": {}, \"peak_rss_kib_median\": {}, \
                 \"peak_rss_kib_max\": {}, \"broker_cpu_s_median\": {}, \
                 \"latency_p50_ms_median\": {}, \"latency_p99_ms_median\": {}, \
                 \"perf_test_records_per_sec_median\": {}, \"perf_test_latency_ms_median\": {}}}",
                bin.name,
                string(&bin.path.display().to_string()),
                num(f.rss_kib, 0),
                f.rss_kib_max
                    .map_or_else(|| "null".into(), |k| k.to_string()),
                num(f.cpu_s, 2),
                num(f.p50_ms, 3),
                num(f.p99_ms, 3),
                num(f.perf_test_per_sec, 0),
                num(f.perf_test_latency_ms, 1)
            )
        })
        .collect();
    let figures = |f: &CaseFigures| {
        let rounds: Vec<String> = f
            .rounds
            .iter()
            .map(|(p, c)| format!("[{}, {}]", num(*p, 0), num(*c, 0)))
            .collect();
        format!(
            "{{\"produce_records_per_sec\": {}, \"produce_mb_per_sec\": {}, \
             \"consume_records_per_sec\": {}, \"consume_mb_per_sec\": {}, \
             \"broker_cpu_ns_per_record\": {}, \"errors\": {}, \
             \"rounds_produce_consume_records_per_sec\": [{}]}}",
            num(f.produce_per_sec, 0),
            num(f.produce_mb_per_sec, 2),
            num(f.consume_per_sec, 0),
            num(f.consume_mb_per_sec, 2),
            num(f.cpu_ns_per_record, 0),
            f.errors,
            rounds.join(", ")
        )
    };
    let cases: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let (figs, ratios) = case_figures(runs, i);
            let mut s = format!(
                "    {{\"case\": \"{}\", \"record_bytes\": {}, \"acks\": \"{}\", \"keyed\": {}, \
                 \"partitions\": {}, \"records\": {}",
                case.name(),
                case.size,
                if case.acks_all { "all" } else { "1" },
                case.keyed,
                case.partitions,
                case.records
            );
            for (bin, f) in binaries.iter().zip(&figs) {
                s.push_str(&format!(",\n     \"{}\": {}", bin.name, figures(f)));
            }
            if let Some([p, c, cpu]) = ratios {
                let each: Vec<String> = round_ratios(runs, i)
                    .iter()
                    .map(|[p, c]| format!("[{}, {}]", num(*p, 3), num(*c, 3)))
                    .collect();
                s.push_str(&format!(
                    ",\n     \"produce_ratio\": {}, \"consume_ratio\": {}, \"cpu_ratio\": {}, \
                     \"rounds_produce_consume_ratio\": [{}]",
                    num(p, 3),
                    num(c, 3),
                    num(cpu, 3),
                    each.join(", ")
                ));
            }
            s.push('}');
            s
        })
        .collect();
    let ratio_of = match binaries {
        [a, b] => string(&format!("{}/{}", a.name, b.name)),
        _ => "null".into(),
    };
    format!(
        "{{\n  \"bench\": \"broker\",\n  \"client\": \"librdkafka {}\",\n  \"quick\": {quick},\n  \
         \"rounds\": {rounds},\n  \"producer\": \"BaseProducer, linger.ms=5, compression none\",\n  \
         \"disk_write_mb_per_sec\": {disk_mb_s:.1},\n  \"ratios\": {},\n  \"tls_fetch\": {},\n  \
         \"brokers\": [\n{}\n  ],\n  \"cases\": [\n{}\n  ]\n}}",
        rdkafka::util::get_rdkafka_version().1,
        ratio_of,
        tls_fetch.map_or_else(|| "null".into(), string),
        brokers.join(",\n"),
        cases.join(",\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_skip_what_is_unknown() {
        assert!(median(vec![]).is_nan());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![f64::NAN, 5.0]), 5.0);
    }

    fn run(produce: &[(u64, u64)]) -> Run {
        let phase = |records: u64, millis: u64| Phase {
            records,
            bytes: records * 100,
            elapsed: std::time::Duration::from_millis(millis),
            broker_cpu: std::time::Duration::ZERO,
            errors: 0,
            first_record: std::time::Duration::ZERO,
        };
        let case = Case {
            size: 100,
            acks_all: false,
            keyed: false,
            partitions: 1,
            records: 1000,
        };
        Run {
            rows: produce
                .iter()
                .map(|&(p, c)| Row {
                    case,
                    produce: phase(1000, p),
                    consume: phase(1000, c),
                })
                .collect(),
            latency: crate::Latency {
                rate: 0,
                sent: 0,
                received: 0,
                p50_ms: f64::NAN,
                p99_ms: f64::NAN,
                p999_ms: f64::NAN,
                max_ms: f64::NAN,
            },
            perf_test: None,
            broker_cpu: None,
            broker_rss: None,
        }
    }

    #[test]
    fn round_ratios_pair_the_brokers_of_each_round() {
        // Case 0 takes (produce ms, consume ms): TLS 2000/1000 then 1000/1000; plaintext
        // 1000/500 then 1000/2000. Ratios are of records/s, first / second, per round.
        let tls = vec![run(&[(2000, 1000)]), run(&[(1000, 1000)])];
        let plain = vec![run(&[(1000, 500)]), run(&[(1000, 2000)])];
        let runs = vec![tls, plain];
        assert_eq!(round_ratios(&runs, 0), [[0.5, 0.5], [1.0, 2.0]]);
        // No such case, or one broker only: nothing.
        assert!(round_ratios(&runs, 1).is_empty());
        assert!(round_ratios(&runs[..1], 0).is_empty());
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
