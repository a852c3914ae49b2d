//! Writes every api key's requests and responses, at every version, as encoded frames plus the
//! values they carry, for checking with another implementation:
//! `cargo run -p kafka-protocol --example crosscheck_dump -- OUTDIR`, then
//! `python3 kafka-protocol/tests/crosscheck/check_kafka_python.py OUTDIR`.
//! `tests/crosscheck.rs` runs both.

#[path = "../tests/crosscheck/dump.rs"]
mod dump;

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: crosscheck_dump OUTDIR");
        std::process::exit(2);
    };
    match dump::write_all(std::path::Path::new(&dir)) {
        Ok(s) => println!("wrote {} cases of {} api keys", s.files, s.apis),
        Err(e) => {
            eprintln!("crosscheck_dump: {e}");
            std::process::exit(1);
        }
    }
}
