//! Round trips per second on one loopback connection with 1, 5 and 32 requests in flight,
//! against a minimal server that answers every ApiVersions or Metadata request at once.
//!
//! The server runs as a child process (this binary with `--serve`), so the CPU time and peak
//! RSS of each side are measured apart (`/proc/PID/stat` and `/proc/PID/status`). Each side
//! runs a single-threaded tokio runtime. Every level is bounded: at most `--seconds` (default
//! 3) and 2,000,000 requests, after a short warm-up.
//!
//! ```text
//! cargo run --release -p kafka-bench --example net_bench -- [--seconds N] [--quick] [--json PATH]
//! ```

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use kafka_bench::{cpu_time_of, peak_rss_kib, peak_rss_kib_of};
use kafka_net::server::{RequestReader, response_chunks, write_chunks};
use kafka_net::{ConnConfig, Connection, ConnectionConfig, NetError};
use kafka_protocol::KStr;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, MetadataRequest, MetadataResponse, RequestBody, ResponseBody,
    api_versions_response, metadata_response,
};
use tokio::net::{TcpListener, TcpStream};

const LEVELS: [usize; 3] = [1, 5, 32];
const MAX_REQUESTS: usize = 2_000_000;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = if args.first().is_some_and(|a| a == "--serve") {
        rt.block_on(serve())
    } else {
        rt.block_on(bench(&args))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

// ----- the server (child process) -----

/// Listens on 127.0.0.1:0, prints the port, serves until stdin closes.
async fn serve() -> Result<(), Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    // The parent closes our stdin (or dies): stop then.
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
    });
    tokio::select! {
        _ = stdin_closed => Ok(()),
        r = accept(listener) => r,
    }
}

async fn accept(listener: TcpListener) -> Result<(), Error> {
    loop {
        let (sock, _) = listener.accept().await?;
        sock.set_nodelay(true)?;
        tokio::spawn(async move {
            if let Err(e) = answer(sock).await {
                eprintln!("server: connection ended: {e}");
            }
        });
    }
}

/// Answers requests in order as they come; responses to requests that arrived together go
/// out in one write.
async fn answer(sock: TcpStream) -> Result<(), NetError> {
    let (read, mut write) = sock.into_split();
    let mut reader = RequestReader::new(read, 1 << 20);
    let mut out: Vec<Bytes> = Vec::new();
    while let Some(first) = reader.next().await? {
        let mut next = Some(first);
        while let Some(req) = next.take() {
            let Ok(request) = req.request else {
                return Err(NetError::Closed(Some("undecodable request".into())));
            };
            let body = match request.api_key() {
                ApiKey::ApiVersions => api_versions(),
                _ => metadata(),
            };
            out.extend(response_chunks(
                request.header.correlation_id,
                &body,
                request.version(),
            )?);
            // More requests already read? Answer them in the same write.
            next = reader.next().now_or_never().transpose()?.flatten();
        }
        write_chunks(&mut write, &out).await?;
        out.clear();
    }
    Ok(())
}

fn api_versions() -> ResponseBody {
    let api_keys = [ApiKey::ApiVersions, ApiKey::Metadata]
        .into_iter()
        .map(|k| api_versions_response::ApiVersion {
            api_key: k as i16,
            min_version: k.versions().min,
            max_version: k.versions().max,
            ..Default::default()
        })
        .collect();
    ResponseBody::ApiVersions(ApiVersionsResponse {
        api_keys,
        ..Default::default()
    })
}

fn metadata() -> ResponseBody {
    ResponseBody::Metadata(MetadataResponse {
        brokers: vec![metadata_response::MetadataResponseBroker {
            node_id: 1,
            host: KStr::from_static("127.0.0.1"),
            port: 9092,
            ..Default::default()
        }],
        cluster_id: Some(KStr::from_static("bench")),
        controller_id: 1,
        ..Default::default()
    })
}

// ----- the client (this process) -----

struct Row {
    in_flight: usize,
    requests: usize,
    elapsed: Duration,
    client_cpu: Duration,
    server_cpu: Duration,
    p50_us: f64,
    p99_us: f64,
}

