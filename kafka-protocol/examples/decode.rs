//! Decodes one Kafka frame and prints it: `decode [FILE|-] [--response --api-key K
//! --api-version V] [--roundtrip]`.
//!
//! The input is raw bytes or hex text, with or without the 4-byte size prefix. Requests are
//! self-describing; a response needs the api key and version of its request. With
//! `--roundtrip` the decoded frame is encoded again and must give back the same bytes.
//! Exit status: 0 decoded (and round-tripped), 1 bad input or mismatch, 2 usage.

use std::io::Read;
use std::process::ExitCode;

use bytes::Bytes;
use kafka_protocol::{ApiKey, frame};

struct Args {
    file: Option<String>,
    response: bool,
    api_key: Option<i16>,
    api_version: Option<i16>,
    roundtrip: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        file: None,
        response: false,
        api_key: None,
        api_version: None,
        roundtrip: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> Result<i16, String> {
            it.next()
                .ok_or_else(|| format!("{name} needs a value"))?
                .parse()
                .map_err(|e| format!("{name}: {e}"))
        };
        match arg.as_str() {
            "--response" => a.response = true,
            "--roundtrip" => a.roundtrip = true,
            "--api-key" => a.api_key = Some(num("--api-key")?),
            "--api-version" => a.api_version = Some(num("--api-version")?),
            "-h" | "--help" => return Err(String::new()),
            f if a.file.is_none() => a.file = Some(f.to_owned()),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(a)
}

/// Hex text (whitespace allowed) -> bytes, or `None` if the input is not hex text.
fn from_hex(input: &[u8]) -> Option<Vec<u8>> {
    let digits: Vec<u8> = input
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if digits.is_empty() || digits.len() % 2 != 0 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let val = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    Some(
        digits
            .chunks(2)
            .map(|p| val(p[0]) << 4 | val(p[1]))
            .collect(),
    )
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            eprintln!(
                "usage: decode [FILE|-] [--response --api-key K --api-version V] [--roundtrip]"
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let mut input = Vec::new();
    match args.file.as_deref() {
        None | Some("-") => std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| format!("reading stdin: {e}"))?,
        Some(path) => {
            input = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
            input.len()
        }
    };
    let mut raw = from_hex(&input).unwrap_or(input);
    // Strip a size prefix when it announces exactly the rest of the input.
    if raw.len() >= 4 {
        let size = i32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
        if size >= 0 && size as usize == raw.len() - 4 {
            raw.drain(..4);
            println!("(size prefix {size} stripped)");
        }
    }
    let frame_bytes = Bytes::from(raw);

    let reencoded = if args.response {
        let (Some(k), Some(v)) = (args.api_key, args.api_version) else {
            return Err("--response needs --api-key and --api-version".into());
        };
        let key = ApiKey::from_i16(k).ok_or_else(|| format!("unknown api key {k}"))?;
        let resp = frame::decode_response(&frame_bytes, key, v).map_err(|e| e.to_string())?;
        println!("{key:?} response v{v}");
        println!("header: {:#?}", resp.header);
        println!("body: {:#?}", resp.body);
        report_trailing(&resp.trailing);
        let mut w = frame::encode_response(&resp.header, &resp.body, v)
            .map_err(|e| e.to_string())?
            .into_bytes()
            .to_vec();
        w.extend_from_slice(&resp.trailing);
        w
    } else {
        let req = frame::decode_request(&frame_bytes).map_err(|e| e.to_string())?;
        println!("{:?} request v{}", req.api_key(), req.version());
        println!("header: {:#?}", req.header);
        println!("body: {:#?}", req.body);
        report_trailing(&req.trailing);
        let mut w = frame::encode_request(&req.header, &req.body)
            .map_err(|e| e.to_string())?
            .into_bytes()
            .to_vec();
        w.extend_from_slice(&req.trailing);
        w
    };
    if args.roundtrip {
        if reencoded != frame_bytes.as_ref() {
            let at = reencoded
                .iter()
                .zip(frame_bytes.iter())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| reencoded.len().min(frame_bytes.len()));
            return Err(format!(
                "round trip differs at byte {at} (input {} bytes, re-encoded {} bytes)",
                frame_bytes.len(),
                reencoded.len()
            ));
        }
        println!("round trip: identical ({} bytes)", frame_bytes.len());
    }
    Ok(())
}

fn report_trailing(trailing: &Bytes) {
    if !trailing.is_empty() {
        println!(
            "trailing bytes after the last field ({}): {:02x?}",
            trailing.len(),
            trailing.as_ref()
        );
    }
}
