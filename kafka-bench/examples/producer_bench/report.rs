//! The producer bench's results: the table and the JSON object.

use kafka_bench::harness::num;

use crate::cases::Mode;
use crate::phase::PhaseResult;
use crate::{Pair, Row, speed_ratio};

pub(crate) fn print_table(rows: &[Row]) {
    println!(
        "\n| {:<34} | {:<14} | {:>9} | {:>10} | {:>7} | {:>9} | {:>11} | {:>9} | {:>8} | {:>8} | {:>7} | {:>9} | {:>8} |",
        "case",
        "client",
        "records",
        "records/s",
        "MB/s",
        "commits/s",
        "CPU s/M rec",
        "peak RSS",
        "p50 ms",
        "p99 ms",
        "rec/req",
        "broker µs",
        "ours/rdk"
    );
    println!(
        "|{:-<36}|{:-<16}|{:-<11}|{:-<12}|{:-<9}|{:-<11}|{:-<13}|{:-<11}|{:-<10}|{:-<10}|{:-<9}|{:-<11}|{:-<10}|",
        "", "", "", "", "", "", "", "", "", "", "", "", ""
    );
    for row in rows {
        let mut lines = vec![
            ("ours", &row.ours, row.ratio()),
            ("librdkafka", &row.librdkafka, f64::NAN),
        ];
        if let Some(t) = &row.tls {
            lines.push(("ours TLS", &t.ours, t.ratio()));
            lines.push(("librdkafka TLS", &t.librdkafka, f64::NAN));
        }
        for (client, r, ratio) in lines {
            let ratio = if ratio.is_finite() {
                format!("{ratio:.2}x")
            } else {
                String::new()
            };
            let commits = if row.case.txn > 0 {
                format!("{:.0}", r.commits_per_sec())
            } else {
                "-".into()
            };
            println!(
                "| {:<34} | {:<14} | {:>9} | {:>10.0} | {:>7.1} | {:>9} | {:>11.2} | {:>5.1} MiB | {:>8.2} | {:>8.2} | {:>7.0} | {:>9.2} | {:>8} |",
                if client == "ours" {
                    row.case.name()
                } else {
                    String::new()
                },
                client,
                r.acked,
                r.per_sec(),
                r.mb_per_sec(row.case.size),
                commits,
                r.cpu_per_m(),
                r.rss_kib as f64 / 1024.0,
                r.p50_ms,
                r.p99_ms,
                r.records_per_request(),
                r.broker_us_per_record(),
                ratio
            );
        }
    }
    println!(
        "\nrecords/s and MB/s (record values): from the first send to the last acknowledgement \
         (transactions: to the last commit). commits/s: transactions committed per second. \
         CPU: the client process, all threads, over that time. p50/p99: send call to delivery \
         callback. rec/req: records per Produce request. broker µs: broker CPU per record \
         over the phase."
    );
    if rows.iter().any(|r| r.tls.is_some()) {
        println!(
            "\nTLS rows: the same phases over the broker's SSL listener, in the same rounds. \
             TLS/plaintext records/s (each client's best round):"
        );
        for row in rows {
            if let Some(t) = &row.tls {
                println!(
                    "  {:<34} ours {:.2}x, librdkafka {:.2}x; broker µs/record over TLS: ours \
                     {:.2}, librdkafka {:.2}",
                    row.case.name(),
                    speed_ratio(&t.ours, &row.ours),
                    speed_ratio(&t.librdkafka, &row.librdkafka),
                    t.ours.broker_us_per_record(),
                    t.librdkafka.broker_us_per_record()
                );
            }
        }
    }
}

/// The `tls` object of a case: both clients over TLS, their ratio, and TLS/plaintext per
/// client.
fn tls_json(row: &Row, t: &Pair) -> String {
    let all: Vec<String> = t
        .rounds
        .iter()
        .map(|(o, l)| format!("[{},{}]", num(*o, 0), num(*l, 0)))
        .collect();
    format!(
        "{{\"ratio\":{},\"cpu_ratio\":{},\"ours_tls_to_plaintext\":{},\
         \"librdkafka_tls_to_plaintext\":{},\"rounds_records_per_s\":[{}],\"ours\":{},\
         \"librdkafka\":{}}}",
        num(t.ratio(), 3),
        num(t.cpu_ratio(), 3),
        num(speed_ratio(&t.ours, &row.ours), 3),
        num(speed_ratio(&t.librdkafka, &row.librdkafka), 3),
        all.join(","),
        phase_json(&t.ours, row.case.size),
        phase_json(&t.librdkafka, row.case.size)
    )
}

