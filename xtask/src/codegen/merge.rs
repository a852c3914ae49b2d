//! Merges two generations of Kafka's message schemas into one: the older set (Kafka 3.9, which
//! still defines the versions Kafka 4.0 removed, KIP-896) and the newer set (Kafka 4.4), so that
//! one generated module per message covers every version either defines.
//!
//! The rules:
//! - Messages are matched by api key and type (`request`/`response`) when they have an api key,
//!   otherwise by name and type. A message only in one set is taken as it is (4.4 adds APIs;
//!   the ones 4.0 removed stay). A matched message takes the newer name: api key 74 is
//!   `ListClientMetricsResources` in 3.9 and `ListConfigResources` in 4.4, with the same wire
//!   format in the versions both define.
//! - A newer definition with no valid versions at all (`"none"`: LeaderAndIsr, StopReplica,
//!   UpdateMetadata, ControlledShutdown in 4.4) leaves the older one as it is.
//! - An older api whose request marks its latest version unstable (`latestVersionUnstable`)
//!   loses that version on both request and response before merging: such a version was never
//!   advertised by any release (3.9's early-access share group APIs at v0, which 4.1 replaced by
//!   v1), so no client sends it.
//! - Let `m` be the newer set's lowest valid version. Versions below `m` come from the older
//!   definition, versions from `m` up from the newer one. The valid versions are the union of
//!   the older ones below `m` and the newer ones.
//! - Fields are matched by name, recursively in inline structs and in common structs. A field's
//!   versions are (older versions ∩ [0, m-1]) ∪ (newer versions ∩ [m, ∞)), and the same for its
//!   nullable and flexible versions (tagged versions equal versions here, as the schema reader
//!   checks). The newer versions are cut at `m` because the newer schema says nothing about the
//!   versions it no longer defines. A field only in the older set keeps its older versions below
//!   `m` (and is dropped when none are left: a field the newer set removed or renamed in a
//!   version both define follows the newer set); a field only in the newer set keeps its newer
//!   versions from `m`. The message's flexible versions follow the same rule.
//! - A union that is not one contiguous range, a type that differs, a tag that differs, or an
//!   inline struct on one side only, where both sides have the field below and from `m`, is an
//!   error naming the message and the field.
//! - Field order: the newer set's, with each older-only field placed after the field that
//!   precedes it in the older set. Every version is then checked against the definition it came
//!   from: the same fields, untagged ones in the same order.
//! - Defaults, entity types and `latestVersionUnstable` are the newer set's where both have
//!   them. `ignorable` (whether a version without the field drops a non-default value instead
//!   of refusing it) is taken from the side with versions lacking the field: the newer set's
//!   when some version from `m` lacks it, else the older set's when some version below `m`
//!   does (4.4's RequestHeader drops `ignorable` from `ClientId` because its v0 is gone; the
//!   merged v0 keeps 3.9's), else the newer set's. Both sides lacking it with different flags
//!   is an error.

use std::collections::BTreeMap;

use super::schema::{Field, Spec, StructDef, Versions};
use crate::Error;

/// The key a message is matched by: api key and type, or name and type.
fn key(s: &Spec) -> (Option<i16>, String, String) {
    match s.api_key {
        Some(k) => (Some(k), s.kind.clone(), String::new()),
        None => (None, s.kind.clone(), s.name.clone()),
    }
}

/// The union of two version ranges, `None` when they leave a gap.
fn union(a: Versions, b: Versions) -> Option<Versions> {
    match (a.0, b.0) {
        (None, _) => Some(b),
        (_, None) => Some(a),
        (Some((a0, a1)), Some((b0, b1))) => {
            // Contiguous when the later range starts at most one past the earlier's end.
            let (lo, hi) = if a0 <= b0 {
                ((a0, a1), (b0, b1))
            } else {
                ((b0, b1), (a0, a1))
            };
            (i32::from(hi.0) <= i32::from(lo.1) + 1).then(|| Versions(Some((lo.0, lo.1.max(hi.1)))))
        }
    }
}

