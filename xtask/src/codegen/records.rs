//! The index modules of Kafka's internal records (`metadata/records.rs`,
//! `coordinator/records.rs`): module list and the enums over all records of a log. The record
//! types themselves are written by [`super::emit::message_module`], like the messages.

use std::fmt::Write as _;

use super::emit::{HEADER, fmt_versions, snake};
use super::schema::Spec;
use crate::Error;

fn module_list(out: &mut String, specs: &[&Spec]) {
    for s in specs {
        let m = snake(&s.name);
        let _ = writeln!(out, "pub mod {m};\npub use {m}::{};", s.name);
    }
    out.push('\n');
}

/// `enum <name> { <variant>(<type>), ... }` with `name()`, `versions()` and `From` impls.
fn record_enum(out: &mut String, doc: &str, name: &str, variants: &[(String, &Spec)]) {
    let _ = writeln!(
        out,
        "/// {doc}\n#[derive(Debug, Clone, PartialEq)]\n#[allow(clippy::large_enum_variant)]\npub enum {name} {{"
    );
    for (v, s) in variants {
        let key = s
            .api_key
            .map(|k| format!(" (type {k})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    /// `{}`{key}, versions {}.\n    {v}({}),",
            s.name,
            fmt_versions(s.valid),
            s.name
        );
    }
    let _ = writeln!(
        out,
        "}}\n\nimpl {name} {{\n    /// The schema's name (`\"{}\"`).\n    pub fn name(&self) -> &'static str {{\n        match self {{",
        variants.first().map(|(_, s)| s.name.as_str()).unwrap_or("")
    );
    for (v, s) in variants {
        let _ = writeln!(out, "            Self::{v}(_) => {}::NAME,", s.name);
    }
    out.push_str("        }\n    }\n\n    /// The versions the record's schema defines.\n    pub fn versions(&self) -> VersionRange {\n        match self {\n");
    for (v, s) in variants {
        let _ = writeln!(out, "            Self::{v}(_) => {}::VERSIONS,", s.name);
    }
    out.push_str("        }\n    }\n}\n\n");
    for (v, s) in variants {
        let _ = writeln!(
            out,
            "impl From<{t}> for {name} {{\n    fn from(r: {t}) -> Self {{\n        Self::{v}(r)\n    }}\n}}\n",
            t = s.name
        );
    }
}

/// Variant name: the schema name without `suffix`.
fn variant(spec: &Spec, suffix: &str) -> String {
    spec.name
        .strip_suffix(suffix)
        .unwrap_or(&spec.name)
        .to_string()
}

/// `metadata/records.rs`: every KRaft metadata record and [`MetadataRecord`] over them,
/// dispatched by record type (the schema's `apiKey`).
pub(crate) fn metadata_rs(specs: &[Spec]) -> Result<String, Error> {
    let mut list: Vec<&Spec> = specs.iter().collect();
    for s in &list {
        if s.kind != "metadata" || s.api_key.is_none() {
            return Err(format!("{}: not a metadata record with a type", s.name).into());
        }
    }
    list.sort_by_key(|s| s.api_key);
    let mut keys: Vec<i16> = list.iter().filter_map(|s| s.api_key).collect();
    keys.dedup();
    if keys.len() != list.len() {
        return Err("two metadata records share a type".into());
    }
    let mut out = String::from(HEADER);
    out.push_str("//! Every KRaft metadata record, one module per schema, and [`MetadataRecord`] over all of them.\n\n");
    module_list(&mut out, &list);
    out.push_str("use crate::codec::{Message, Reader, VersionRange, Writer, decode_checked, encode_checked};\nuse crate::error::{DecodeError, EncodeError};\n\n");
    let variants: Vec<(String, &Spec)> = list.iter().map(|s| (variant(s, "Record"), *s)).collect();
    record_enum(
        &mut out,
        "A metadata record of any type; the type is its schema's `apiKey`.",
        "MetadataRecord",
        &variants,
    );
    let type_of = |s: &Spec| s.api_key.unwrap_or_default();
    out.push_str("impl MetadataRecord {\n    /// Every record type, in order.\n    pub const TYPES: &'static [i16] = &[");
    for (_, s) in &variants {
        let _ = write!(out, "{}, ", type_of(s));
    }
    out.push_str("];\n\n    /// The record type (its schema's `apiKey`).\n    pub fn record_type(&self) -> i16 {\n        match self {\n");
    for (v, s) in &variants {
        let _ = writeln!(out, "            Self::{v}(_) => {},", type_of(s));
    }
    out.push_str("        }\n    }\n\n    /// The versions of `record_type`, `None` for a type this code does not know.\n    pub fn versions_of(record_type: i16) -> Option<VersionRange> {\n        Some(match record_type {\n");
    for (_, s) in &variants {
        let _ = writeln!(out, "            {} => {}::VERSIONS,", type_of(s), s.name);
    }
    out.push_str("            _ => return None,\n        })\n    }\n\n    /// A record of `record_type` with every field at its default, `None` for an unknown type.\n    pub fn default_of(record_type: i16) -> Option<Self> {\n        Some(match record_type {\n");
    for (v, s) in &variants {
        let _ = writeln!(
            out,
            "            {} => Self::{v}({}::default()),",
            type_of(s),
            s.name
        );
    }
    out.push_str("            _ => return None,\n        })\n    }\n\n    /// Decodes the body of a record of `record_type` laid out in `version` (range-checked).\n    pub fn decode_body(record_type: i16, r: &mut Reader<'_>, version: i16) -> Result<Self, DecodeError> {\n        Ok(match record_type {\n");
    for (v, s) in &variants {
        let _ = writeln!(
            out,
            "            {k} => Self::{v}(decode_checked(r, version, {k})?),",
            k = type_of(s)
        );
    }
    out.push_str("            _ => return Err(DecodeError::UnknownRecordType { what: \"metadata record\", record_type }),\n        })\n    }\n\n    /// Encodes the body of the record laid out in `version` (range-checked).\n    pub fn encode_body(&self, w: &mut Writer, version: i16) -> Result<(), EncodeError> {\n        match self {\n");
    for (v, _) in &variants {
        let _ = writeln!(
            out,
            "            Self::{v}(m) => encode_checked(m, w, version),"
        );
    }
    out.push_str("        }\n    }\n\n    /// A random record of `record_type` that `version` can carry.\n    #[cfg(feature = \"arbitrary\")]\n    pub fn arbitrary(record_type: i16, u: &mut arbitrary::Unstructured<'_>, version: i16) -> arbitrary::Result<Self> {\n        use crate::codec::Codec;\n        Ok(match record_type {\n");
    for (v, s) in &variants {
        let _ = writeln!(
            out,
            "            {} => Self::{v}({}::arbitrary(u, version)?),",
            type_of(s),
            s.name
        );
    }
    out.push_str(
        "            _ => return Err(arbitrary::Error::IncorrectFormat),\n        })\n    }\n}\n",
    );
    Ok(out)
}

/// `coordinator/records.rs`: the keys and values of the coordinators' compacted topics, one
/// key enum and one value enum per topic (`groups`: a name such as `GroupCoordinator` and its
/// `*Key` / `*Value` schemas). A key's `i16` version says its type; a value is read as the
/// value of its key's type.
pub(crate) fn coordinator_rs(groups: &[(&str, &str, &[Spec])]) -> Result<String, Error> {
    let mut out = String::from(HEADER);
    out.push_str("//! The records of the coordinators' topics (`__consumer_offsets`, `__transaction_state`), one module per schema, and the key and value enums of each topic.\n\n");
    let all: Vec<&Spec> = groups.iter().flat_map(|(_, _, s)| s.iter()).collect();
    module_list(&mut out, &all);
    out.push_str("use bytes::Bytes;\n\nuse super::{read_framed, write_framed};\nuse crate::codec::{Message, VersionRange, decode_checked, encode_checked};\nuse crate::error::{DecodeError, EncodeError};\n\n");
    for (group, topic, specs) in groups {
        let mut pairs: Vec<(String, &Spec, &Spec)> = Vec::new();
        for k in specs.iter() {
            let Some(base) = k.name.strip_suffix("Key") else {
                continue;
            };
            let value = specs
                .iter()
                .find(|s| s.name == format!("{base}Value"))
                .ok_or_else(|| format!("{}: no {base}Value", k.name))?;
            if k.kind != "data" || !k.flexible.is_none() {
                return Err(format!("{}: a key is a non-flexible data schema", k.name).into());
            }
            pairs.push((base.to_string(), k, value));
        }
        if pairs.len() * 2 != specs.len() {
            return Err(format!("{group}: schemas that are neither keys nor values").into());
        }
        pairs.sort_by_key(|(_, k, _)| k.valid.0);
        for w in pairs.windows(2) {
            if let (Some((_, a)), Some((b, _))) = (w[0].1.valid.0, w[1].1.valid.0) {
                if a >= b {
                    return Err(format!("{group}: key versions overlap").into());
                }
            }
        }
        let key = format!("{group}Key");
        let value = format!("{group}Value");
        let keys: Vec<(String, &Spec)> = pairs.iter().map(|(v, k, _)| (v.clone(), *k)).collect();
        let values: Vec<(String, &Spec)> = pairs.iter().map(|(v, _, x)| (v.clone(), *x)).collect();
        record_enum(
            &mut out,
            &format!("A key of `{topic}`; its `i16` version says its type."),
            &key,
            &keys,
        );
        record_enum(
            &mut out,
            &format!("A value of `{topic}`, of the type its key says."),
            &value,
            &values,
        );
        let _ = writeln!(
            out,
            "impl {key} {{\n    /// Reads a key: its `i16` version, then the key of the type that version says.\n    pub fn decode(bytes: &Bytes) -> Result<(Self, i16), DecodeError> {{\n        read_framed(bytes, \"{key}.version\", |v, r| Ok(match v {{"
        );
        for (v, k) in &keys {
            let (lo, hi) = k.valid.0.ok_or("key without versions")?;
            let pat = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}..={hi}")
            };
            let _ = writeln!(
                out,
                "            {pat} => Self::{v}(decode_checked(r, v, -1)?),"
            );
        }
        let _ = writeln!(
            out,
            "            _ => return Err(DecodeError::UnknownRecordType {{ what: \"{topic} key\", record_type: v }}),\n        }}))\n    }}\n\n    /// The key's bytes, laid out in `version` (which must be one of its type's).\n    pub fn encode(&self, version: i16) -> Result<Bytes, EncodeError> {{\n        write_framed(version, |w| match self {{"
        );
        for (v, _) in &keys {
            let _ = writeln!(
                out,
                "            Self::{v}(k) => encode_checked(k, w, version),"
            );
        }
        out.push_str("        })\n    }\n\n    /// A random key of the type `version` says.\n    #[cfg(feature = \"arbitrary\")]\n    pub fn arbitrary(u: &mut arbitrary::Unstructured<'_>, version: i16) -> arbitrary::Result<Self> {\n        use crate::codec::Codec;\n        Ok(match version {\n");
        for (v, k) in &keys {
            let (lo, hi) = k.valid.0.ok_or("key without versions")?;
            let _ = writeln!(
                out,
                "            {lo}..={hi} => Self::{v}({}::arbitrary(u, version)?),",
                k.name
            );
        }
        out.push_str("            _ => return Err(arbitrary::Error::IncorrectFormat),\n        })\n    }\n}\n\n");
        let _ = writeln!(
            out,
            "impl {value} {{\n    /// Reads the value of `key`: its `i16` version, then the value.\n    pub fn decode(key: &{key}, bytes: &Bytes) -> Result<(Self, i16), DecodeError> {{\n        read_framed(bytes, \"{value}.version\", |v, r| Ok(match key {{"
        );
        for (v, _) in &values {
            let _ = writeln!(
                out,
                "            {key}::{v}(_) => Self::{v}(decode_checked(r, v, -1)?),"
            );
        }
        let _ = writeln!(
            out,
            "        }}))\n    }}\n\n    /// The value's bytes, laid out in `version`.\n    pub fn encode(&self, version: i16) -> Result<Bytes, EncodeError> {{\n        write_framed(version, |w| match self {{"
        );
        for (v, _) in &values {
            let _ = writeln!(
                out,
                "            Self::{v}(x) => encode_checked(x, w, version),"
            );
        }
        let _ = writeln!(
            out,
            "        }})\n    }}\n\n    /// A random value of `key`'s type that `version` can carry.\n    #[cfg(feature = \"arbitrary\")]\n    pub fn arbitrary(key: &{key}, u: &mut arbitrary::Unstructured<'_>, version: i16) -> arbitrary::Result<Self> {{\n        use crate::codec::Codec;\n        Ok(match key {{"
        );
        for (v, x) in &values {
            let _ = writeln!(
                out,
                "            {key}::{v}(_) => Self::{v}({}::arbitrary(u, version)?),",
                x.name
            );
        }
        out.push_str("        })\n    }\n}\n\n");
    }
    Ok(out)
}
