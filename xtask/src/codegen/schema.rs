//! Kafka's message schema files: JSON with `//` comments, read into a small model.

use std::path::Path;

use serde::Deserialize;

use crate::Error;

/// An inclusive version range; `None` is "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions(pub Option<(i16, i16)>);

impl Versions {
    pub(crate) const NONE: Self = Self(None);

    pub(crate) fn parse(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s == "none" {
            return Ok(Self::NONE);
        }
        let num = |t: &str| -> Result<i16, Error> {
            t.trim()
                .parse::<i16>()
                .map_err(|e| format!("bad version `{s}`: {e}").into())
        };
        Ok(Self(Some(if let Some(lo) = s.strip_suffix('+') {
            (num(lo)?, i16::MAX)
        } else if let Some((lo, hi)) = s.split_once('-') {
            (num(lo)?, num(hi)?)
        } else {
            let v = num(s)?;
            (v, v)
        })))
    }

    pub(crate) fn intersect(self, other: Self) -> Self {
        match (self.0, other.0) {
            (Some((a, b)), Some((c, d))) if a.max(c) <= b.min(d) => {
                Self(Some((a.max(c), b.min(d))))
            }
            _ => Self::NONE,
        }
    }

    pub(crate) fn is_none(self) -> bool {
        self.0.is_none()
    }

