//! The consumer bench's results: the table and the JSON object.

use kafka_bench::harness::num;

use crate::cases::Mode;
use crate::phase::PhaseResult;
use crate::{ABORT_EVERY, FETCH_QUEUE_BACKOFF_MS, FILL_TXN, Pair, Row, speed_ratio};

pub(crate) fn print_table(rows: &[Row]) {
    println!(
        "\n| {:<23} | {:<14} | {:>10} | {:>10} | {:>7} | {:>11} | {:>9} | {:>8} | {:>7} | {:>9} | {:>9} | {:>8} |",
        "case",
        "client",
        "records",
        "records/s",
        "MB/s",
        "CPU s/M rec",
        "peak RSS",
        "first ms",
        "fetches",
        "rec/fetch",
        "broker µs",
        "ours/rdk"
    );
    println!(
        "|{:-<25}|{:-<16}|{:-<12}|{:-<12}|{:-<9}|{:-<13}|{:-<11}|{:-<10}|{:-<9}|{:-<11}|{:-<11}|{:-<10}|",
        "", "", "", "", "", "", "", "", "", "", "", ""
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
            println!(
                "| {:<23} | {:<14} | {:>10} | {:>10.0} | {:>7.1} | {:>11.3} | {:>5.1} MiB | {:>8.0} | {:>7} | {:>9.0} | {:>9.3} | {:>8} |",
                if client == "ours" {
                    row.case.name()
                } else {
                    String::new()
                },
                client,
                r.records,
                r.per_sec(),
                r.mb_per_sec(),
                r.cpu_per_m(),
                r.rss_kib as f64 / 1024.0,
                r.first_ms,
                r.fetches,
                r.records_per_fetch(),
                r.broker_us_per_record(),
                ratio
            );
        }
    }
    println!(
        "\nrecords/s and MB/s (record values): from assign to the last record, best round. \
         CPU: the client process, all threads, over that time. first ms: assign to the first \
         record. fetches: Fetch requests (librdkafka: from its statistics, to within a few). \
         broker µs: broker CPU per record over the phase."
    );
    if rows.iter().any(|r| r.tls.is_some()) {
        println!(
            "\nTLS rows: the same phases over the broker's SSL listener, in the same rounds. \
             TLS/plaintext records/s (each client's best round):"
        );
        for row in rows {
            if let Some(t) = &row.tls {
                println!(
                    "  {:<23} ours {:.2}x, librdkafka {:.2}x; broker µs/record over TLS: ours \
                     {:.3}, librdkafka {:.3}",
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
        phase_json(&t.ours),
        phase_json(&t.librdkafka)
    )
}

pub(crate) fn phase_json(r: &PhaseResult) -> String {
    format!(
        "{{\"records\":{},\"value_bytes\":{},\"checksum\":{},\"seconds\":{},\
         \"records_per_s\":{},\"mb_per_s\":{},\"first_record_ms\":{},\"cpu_s\":{},\
         \"cpu_s_per_million\":{},\"peak_rss_kib\":{},\"fetch_requests\":{},\
         \"records_per_fetch\":{},\"buffered_bytes_max\":{},\"broker_cpu_s\":{},\
         \"broker_us_per_record\":{},\"other_load_cores\":{},\"extra_records\":{}}}",
        r.records,
        r.bytes,
        r.checksum,
        num(r.seconds, 3),
        num(r.per_sec(), 0),
        num(r.mb_per_sec(), 2),
        num(r.first_ms, 1),
        num(r.cpu_s, 2),
        num(r.cpu_per_m(), 3),
        r.rss_kib,
        r.fetches,
        num(r.records_per_fetch(), 1),
        r.buffered_max,
        num(r.broker_cpu_s, 2),
        num(r.broker_us_per_record(), 3),
        num(r.other_cores, 2),
        r.extra
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
                "{{\"case\":\"{}\",\"record_bytes\":{},\"partitions\":{},\"records\":{},\
                 \"compression\":\"{}\",\"check_crcs\":{},\"read_committed\":{},\
                 \"verified\":{},\"ratio\":{},\
                 \"cpu_ratio\":{},\"rounds_records_per_s\":[{}],\"ours\":{},\"librdkafka\":{},\
                 \"tls\":{}}}",
                c.name(),
                c.size,
                c.partitions,
                c.records,
                c.compression,
                c.check_crcs,
                c.read_committed,
                row.verified,
                num(row.ratio(), 3),
                num(row.cpu_ratio(), 3),
                all.join(","),
                phase_json(&row.ours),
                phase_json(&row.librdkafka),
                row.tls
                    .as_ref()
                    .map_or_else(|| "null".into(), |t| tls_json(row, t))
            )
        })
        .collect();
    let head = rows.iter().find(|r| r.case.is_headline());
    let get =
        |f: &dyn Fn(&Row) -> f64, d: usize| head.map_or_else(|| "null".into(), |r| num(f(r), d));
    format!(
        "{{\"bench\":\"consumer\",\"librdkafka\":\"{}\",\"mode\":\"{}\",\"rounds\":{rounds},\
         \"settings\":\"fetch.min.bytes=1 fetch.max.wait.ms=500 \
         max.partition.fetch.bytes=1048576 fetch.max.bytes=52428800 check.crcs as per case \
         64 MiB fetched ahead (ours fetch.buffer.max.bytes, librdkafka \
         queued.max.messages.kbytes); socket receive buffer: OS default; librdkafka fetch.queue.backoff.ms={FETCH_QUEUE_BACKOFF_MS}; \
         assign from the beginning; read_committed case: isolation.level=read_committed on \
         both, topic of committed transactions of {FILL_TXN} records and 1 in {ABORT_EVERY} \
         aborted\",\
         \"headline\":\"{}\",\"ours_records_per_s\":{},\"librdkafka_records_per_s\":{},\
         \"ratio\":{},\"ours_mb_per_s\":{},\"librdkafka_mb_per_s\":{},\
         \"ours_cpu_s_per_million\":{},\"librdkafka_cpu_s_per_million\":{},\
         \"ours_peak_rss_kib\":{},\"librdkafka_peak_rss_kib\":{},\"verified\":{},\
         \"tls\":{},\"tls_fetch\":{},\"cases\":[{}]}}",
        rdkafka::util::get_rdkafka_version().1,
        mode.name(),
        head.map_or_else(|| "100 B 8p".into(), |r| r.case.name()),
        get(&|r| r.ours.per_sec(), 0),
        get(&|r| r.librdkafka.per_sec(), 0),
        get(&|r| r.ratio(), 3),
        get(&|r| r.ours.mb_per_sec(), 2),
        get(&|r| r.librdkafka.mb_per_sec(), 2),
        get(&|r| r.ours.cpu_per_m(), 3),
        get(&|r| r.librdkafka.cpu_per_m(), 3),
        get(&|r| r.ours.rss_kib as f64, 0),
        get(&|r| r.librdkafka.rss_kib as f64, 0),
        rows.iter().all(|r| r.verified),
        tls_fetch.is_some(),
        tls_fetch.map_or_else(|| "null".into(), |p| format!("\"{p}\"")),
        cases.join(",")
    )
}