/// The versions below `m` and those from `m`.
fn halves(m: i16) -> (Versions, Versions) {
    let below = if m > 0 {
        Versions(Some((0, m - 1)))
    } else {
        Versions::NONE
    };
    (below, Versions(Some((m, i16::MAX))))
}

/// `(older ∩ below) ∪ (newer ∩ from)`, or an error naming `what`.
fn combine(old: Versions, new: Versions, m: i16, what: &str) -> Result<Versions, Error> {
    let (below, from) = halves(m);
    union(old.intersect(below), new.intersect(from)).ok_or_else(|| {
        format!(
            "{what}: versions {} below v{m} and {} from v{m} are not one range",
            super::emit::fmt_versions(old.intersect(below)),
            super::emit::fmt_versions(new.intersect(from))
        )
        .into()
    })
}

/// Merges the older and newer schema sets as the module documentation says.
pub(crate) fn merge(older: Vec<Spec>, newer: Vec<Spec>) -> Result<Vec<Spec>, Error> {
    // Versions of an older api that were never stable are dropped, on both sides of the api.
    let unstable: Vec<i16> = older
        .iter()
        .filter(|s| s.kind == "request" && s.latest_unstable)
        .filter_map(|s| s.api_key)
        .collect();
    let mut old_by_key: BTreeMap<_, Spec> = BTreeMap::new();
    for mut s in older {
        if s.api_key.is_some_and(|k| unstable.contains(&k)) {
            s.valid = match s.valid.0 {
                Some((lo, hi)) if hi > lo => Versions(Some((lo, hi - 1))),
                _ => Versions::NONE,
            };
            s.latest_unstable = false;
        }
        if old_by_key.insert(key(&s), s).is_some() {
            return Err("two older schemas with the same api key or name".into());
        }
    }
    let mut out = Vec::new();
    for new in newer {
        match old_by_key.remove(&key(&new)) {
            Some(old) => out.push(merge_spec(old, new)?),
            None => out.push(new),
        }
    }
    // Older-only messages, unless nothing of them is left.
    out.extend(old_by_key.into_values().filter(|s| !s.valid.is_none()));
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn merge_spec(old: Spec, new: Spec) -> Result<Spec, Error> {
    let Some((m, _)) = new.valid.0 else {
        return Ok(old);
    };
    if old.valid.is_none() {
        return Ok(new);
    }
    let name = new.name.clone();
    let valid = combine(old.valid, new.valid, m, &name)?;
    let flexible = combine(
        old.flexible,
        new.flexible,
        m,
        &format!("{name} flexibleVersions"),
    )?;
    let ranges = Ranges {
        m,
        older: old.valid.intersect(halves(m).0),
        newer: new.valid,
    };
    let fields = merge_fields(&old.fields, new.fields.clone(), &ranges, &name)?;
    let mut common_structs = Vec::new();
    for ns in &new.common_structs {
        match old.common_structs.iter().find(|s| s.name == ns.name) {
            Some(os) => {
                let what = format!("{name}/{}", ns.name);
                common_structs.push(StructDef {
                    name: ns.name.clone(),
                    versions: combine(os.versions, ns.versions, m, &what)?,
                    fields: merge_fields(&os.fields, ns.fields.clone(), &ranges, &what)?,
                });
            }
            None => common_structs.push(ns.clone()),
        }
    }
    for os in &old.common_structs {
        if !new.common_structs.iter().any(|s| s.name == os.name) {
            common_structs.push(os.clone());
        }
    }
    let merged = Spec {
        api_key: new.api_key,
        kind: new.kind.clone(),
        name,
        valid,
        flexible,
        latest_unstable: new.latest_unstable,
        fields,
        common_structs,
    };
    check_layout(&merged, &old, &new, m)?;
    Ok(merged)
}

/// The versions a merged message takes from each side.
struct Ranges {
    /// The newer set's lowest version.
    m: i16,
    /// The older set's versions below `m`.
    older: Versions,
    /// The newer set's versions.
    newer: Versions,
}

/// Whether some version of `within` lacks a field present in `versions`.
fn lacks(within: Versions, versions: Versions) -> bool {
    !within.is_none() && !versions.covers(within)
}

/// Merges one list of fields (a message's, an inline struct's or a common struct's).
fn merge_fields(
    old: &[Field],
    new: Vec<Field>,
    ranges: &Ranges,
    path: &str,
) -> Result<Vec<Field>, Error> {
    let m = ranges.m;
    let (below, from) = halves(m);
    let mut out = Vec::with_capacity(new.len());
    for mut n in new {
        let what = format!("{path}.{}", n.name);
        let named = old.iter().find(|o| o.name == n.name);
        let Some(o) = named.filter(|o| !o.versions.intersect(below).is_none()) else {
            // Only in the newer set (or only from `m` in both): its versions from `m`.
            n.versions = n.versions.intersect(from);
            n.nullable = n.nullable.intersect(from);
            n.flexible = n.flexible.map(|f| f.intersect(from));
            if let Some(o) = named {
                n.ignorable = ignorable(o, &n, ranges, &what)?;
            }
            out.push(n);
            continue;
        };
        if n.versions.intersect(from).is_none() {
            // The newer set has no version of it from `m`: the older field below `m`.
            out.push(older_only(o, m));
            continue;
        }
        if o.ty != n.ty {
            return Err(format!("{what}: type {:?} below v{m}, {:?} from v{m}", o.ty, n.ty).into());
        }
        if o.tag != n.tag {
            return Err(
                format!("{what}: tag {:?} below v{m}, {:?} from v{m}", o.tag, n.tag).into(),
            );
        }
        n.ignorable = ignorable(o, &n, ranges, &what)?;
        n.versions = combine(o.versions, n.versions, m, &what)?;
        n.nullable = combine(
            o.nullable,
            n.nullable,
            m,
            &format!("{what} nullableVersions"),
        )?;
        n.flexible = match (o.flexible, n.flexible) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(combine(a, b, m, &format!("{what} flexibleVersions"))?),
            _ => {
                return Err(format!("{what}: flexibleVersions on one side only").into());
            }
        };
        n.fields = match (&o.fields, n.fields.take()) {
            (None, None) => None,
            (Some(of), Some(nf)) => Some(merge_fields(of, nf, ranges, &what)?),
            _ => return Err(format!("{what}: inline struct on one side only").into()),
        };
        out.push(n);
    }
    // Older-only fields, after the field that precedes them in the older list.
    let mut after: Option<usize> = None;
    for o in old {
        if let Some(i) = out.iter().position(|f| f.name == o.name) {
            after = Some(i);
        } else if !o.versions.intersect(below).is_none() {
            let at = after.map_or(0, |i| i + 1);
            out.insert(at, older_only(o, m));
            after = Some(at);
        }
    }
    Ok(out)
}