    /// Whether every version of `within` is in `self`.
    pub(crate) fn covers(self, within: Self) -> bool {
        match (self.0, within.0) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some((a, b)), Some((c, d))) => a <= c && d <= b,
        }
    }

    /// A Rust condition on `v` that is true for versions in `self`, assuming `v` is in
    /// `within`. `"true"`/`"false"` when the answer does not depend on `v`.
    pub(crate) fn condition(self, within: Self) -> String {
        let (Some((a, b)), Some((lo, hi))) = (self.0, within.0) else {
            return "false".into();
        };
        if b < lo || a > hi {
            return "false".into();
        }
        let lower = a > lo;
        let upper = b < hi;
        match (lower, upper) {
            (false, false) => "true".into(),
            (true, false) => format!("v >= {a}"),
            (false, true) => format!("v <= {b}"),
            (true, true) if a == b => format!("v == {a}"),
            (true, true) => format!("({a}..={b}).contains(&v)"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpec {
    api_key: Option<i16>,
    #[serde(rename = "type")]
    kind: String,
    name: String,
    valid_versions: String,
    /// Absent where `validVersions` is `none` (the APIs Kafka 4.0 removed): then `none`.
    flexible_versions: Option<String>,
    #[serde(default)]
    latest_version_unstable: bool,
    #[serde(default)]
    fields: Vec<RawField>,
    #[serde(default)]
    common_structs: Vec<RawStruct>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStruct {
    name: String,
    versions: String,
    fields: Vec<RawField>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawField {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    /// Absent on some tagged fields: then their tagged versions (as Kafka's generator does).
    versions: Option<String>,
    nullable_versions: Option<String>,
    tagged_versions: Option<String>,
    tag: Option<serde_json::Value>,
    default: Option<serde_json::Value>,
    #[serde(default)]
    ignorable: bool,
    flexible_versions: Option<String>,
    entity_type: Option<String>,
    fields: Option<Vec<RawField>>,
}

/// One schema file.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) api_key: Option<i16>,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) valid: Versions,
    pub(crate) flexible: Versions,
    pub(crate) latest_unstable: bool,
    pub(crate) fields: Vec<Field>,
    pub(crate) common_structs: Vec<StructDef>,
}

#[derive(Debug, Clone)]
pub(crate) struct StructDef {
    pub(crate) name: String,
    pub(crate) versions: Versions,
    pub(crate) fields: Vec<Field>,
}

/// The type of a field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    Array(Box<Ty>),
    Struct(String),
}

impl Ty {
    fn parse(s: &str) -> Self {
        match s {
            "bool" => Self::Bool,
            "int8" => Self::Int8,
            "int16" => Self::Int16,
            "uint16" => Self::Uint16,
            "int32" => Self::Int32,
            "uint32" => Self::Uint32,
            "int64" => Self::Int64,
            "float64" => Self::Float64,
            "uuid" => Self::Uuid,
            "string" => Self::String,
            "bytes" => Self::Bytes,
            "records" => Self::Records,
            _ => match s.strip_prefix("[]") {
                Some(inner) => Self::Array(Box::new(Self::parse(inner))),
                None => Self::Struct(s.to_owned()),
            },
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) ty: Ty,
    pub(crate) versions: Versions,
    pub(crate) nullable: Versions,
    pub(crate) tag: Option<u32>,
    pub(crate) default: Option<String>,
    pub(crate) ignorable: bool,
    /// Field-level override of the message's flexible versions.
    pub(crate) flexible: Option<Versions>,
    pub(crate) entity_type: Option<String>,
    /// Inline struct fields (for struct and struct-array types).
    pub(crate) fields: Option<Vec<Field>>,
}

fn field(mut raw: RawField) -> Result<Field, Error> {
    let versions = match raw.versions.take().or_else(|| raw.tagged_versions.clone()) {
        Some(v) => Versions::parse(&v)?,
        None => return Err(format!("field {}: no versions", raw.name).into()),
    };
    if raw.tagged_versions.is_some() != raw.tag.is_some() {
        return Err(format!("field {}: tag and taggedVersions go together", raw.name).into());
    }
    if let Some(tv) = &raw.tagged_versions {
        if Versions::parse(tv)? != versions {
            return Err(format!("field {}: taggedVersions differ from versions", raw.name).into());
        }
    }
    let tag = match &raw.tag {
        None => None,
        Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|t| u32::try_from(t).ok()),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        Some(_) => None,
    };
    if raw.tag.is_some() && tag.is_none() {
        return Err(format!("field {}: bad tag", raw.name).into());
    }
    let default = match raw.default {
        None => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    };
    Ok(Field {
        ty: Ty::parse(&raw.ty),
        versions,
        nullable: match &raw.nullable_versions {
            Some(n) => Versions::parse(n)?,
            None => Versions::NONE,
        },
        tag,
        default,
        ignorable: raw.ignorable,
        flexible: raw
            .flexible_versions
            .as_deref()
            .map(Versions::parse)
            .transpose()?,
        entity_type: raw.entity_type,
        fields: raw
            .fields
            .map(|fs| fs.into_iter().map(field).collect::<Result<Vec<_>, _>>())
            .transpose()?,
        name: raw.name,
    })
}

/// Removes `//` comments (outside strings) so the text is plain JSON.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for n in chars.by_ref() {
                if n == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn load(path: &Path) -> Result<Spec, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // Through `Value` first: some schema files repeat a key (the later one wins, as in Kafka's
    // own Jackson-based reader).
    let value: serde_json::Value = serde_json::from_str(&strip_comments(&text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let raw: RawSpec =
        serde_json::from_value(value).map_err(|e| format!("{}: {e}", path.display()))?;
    let fields = raw
        .fields
        .into_iter()
        .map(field)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let common_structs = raw
        .common_structs
        .into_iter()
        .map(|s| {
            Ok(StructDef {
                name: s.name,
                versions: Versions::parse(&s.versions)?,
                fields: s
                    .fields
                    .into_iter()
                    .map(field)
                    .collect::<Result<Vec<_>, Error>>()?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Spec {
        api_key: raw.api_key,
        kind: raw.kind,
        name: raw.name,
        valid: Versions::parse(&raw.valid_versions)?,
        flexible: match &raw.flexible_versions {
            Some(f) => Versions::parse(f)?,
            None if Versions::parse(&raw.valid_versions)?.is_none() => Versions::NONE,
            None => return Err(format!("{}: no flexibleVersions", path.display()).into()),
        },
        latest_unstable: raw.latest_version_unstable,
        fields,
        common_structs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_conditions() {
        let all = Versions::parse("0-9").unwrap();
        assert_eq!(Versions::parse("3+").unwrap().condition(all), "v >= 3");
        assert_eq!(Versions::parse("0+").unwrap().condition(all), "true");
        assert_eq!(Versions::parse("0-4").unwrap().condition(all), "v <= 4");
        assert_eq!(
            Versions::parse("2-4").unwrap().condition(all),
            "(2..=4).contains(&v)"
        );
        assert_eq!(Versions::parse("none").unwrap().condition(all), "false");
        assert_eq!(Versions::parse("12+").unwrap().condition(all), "false");
    }

    #[test]
    fn comments_outside_strings_only() {
        let s = strip_comments("{\"a\": \"x//y\", // gone\n\"b\": 1}");
        assert_eq!(s, "{\"a\": \"x//y\", \n\"b\": 1}");
    }
}
