//! Writes encoded frames plus the values they carry, for a decoder we did not write to check.
//!
//! Shared by `tests/crosscheck.rs` and `examples/crosscheck_dump.rs`. For every api key, every
//! version and both directions it writes `<Api>-v<version>-<req|resp>.bin` (header and body, no
//! size prefix) and `<Api>-v<version>-<req|resp>.json`, which holds the header and body values
//! as JSON. The values come from the crate's `arbitrary` generator with fixed seeds (so they are
//! valid for the version), and the richest of a few candidates is kept; when that one has
//! unknown tagged fields, `<...>-plain.bin`/`.json` also hold the richest value without any
//! (kafka-python cannot read some of them, see FINDINGS.md). Values are turned into
//! JSON by reading their `Debug` text, the one generic view of every generated type:
//! structs become objects (fields in declaration order, which is the schema's order), `Option`
//! becomes the value or `null`, byte fields `{"$bytes": hex}`, UUIDs `{"$uuid": hex}`.

use std::fmt::Write as _;
use std::path::Path;

use arbitrary::Unstructured;
use kafka_protocol::messages::{ApiKey, RequestBody, RequestHeader, ResponseBody, ResponseHeader};
use kafka_protocol::{KStr, frame};

/// Candidates generated per (api, version, direction); the richest one is written.
const CANDIDATES: u64 = 12;
/// Candidates searched for a value without unknown tagged fields.
const PLAIN_CANDIDATES: u64 = 96;

/// What [`write_all`] wrote.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    pub(crate) files: usize,
    pub(crate) apis: usize,
}

/// Deterministic pseudo-random bytes (splitmix64).
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes the frames and expected values of every api key and version into `dir`.
pub(crate) fn write_all(dir: &Path) -> Result<Summary, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut summary = Summary::default();
    for &key in ApiKey::ALL {
        summary.apis += 1;
        let range = key.versions();
        for version in range.min..=range.max {
            for request in [true, false] {
                let stem = format!(
                    "{}-v{version}-{}",
                    key.name(),
                    if request { "req" } else { "resp" }
                );
                let rich = best_case(key, version, request, 0..CANDIDATES, |c| c.richness)?;
                // kafka-python cannot read some values with unknown tagged fields (see
                // FINDINGS.md), so when the richest value has some, a second file holds the
                // richest value of a wider search that has none (or the fewest).
                let plain = if rich.unknown_tags > 0 {
                    Some(best_case(
                        key,
                        version,
                        request,
                        0..PLAIN_CANDIDATES,
                        |c| (usize::MAX / 2 - c.unknown_tags * 1_000_000) + c.richness,
                    )?)
                } else {
                    None
                };
                for (suffix, case) in [("", Some(rich)), ("-plain", plain)] {
                    let Some(case) = case else { continue };
                    let write = |ext: &str, data: &[u8]| {
                        let path = dir.join(format!("{stem}{suffix}.{ext}"));
                        std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))
                    };
                    write("bin", &case.frame)?;
                    write("json", case.json.as_bytes())?;
                    summary.files += 1;
                }
            }
        }
    }
    Ok(summary)
}

/// One generated value: its encoded frame, its JSON description and what it holds.
struct Case {
    frame: Vec<u8>,
    json: String,
    richness: usize,
    unknown_tags: usize,
}

/// Of the values generated from `seeds`, the one with the highest `score`.
fn best_case(
    key: ApiKey,
    version: i16,
    request: bool,
    seeds: std::ops::Range<u64>,
    score: impl Fn(&Case) -> usize,
) -> Result<Case, String> {
    let mut best: Option<(usize, Case)> = None;
    for candidate in seeds {
        let case = generate(key, version, request, candidate)?;
        let s = score(&case);
        if best.as_ref().is_none_or(|(b, _)| s > *b) {
            best = Some((s, case));
        }
    }
    best.map(|(_, case)| case)
        .ok_or_else(|| format!("{key:?} v{version}: no candidate"))
}