/// The merged `ignorable` of a field both sides have (see the module documentation).
fn ignorable(o: &Field, n: &Field, ranges: &Ranges, what: &str) -> Result<bool, Error> {
    let m = ranges.m;
    match (
        lacks(ranges.older, o.versions),
        lacks(ranges.newer, n.versions),
    ) {
        (true, true) if o.ignorable != n.ignorable => Err(format!(
            "{what}: ignorable {} below v{m}, {} from v{m}",
            o.ignorable, n.ignorable
        )
        .into()),
        (true, false) => Ok(o.ignorable),
        _ => Ok(n.ignorable),
    }
}

/// An older field kept for the versions below `m` only.
fn older_only(o: &Field, m: i16) -> Field {
    let (below, _) = halves(m);
    let mut f = o.clone();
    f.versions = f.versions.intersect(below);
    f.nullable = f.nullable.intersect(below);
    f.flexible = f.flexible.map(|v| v.intersect(below));
    f
}

/// Checks every version of the merged message against the definition it came from: the same
/// fields, with the same type and nullability, untagged ones in the same order.
fn check_layout(merged: &Spec, old: &Spec, new: &Spec, m: i16) -> Result<(), Error> {
    let Some((lo, hi)) = merged.valid.0 else {
        return Ok(());
    };
    for v in lo..=hi {
        let source = if v < m { old } else { new };
        let what = format!("{} v{v}", merged.name);
        same_layout(&merged.fields, &source.fields, v, &what)?;
        for s in &merged.common_structs {
            // A common struct the source lacks is not used by it at `v` (field types are
            // compared in `same_layout`).
            if let Some(src) = source.common_structs.iter().find(|c| c.name == s.name) {
                same_layout(&s.fields, &src.fields, v, &format!("{what}/{}", s.name))?;
            }
        }
    }
    Ok(())
}