impl Row {
    fn per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    fn cpu_us(cpu: Duration, n: usize) -> f64 {
        cpu.as_secs_f64() * 1e6 / n.max(1) as f64
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // Closing its stdin tells it to stop; kill it if it does not.
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn bench(args: &[String]) -> Result<(), Error> {
    let mut seconds = 3.0;
    let mut json_path = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => seconds = 1.0,
            "--seconds" => seconds = it.next().ok_or("--seconds needs a value")?.parse()?,
            "--json" => json_path = Some(it.next().ok_or("--json needs a path")?.clone()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let seconds = Duration::from_secs_f64(f64::clamp(seconds, 0.2, 60.0));

    let mut child = Command::new(std::env::current_exe()?)
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("server has no stdout")?;
    let server = Server(child);
    let server_pid = server.0.id().to_string();
    let mut port = String::new();
    BufReader::new(stdout).read_line(&mut port)?;
    let addr = format!("127.0.0.1:{}", port.trim());
    println!(
        "net bench: server pid {server_pid} on {addr}; {} s per level, at most {MAX_REQUESTS} requests",
        seconds.as_secs_f64()
    );

    let mut rows = Vec::new();
    for n in LEVELS {
        print!("  {n:>2} in flight: connecting, warming up ... ");
        std::io::stdout().flush()?;
        let row = level(&addr, n, seconds, &server_pid).await?;
        println!(
            "{:.0} round trips/s ({} in {:.2} s)",
            row.per_sec(),
            row.requests,
            row.elapsed.as_secs_f64()
        );
        rows.push(row);
    }
    let client_rss = peak_rss_kib();
    let server_rss = peak_rss_kib_of(&server_pid);
    drop(server);

    println!(
        "\n{:>9} {:>12} {:>10} {:>10} {:>14} {:>14}",
        "in flight", "round trips/s", "p50 µs", "p99 µs", "client CPU/req", "server CPU/req"
    );
    for r in &rows {
        println!(
            "{:>9} {:>12.0} {:>10.1} {:>10.1} {:>11.2} µs {:>11.2} µs",
            r.in_flight,
            r.per_sec(),
            r.p50_us,
            r.p99_us,
            Row::cpu_us(r.client_cpu, r.requests),
            Row::cpu_us(r.server_cpu, r.requests),
        );
    }
    let kib =
        |k: Option<u64>| k.map_or_else(|| "?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
    println!(
        "peak RSS: client {}, server {}",
        kib(client_rss),
        kib(server_rss)
    );

    let json = to_json(&rows, client_rss, server_rss, seconds);
    println!("\n{json}");
    if let Some(p) = json_path {
        std::fs::write(&p, format!("{json}\n"))?;
        println!("JSON written to {p}");
    }
    Ok(())
}

/// One level: a fresh connection with `max.in.flight` = n and n callers sending Metadata
/// requests back to back.
async fn level(addr: &str, n: usize, seconds: Duration, server_pid: &str) -> Result<Row, Error> {
    let cfg = ConnectionConfig {
        conn: ConnConfig {
            max_in_flight: n,
            ..Default::default()
        },
        ..Default::default()
    };
    let conn = Connection::connect(addr, cfg).await?;
    let version = conn.version_for(ApiKey::Metadata)?;
    run(&conn, n, version, Duration::from_millis(300), MAX_REQUESTS).await?;

    let cpu0 = cpu_time_of("self");
    let server0 = cpu_time_of(server_pid);
    let started = Instant::now();
    let mut latencies = run(&conn, n, version, seconds, MAX_REQUESTS).await?;
    let elapsed = started.elapsed();
    let client_cpu = cpu_time_of("self")
        .zip(cpu0)
        .map(|(b, a)| b.saturating_sub(a));
    let server_cpu = cpu_time_of(server_pid)
        .zip(server0)
        .map(|(b, a)| b.saturating_sub(a));
    latencies.sort_unstable();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies.get(i).map_or(0.0, |ns| f64::from(*ns) / 1e3)
    };
    Ok(Row {
        in_flight: n,
        requests: latencies.len(),
        elapsed,
        client_cpu: client_cpu.unwrap_or_default(),
        server_cpu: server_cpu.unwrap_or_default(),
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    })
}

/// n callers send requests until `time` passes or `max` requests went out; returns each
/// request's round-trip time in ns.
async fn run(
    conn: &Connection,
    n: usize,
    version: i16,
    time: Duration,
    max: usize,
) -> Result<Vec<u32>, Error> {
    let deadline = tokio::time::Instant::now() + time;
    let budget = Arc::new(AtomicUsize::new(max));
    let body = RequestBody::Metadata(MetadataRequest {
        topics: Some(Vec::new()),
        allow_auto_topic_creation: false,
        ..Default::default()
    });
    let callers: Vec<_> = (0..n)
        .map(|_| {
            let conn = conn.clone();
            let body = body.clone();
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                while tokio::time::Instant::now() < deadline
                    && budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                        .is_ok()
                {
                    let t = Instant::now();
                    conn.request_at(body.clone(), version).await?;
                    lat.push(u32::try_from(t.elapsed().as_nanos()).unwrap_or(u32::MAX));
                }
                Ok::<_, NetError>(lat)
            })
        })
        .collect();
    let mut all = Vec::new();
    for c in callers {
        all.extend(c.await??);
    }
    Ok(all)
}

fn to_json(
    rows: &[Row],
    client_rss: Option<u64>,
    server_rss: Option<u64>,
    seconds: Duration,
) -> String {
    let levels: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "    {{\"in_flight\": {}, \"requests\": {}, \"seconds\": {:.3}, \
                 \"round_trips_per_sec\": {:.0}, \"p50_us\": {:.1}, \"p99_us\": {:.1}, \
                 \"client_cpu_us_per_req\": {:.3}, \"server_cpu_us_per_req\": {:.3}}}",
                r.in_flight,
                r.requests,
                r.elapsed.as_secs_f64(),
                r.per_sec(),
                r.p50_us,
                r.p99_us,
                Row::cpu_us(r.client_cpu, r.requests),
                Row::cpu_us(r.server_cpu, r.requests),
            )
        })
        .collect();
    let opt = |k: Option<u64>| k.map_or_else(|| "null".into(), |k| k.to_string());
    format!(
        "{{\n  \"bench\": \"net\",\n  \"request\": \"Metadata (no topics), one loopback connection\",\n  \
         \"seconds_per_level\": {:.1},\n  \"client_peak_rss_kib\": {},\n  \"server_peak_rss_kib\": {},\n  \
         \"levels\": [\n{}\n  ]\n}}",
        seconds.as_secs_f64(),
        opt(client_rss),
        opt(server_rss),
        levels.join(",\n")
    )
}