pub(crate) fn phase_json(r: &PhaseResult, size: usize) -> String {
    format!(
        "{{\"sent\":{},\"acked\":{},\"failed\":{},\"seconds\":{},\"records_per_s\":{},\
         \"mb_per_s\":{},\"cpu_s\":{},\"cpu_s_per_million\":{},\"peak_rss_kib\":{},\
         \"p50_ms\":{},\"p99_ms\":{},\"p999_ms\":{},\"max_ms\":{},\"broker_cpu_s\":{},\
         \"broker_us_per_record\":{},\"requests\":{},\"records_per_request\":{},\
         \"records_per_batch\":{},\"other_load_cores\":{},\"commits\":{},\
         \"commits_per_s\":{}}}",
        r.sent,
        r.acked,
        r.failed,
        num(r.seconds, 3),
        num(r.per_sec(), 0),
        num(r.mb_per_sec(size), 2),
        num(r.cpu_s, 2),
        num(r.cpu_per_m(), 3),
        r.rss_kib,
        num(r.p50_ms, 3),
        num(r.p99_ms, 3),
        num(r.p999_ms, 3),
        num(r.max_ms, 3),
        num(r.broker_cpu_s, 2),
        num(r.broker_us_per_record(), 3),
        r.requests,
        num(r.records_per_request(), 1),
        num(r.records_per_batch, 1),
        num(r.other_cores, 2),
        r.commits,
        if r.commits > 0 {
            num(r.commits_per_sec(), 1)
        } else {
            "null".into()
        }
    )
}

/// The whole result as one line of JSON.
pub(crate) fn to_json(rows: &[Row], mode: Mode, rounds: usize, tls_fetch: Option<&str>) -> String {
    let cases: Vec<String> = rows
        .iter()
        .map(|row| {
            let c = &row.case;
            let all: Vec<String> = row
                .rounds
                .iter()
                .map(|(o, l)| format!("[{},{}]", num(*o, 0), num(*l, 0)))
                .collect();
            format!(
                "{{\"case\":\"{}\",\"record_bytes\":{},\"acks\":\"{}\",\"keyed\":{},\
                 \"partitions\":{},\"records\":{},\"rate_per_s\":{},\
                 \"records_per_transaction\":{},\"transactions\":{},\"ratio\":{},\
                 \"commits_ratio\":{},\"cpu_ratio\":{},\"rounds_records_per_s\":[{}],\
                 \"ours\":{},\"librdkafka\":{},\"tls\":{}}}",
                c.name(),
                c.size,
                if c.acks_all { "all" } else { "1" },
                c.keyed,
                c.partitions,
                c.records,
                c.rate.map_or_else(|| "null".into(), |r| r.to_string()),
                if c.txn > 0 {
                    c.txn.to_string()
                } else {
                    "null".into()
                },
                if c.txn > 0 {
                    c.transactions().to_string()
                } else {
                    "null".into()
                },
                num(row.ratio(), 3),
                if c.txn > 0 {
                    num(
                        row.ours.commits_per_sec() / row.librdkafka.commits_per_sec().max(1e-9),
                        3,
                    )
                } else {
                    "null".into()
                },
                num(
                    row.ours.cpu_per_m() / row.librdkafka.cpu_per_m().max(1e-9),
                    3
                ),
                all.join(","),
                phase_json(&row.ours, c.size),
                phase_json(&row.librdkafka, c.size),
                row.tls
                    .as_ref()
                    .map_or_else(|| "null".into(), |t| tls_json(row, t))
            )
        })
        .collect();
    let head = rows.iter().find(|r| r.case.is_headline());
    let get = |f: &dyn Fn(&Row) -> f64| head.map_or_else(|| "null".into(), |r| num(f(r), 3));
    format!(
        "{{\"bench\":\"producer\",\"librdkafka\":\"{}\",\"mode\":\"{}\",\"rounds\":{rounds},\
         \"settings\":\"linger.ms=5 batch.size=16384 compression.type=none \
         max.in.flight.requests.per.connection=5 enable.idempotence=(acks==all) \
         32 MiB queue; librdkafka partitioner=murmur2_random; transactional cases: \
         transactional.id per phase, records round-robin over the partitions\",\
         \"headline\":\"100 B acks=1 unkeyed 8p\",\"ours_records_per_s\":{},\
         \"librdkafka_records_per_s\":{},\"ratio\":{},\"ours_cpu_s_per_million\":{},\
         \"librdkafka_cpu_s_per_million\":{},\"ours_p99_ms\":{},\"librdkafka_p99_ms\":{},\
         \"tls\":{},\"tls_fetch\":{},\"cases\":[{}]}}",
        rdkafka::util::get_rdkafka_version().1,
        mode.name(),
        get(&|r| r.ours.per_sec()),
        get(&|r| r.librdkafka.per_sec()),
        get(&|r| r.ratio()),
        get(&|r| r.ours.cpu_per_m()),
        get(&|r| r.librdkafka.cpu_per_m()),
        get(&|r| r.ours.p99_ms),
        get(&|r| r.librdkafka.p99_ms),
        tls_fetch.is_some(),
        tls_fetch.map_or_else(|| "null".into(), |p| format!("\"{p}\"")),
        cases.join(",")
    )
}