/// The value of one seed.
fn generate(key: ApiKey, version: i16, request: bool, candidate: u64) -> Result<Case, String> {
    let seed = (key as u64) << 40 | (version as u64) << 24 | u64::from(request) << 16 | candidate;
    let data = random_bytes(seed, 1 << 14);
    let mut u = Unstructured::new(&data);
    let ctx = |e: &dyn std::fmt::Display| format!("{key:?} v{version}: {e}");
    let (frame, header_dbg, body_dbg, message) = if request {
        let body = RequestBody::arbitrary(key, &mut u, version).map_err(|e| ctx(&e))?;
        let client_id = match (frame::request_header_version(key, version), version % 3) {
            (0, _) | (_, 2) => None,
            _ => Some(KStr::from_static("crosscheck-клиент-🦀")),
        };
        let header = RequestHeader {
            request_api_key: key as i16,
            request_api_version: version,
            correlation_id: 0x0102_0304 + i32::from(version) * 1000 + key as i32,
            client_id,
            ..Default::default()
        };
        let frame = frame::encode_request(&header, &body).map_err(|e| ctx(&e))?;
        (
            frame.into_bytes(),
            format!("{header:?}"),
            format!("{body:?}"),
            body.message_name(),
        )
    } else {
        let body = ResponseBody::arbitrary(key, &mut u, version).map_err(|e| ctx(&e))?;
        let header = ResponseHeader {
            correlation_id: -0x0506_0708 - i32::from(version) * 1000 - key as i32,
            ..Default::default()
        };
        let frame = frame::encode_response(&header, &body, version).map_err(|e| ctx(&e))?;
        (
            frame.into_bytes(),
            format!("{header:?}"),
            format!("{body:?}"),
            body.message_name(),
        )
    };
    let header_val = parse_debug(&header_dbg).map_err(|e| ctx(&e))?;
    let body_val = parse_debug(&body_dbg).map_err(|e| ctx(&e))?;
    let mut json = String::new();
    let _ = write!(
        json,
        "{{\"api_key\": {}, \"api\": \"{}\", \"message\": \"{message}\", \"version\": {version}, \
         \"kind\": \"{}\", \"header_version\": {}, \"seed\": {candidate}, \"header\": ",
        key as i16,
        key.name(),
        if request { "request" } else { "response" },
        if request {
            frame::request_header_version(key, version)
        } else {
            frame::response_header_version(key, version)
        },
    );
    header_val.write_json(&mut json);
    json.push_str(", \"body\": ");
    body_val.write_json(&mut json);
    json.push_str("}\n");
    Ok(Case {
        frame: frame.to_vec(),
        json,
        richness: body_val.richness(),
        unknown_tags: body_val.unknown_tag_lists(),
    })
}

/// A value read back from `Debug` text.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    Bool(bool),
    /// A number, as `Debug` printed it (integers exactly; floats in shortest round-trip form).
    Num(String),
    Str(String),
    Bytes(Vec<u8>),
    Uuid([u8; 16]),
    List(Vec<Value>),
    /// A struct: its fields in declaration order.
    Obj(Vec<(String, Value)>),
}

impl Value {
    /// How much a value exercises a decoder: leaves, plus a bonus for nulls, non-ASCII strings,
    /// multi-element arrays and unknown tagged fields.
    fn richness(&self) -> usize {
        match self {
            Value::Null => 3,
            Value::Str(s) if !s.is_ascii() => 4,
            Value::Bool(_) | Value::Num(_) | Value::Str(_) | Value::Bytes(_) | Value::Uuid(_) => 1,
            Value::List(items) => {
                items.iter().map(Value::richness).sum::<usize>()
                    + if items.len() >= 2 { 3 } else { 0 }
            }
            Value::Obj(fields) => fields
                .iter()
                .map(|(name, v)| match (name.as_str(), v) {
                    ("unknown_tagged_fields", Value::List(l)) if !l.is_empty() => 2,
                    _ => v.richness(),
                })
                .sum(),
        }
    }

    /// How many structs in the value carry unknown tagged fields.
    fn unknown_tag_lists(&self) -> usize {
        match self {
            Value::List(items) => items.iter().map(Value::unknown_tag_lists).sum(),
            Value::Obj(fields) => fields
                .iter()
                .map(|(name, v)| match (name.as_str(), v) {
                    ("unknown_tagged_fields", Value::List(l)) => usize::from(!l.is_empty()),
                    _ => v.unknown_tag_lists(),
                })
                .sum(),
            _ => 0,
        }
    }

    fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Num(n) => out.push_str(n),
            Value::Str(s) => write_json_string(s, out),
            Value::Bytes(b) => {
                out.push_str("{\"$bytes\": \"");
                for x in b {
                    let _ = write!(out, "{x:02x}");
                }
                out.push_str("\"}");
            }
            Value::Uuid(b) => {
                out.push_str("{\"$uuid\": \"");
                for x in b {
                    let _ = write!(out, "{x:02x}");
                }
                out.push_str("\"}");
            }
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_json(out);
                }
                out.push(']');
            }
            Value::Obj(fields) => {
                out.push('{');
                for (i, (name, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_json_string(name, out);
                    out.push_str(": ");
                    v.write_json(out);
                }
                out.push('}');
            }
        }
    }
}

fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parses the compact `Debug` output of the generated types (derived `Debug` of structs,
/// `Vec`, `Option`, the body enums' tuple variants, plus `KStr` as a string, `Bytes` as a byte
/// string and `Uuid` as its dashed hex form).
fn parse_debug(text: &str) -> Result<Value, String> {
    let mut p = DebugParser {
        s: text.as_bytes(),
        text,
        pos: 0,
    };
    let v = p.value()?;
    if p.pos != p.s.len() {
        return Err(p.err("trailing text"));
    }
    Ok(v)
}

struct DebugParser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl DebugParser<'_> {
    fn err(&self, what: &str) -> String {
        let end = (self.pos + 40).min(self.text.len());
        let near = self.text.get(self.pos..end).unwrap_or("?");
        format!("Debug text: {what} at byte {} near {near:?}", self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.pos..].starts_with(lit.as_bytes()) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, lit: &str) -> Result<(), String> {
        if self.eat(lit) {
            Ok(())
        } else {
            Err(self.err(&format!("expected {lit:?}")))
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b'b') if self.s.get(self.pos + 1) == Some(&b'"') => {
                self.pos += 1;
                self.byte_string().map(Value::Bytes)
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat("]") {
                    loop {
                        items.push(self.value()?);
                        if self.eat("]") {
                            break;
                        }
                        self.expect(", ")?;
                    }
                }
                Ok(Value::List(items))
            }
            Some(_) => self.bare(),
            None => Err(self.err("unexpected end")),
        }
    }

    /// Identifiers (struct and variant names), numbers, booleans, UUIDs.
    fn bare(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+'))
        {
            self.pos += 1;
        }
        let tok = &self.text[start..self.pos];
        if tok.is_empty() {
            return Err(self.err("unexpected character"));
        }
        match tok {
            "None" => return Ok(Value::Null),
            "true" => return Ok(Value::Bool(true)),
            "false" => return Ok(Value::Bool(false)),
            _ => {}
        }
        if let Some(id) = parse_uuid(tok) {
            return Ok(Value::Uuid(id));
        }
        let first = tok.as_bytes()[0];
        if first.is_ascii_digit() || first == b'-' {
            if tok.parse::<f64>().is_ok_and(f64::is_finite) {
                return Ok(Value::Num(tok.to_string()));
            }
            return Err(self.err("bad number"));
        }
        // A name: struct with fields, tuple variant (`Some(x)`, `Produce(..)`), or unit struct.
        if self.eat(" { ") {
            let mut fields = Vec::new();
            loop {
                let name_start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.pos += 1;
                }
                let name = self.text[name_start..self.pos].to_string();
                self.expect(": ")?;
                fields.push((name, self.value()?));
                if self.eat(" }") {
                    break;
                }
                self.expect(", ")?;
            }
            Ok(Value::Obj(fields))
        } else if self.eat("(") {
            let v = self.value()?;
            self.expect(")")?;
            Ok(v)
        } else {
            Ok(Value::Obj(Vec::new()))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let c = rest
                .chars()
                .next()
                .ok_or_else(|| self.err("unterminated string"))?;
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => out.push(self.escape()?),
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or_else(|| self.err("unterminated escape"))?;
        self.pos += 1;
        Ok(match c {
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'0' => '\0',
            b'\\' => '\\',
            b'"' => '"',
            b'\'' => '\'',
            b'u' => {
                self.expect("{")?;
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    self.pos += 1;
                }
                let code = u32::from_str_radix(&self.text[start..self.pos], 16)
                    .map_err(|_| self.err("bad \\u escape"))?;
                self.expect("}")?;
                char::from_u32(code).ok_or_else(|| self.err("bad \\u escape"))?
            }
            _ => return Err(self.err("unknown escape")),
        })
    }

    fn byte_string(&mut self) -> Result<Vec<u8>, String> {
        self.expect("\"")?;
        let mut out = Vec::new();
        loop {
            let c = self
                .peek()
                .ok_or_else(|| self.err("unterminated byte string"))?;
            self.pos += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    if self.eat("x") {
                        let hex = self
                            .text
                            .get(self.pos..self.pos + 2)
                            .ok_or_else(|| self.err("bad \\x escape"))?;
                        out.push(u8::from_str_radix(hex, 16).map_err(|_| self.err("bad \\x"))?);
                        self.pos += 2;
                    } else {
                        let ch = self.escape()?;
                        out.push(u8::try_from(ch).map_err(|_| self.err("bad byte escape"))?);
                    }
                }
                c => out.push(c),
            }
        }
    }
}

/// `01234567-89ab-cdef-0123-456789abcdef` -> 16 bytes.
fn parse_uuid(tok: &str) -> Option<[u8; 16]> {
    let b = tok.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let hex: String = tok.chars().filter(|&c| c != '-').collect();
    if hex.len() != 32 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_text_round_trips_to_values() {
        let v = parse_debug(
            "Produce(P { a: Some(\"x\\\"é🦀\"), b: None, c: [1, -2, 1.5e-7], d: b\"\\x00a\\n\\\\\", \
             e: 00010203-0405-0607-0809-0a0b0c0d0e0f, f: [Q { g: true }], h: Unit })",
        )
        .unwrap();
        let mut s = String::new();
        v.write_json(&mut s);
        assert_eq!(
            s,
            "{\"a\": \"x\\\"é🦀\", \"b\": null, \"c\": [1, -2, 1.5e-7], \
             \"d\": {\"$bytes\": \"00610a5c\"}, \
             \"e\": {\"$uuid\": \"000102030405060708090a0b0c0d0e0f\"}, \
             \"f\": [{\"g\": true}], \"h\": {}}"
        );
    }
}