fn same_layout(merged: &[Field], source: &[Field], v: i16, what: &str) -> Result<(), Error> {
    let at = Versions(Some((v, v)));
    let live = |fs: &[Field]| -> Vec<(String, bool, Option<u32>)> {
        fs.iter()
            .filter(|f| !f.versions.intersect(at).is_none())
            .map(|f| (f.name.clone(), !f.nullable.intersect(at).is_none(), f.tag))
            .collect()
    };
    let (mut a, mut b) = (live(merged), live(source));
    // Tagged fields are matched by tag, not position.
    let untagged_first = |x: &mut Vec<(String, bool, Option<u32>)>| {
        x.sort_by_key(|(_, _, t)| t.map_or(-1, i64::from));
    };
    untagged_first(&mut a);
    untagged_first(&mut b);
    if a != b {
        return Err(format!("{what}: merged fields {a:?} differ from the schema's {b:?}").into());
    }
    for f in merged
        .iter()
        .filter(|f| !f.versions.intersect(at).is_none())
    {
        let Some(s) = source.iter().find(|s| s.name == f.name) else {
            continue;
        };
        if f.ty != s.ty {
            return Err(format!("{what}.{}: type differs from the schema's", f.name).into());
        }
        if let (Some(fs), Some(ss)) = (&f.fields, &s.fields) {
            same_layout(fs, ss, v, &format!("{what}.{}", f.name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Versions {
        Versions::parse(s).unwrap()
    }

    fn field(name: &str, ty: &str, versions: &str) -> Field {
        Field {
            name: name.into(),
            ty: if ty == "string" {
                super::super::schema::Ty::String
            } else {
                super::super::schema::Ty::Int32
            },
            versions: v(versions),
            nullable: Versions::NONE,
            tag: None,
            default: None,
            ignorable: false,
            flexible: None,
            entity_type: None,
            fields: None,
        }
    }

    fn spec(valid: &str, fields: Vec<Field>) -> Spec {
        Spec {
            api_key: Some(0),
            kind: "request".into(),
            name: "XRequest".into(),
            valid: v(valid),
            flexible: v("none"),
            latest_unstable: false,
            fields,
            common_structs: Vec::new(),
        }
    }

    fn names(s: &Spec) -> Vec<(String, Versions)> {
        s.fields
            .iter()
            .map(|f| (f.name.clone(), f.versions))
            .collect()
    }

    #[test]
    fn older_only_fields_keep_their_place_and_old_versions() {
        // 3.9: A 0+, Old 0-1, B 0+ (v0-3); 4.4 (v2-5): A, B, New 5+.
        let old = spec(
            "0-3",
            vec![
                field("A", "int32", "0+"),
                field("Old", "int32", "0-1"),
                field("B", "int32", "0+"),
            ],
        );
        let new = spec(
            "2-5",
            vec![
                field("A", "int32", "0+"),
                field("B", "int32", "0+"),
                field("New", "int32", "5+"),
            ],
        );
        let m = merge(vec![old], vec![new]).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].valid, v("0-5"));
        assert_eq!(
            names(&m[0]),
            vec![
                ("A".into(), v("0+")),
                ("Old".into(), v("0-1")),
                ("B".into(), v("0+")),
                ("New".into(), v("5+")),
            ]
        );
    }

    #[test]
    fn conflicts_are_errors_naming_the_field() {
        // The type changes across m.
        let old = spec("0-3", vec![field("A", "int32", "0+")]);
        let new = spec("2-5", vec![field("A", "string", "0+")]);
        let e = merge(vec![old], vec![new]).unwrap_err().to_string();
        assert!(e.contains("XRequest.A") && e.contains("type"), "{e}");
        // A gap: 3.9 has it at v0 only, 4.4 from v4 (m = 2).
        let old = spec("0-3", vec![field("A", "int32", "0")]);
        let new = spec("2-5", vec![field("A", "int32", "4+")]);
        let e = merge(vec![old], vec![new]).unwrap_err().to_string();
        assert!(
            e.contains("XRequest.A") && e.contains("not one range"),
            "{e}"
        );
    }

    #[test]
    fn removed_apis_stay_and_unstable_versions_go() {
        // 4.4 keeps the file with no versions: 3.9's definition stays.
        let old = spec("0-7", vec![field("A", "int32", "0+")]);
        let mut new = spec("none", Vec::new());
        new.flexible = Versions::NONE;
        let m = merge(vec![old], vec![new]).unwrap();
        assert_eq!(m[0].valid, v("0-7"));
        // 3.9's unstable latest version that 4.4 does not keep is dropped.
        let mut old = spec("0", vec![field("A", "int32", "0+")]);
        old.latest_unstable = true;
        let new = spec("1", vec![field("A", "int32", "0+")]);
        let m = merge(vec![old], vec![new]).unwrap();
        assert_eq!(m[0].valid, v("1"));
    }

    #[test]
    fn the_layout_check_catches_a_wrong_order() {
        let old = spec(
            "0-3",
            vec![field("A", "int32", "0+"), field("B", "int32", "0+")],
        );
        let new = spec(
            "2-5",
            vec![field("A", "int32", "0+"), field("B", "int32", "0+")],
        );
        let swapped = spec(
            "0-5",
            vec![field("B", "int32", "0+"), field("A", "int32", "0+")],
        );
        let e = check_layout(&swapped, &old, &new, 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("XRequest v0"), "{e}");
        let right = spec(
            "0-5",
            vec![field("A", "int32", "0+"), field("B", "int32", "0+")],
        );
        check_layout(&right, &old, &new, 2).unwrap();
    }

    #[test]
    fn unions_must_be_contiguous() {
        assert_eq!(union(v("0-2"), v("3+")), Some(v("0+")));
        assert_eq!(union(v("3+"), v("0-2")), Some(v("0+")));
        assert_eq!(union(v("0-2"), v("4+")), None);
        assert_eq!(union(v("none"), v("4+")), Some(v("4+")));
        assert_eq!(union(v("0-5"), v("3-7")), Some(v("0-7")));
    }

    #[test]
    fn older_versions_below_m_newer_from_m() {
        // Older 1+ below 3, newer 0+ (meaningless below 3): 1+.
        assert_eq!(combine(v("1+"), v("0+"), 3, "x").unwrap(), v("1+"));
        // Removed in the older set at v2, back in the newer set from v4: a gap.
        assert!(combine(v("0-1"), v("4+"), 3, "x").is_err());
        assert_eq!(combine(v("none"), v("5+"), 3, "x").unwrap(), v("5+"));
        assert_eq!(combine(v("0"), v("none"), 3, "x").unwrap(), v("0"));
    }
}
