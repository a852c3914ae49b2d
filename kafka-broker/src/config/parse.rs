//! The value parsers every configuration key uses, broker and topic keys alike: numbers with
//! their bounds, booleans, lists, ratios, durations given in larger units, and the few values
//! with a shape of their own (a cleanup policy, a timestamp type, a cluster id, per-host
//! counts).
//!
//! A parser takes the value as written (surrounding spaces are ignored) and returns the typed
//! value or [`Why`] it is refused; the key tables put the key and value in front of the reason
//! (`num.partitions=0: must be positive`) and choose the error (a broker key refuses to
//! start, a topic key is INVALID_CONFIG). Imports nothing of the broker.

use std::fmt::Display;
use std::net::IpAddr;
use std::str::FromStr;

use super::TimestampType;

/// Why a value is refused, without the key and value (the caller names them).
pub type Why = String;

/// The integer types of configuration values, with the words that name them in a refusal.
pub trait Integer: Copy + PartialOrd + Display + FromStr {
    /// "a 32-bit integer", ...
    const WHAT: &'static str;
    const ZERO: Self;
}

macro_rules! integer {
    ($($t:ty => $what:literal),* $(,)?) => {
        $(impl Integer for $t {
            const WHAT: &'static str = $what;
            const ZERO: Self = 0;
        })*
    };
}

integer!(
    i16 => "a 16-bit integer",
    i32 => "a 32-bit integer",
    i64 => "a 64-bit integer",
    u16 => "a number from 0 to 65535",
    u32 => "a non-negative 32-bit integer",
    u64 => "a non-negative 64-bit integer",
    usize => "a non-negative integer",
);

/// Any value of the integer type.
pub fn integer<T: Integer>(v: &str) -> Result<T, Why> {
    v.trim().parse().map_err(|_| format!("not {}", T::WHAT))
}

/// An integer of at least `min` ("must not be negative" for 0).
pub fn at_least<T: Integer>(v: &str, min: T) -> Result<T, Why> {
    let n = integer(v)?;
    if n >= min {
        Ok(n)
    } else if min == T::ZERO {
        Err("must not be negative".into())
    } else {
        Err(format!("must be at least {min}"))
    }
}

/// An integer above 0.
pub fn positive<T: Integer>(v: &str) -> Result<T, Why> {
    let n = integer(v)?;
    if n > T::ZERO {
        Ok(n)
    } else {
        Err("must be positive".into())
    }
}

/// An integer from `min` to `max`.
pub fn between<T: Integer>(v: &str, min: T, max: T) -> Result<T, Why> {
    let n = integer(v)?;
    if n >= min && n <= max {
        Ok(n)
    } else {
        Err(format!("must be between {min} and {max}"))
    }
}

/// A duration written in a larger unit (`log.retention.hours`): the value times `unit_ms`,
/// saturating at the type's bounds.
pub fn scaled(v: &str, unit_ms: i64) -> Result<i64, Why> {
    Ok(integer::<i64>(v)?.saturating_mul(unit_ms))
}

/// A positive duration in a larger unit (`log.roll.hours`).
pub fn positive_scaled(v: &str, unit_ms: i64) -> Result<i64, Why> {
    Ok(positive::<i64>(v)?.saturating_mul(unit_ms))
}

/// A flush interval (a positive long): Kafka writes "never" as `Long.MAX_VALUE`, which is
/// `None` here.
pub fn interval(v: &str) -> Result<Option<u64>, Why> {
    match positive::<i64>(v)? {
        i64::MAX => Ok(None),
        n => Ok(u64::try_from(n).ok()),
    }
}

/// How Kafka writes an interval that may be "never" ([`interval`]).
pub fn show_interval(v: Option<u64>) -> String {
    v.map_or_else(|| i64::MAX.to_string(), |n| n.to_string())
}

/// `true` or `false`.
pub fn boolean(v: &str) -> Result<bool, Why> {
    match v.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// A number from 0 to 1.
pub fn ratio(v: &str) -> Result<f64, Why> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| "expected a number between 0 and 1".into())
}

/// Any text, trimmed.
pub fn text(v: &str) -> Result<String, Why> {
    Ok(v.trim().to_owned())
}

/// Text, `None` when empty.
pub fn optional_text(v: &str) -> Result<Option<String>, Why> {
    let v = v.trim();
    Ok((!v.is_empty()).then(|| v.to_owned()))
}

/// The items of a comma-separated list, trimmed, without empty ones.
pub fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// `cleanup.policy`: `delete`, `compact` or both, as (compact, delete). Empty items are
/// refused (`compact,,delete`, and an empty value).
pub fn cleanup_policy(v: &str) -> Result<(bool, bool), Why> {
    let (mut compact, mut delete) = (false, false);
    for p in v.split(',').map(str::trim) {
        match p {
            "compact" => compact = true,
            "delete" => delete = true,
            _ => return Err("expected delete, compact or both".into()),
        }
    }
    Ok((compact, delete))
}

/// A cleanup policy as given, once it parses.
pub fn cleanup_policy_text(v: &str) -> Result<String, Why> {
    cleanup_policy(v)?;
    Ok(v.to_owned())
}

/// `CreateTime` or `LogAppendTime`.
pub fn timestamp_type(v: &str) -> Result<TimestampType, Why> {
    match v.trim() {
        "CreateTime" => Ok(TimestampType::CreateTime),
        "LogAppendTime" => Ok(TimestampType::LogAppendTime),
        _ => Err("expected CreateTime or LogAppendTime".into()),
    }
}

/// How Kafka writes a timestamp type.
pub fn show_timestamp_type(t: TimestampType) -> String {
    t.name().to_owned()
}

/// A cluster id (or any id stored as a properties value): not empty, no whitespace, control
/// characters or backslashes.
pub fn cluster_id(v: &str) -> Result<String, Why> {
    if v.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) = v
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == '\\')
    {
        return Err(format!("an id cannot contain {c:?}"));
    }
    Ok(v.to_owned())
}

/// `host:count,...` (`max.connections.per.ip.overrides`); a host name stands for every address
/// it resolves to (resolved here, once).
pub fn host_counts(v: &str) -> Result<Vec<(IpAddr, usize)>, Why> {
    use std::net::ToSocketAddrs;
    let mut out = Vec::new();
    for entry in list(v) {
        let bad = |why: &str| format!("entry {entry:?}: {why}");
        let (host, count) = entry
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:count"))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| bad("the count is not a non-negative integer"))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(ip) => out.push((ip, count)),
            Err(_) => {
                let addrs = (host, 0)
                    .to_socket_addrs()
                    .map_err(|e| bad(&format!("cannot resolve the host: {e}")))?;
                out.extend(addrs.map(|a| (a.ip(), count)));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_their_bounds() {
        assert_eq!(integer::<i32>(" 12 "), Ok(12));
        assert_eq!(
            integer::<i32>("2147483648"),
            Err("not a 32-bit integer".into())
        );
        assert_eq!(
            integer::<u64>("-1"),
            Err("not a non-negative 64-bit integer".into())
        );
        assert_eq!(at_least::<i64>("-1", 0), Err("must not be negative".into()));
        assert_eq!(at_least::<i64>("0", 1), Err("must be at least 1".into()));
        assert_eq!(at_least::<i64>("-1", -1), Ok(-1));
        assert_eq!(positive::<usize>("0"), Err("must be positive".into()));
        assert_eq!(positive::<i16>("3"), Ok(3));
        assert_eq!(
            between::<u64>("13", 14, 20),
            Err("must be between 14 and 20".into())
        );
        assert_eq!(between::<u64>("20", 14, 20), Ok(20));
    }

    #[test]
    fn durations_in_larger_units_saturate() {
        assert_eq!(scaled("2", 3_600_000), Ok(7_200_000));
        assert_eq!(scaled("-1", 60_000), Ok(-60_000));
        assert_eq!(scaled(&i64::MAX.to_string(), 60_000), Ok(i64::MAX));
        assert_eq!(
            positive_scaled("0", 3_600_000),
            Err("must be positive".into())
        );
        assert_eq!(positive_scaled(&i64::MAX.to_string(), 2), Ok(i64::MAX));
    }

    #[test]
    fn never_is_long_max() {
        assert_eq!(interval("5"), Ok(Some(5)));
        assert_eq!(interval("9223372036854775807"), Ok(None));
        assert!(interval("0").is_err());
        assert_eq!(show_interval(None), "9223372036854775807");
        assert_eq!(show_interval(Some(5)), "5");
    }

    #[test]
    fn words_and_lists() {
        assert_eq!(boolean(" true"), Ok(true));
        assert!(boolean("yes").is_err());
        assert_eq!(ratio("0.25"), Ok(0.25));
        assert!(ratio("NaN").is_err() && ratio("1.5").is_err());
        assert_eq!(list(" a, ,b ,").collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(cleanup_policy("compact, delete"), Ok((true, true)));
        for bad in ["", "keep", "compact,,delete"] {
            assert!(cleanup_policy(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            timestamp_type("LogAppendTime"),
            Ok(TimestampType::LogAppendTime)
        );
        assert_eq!(show_timestamp_type(TimestampType::CreateTime), "CreateTime");
        assert!(timestamp_type("Now").is_err());
        assert_eq!(optional_text(" "), Ok(None));
    }

    #[test]
    fn cluster_ids() {
        assert!(cluster_id("MkU3OEVBNTcwNTJENDM2Qk").is_ok());
        for bad in ["", "a b", "a\nb", "a\\b"] {
            assert!(cluster_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn host_counts_resolve_names() {
        let o = host_counts("127.0.0.2:12, [::1]:0,localhost:3").unwrap();
        assert!(o.contains(&("127.0.0.2".parse().unwrap(), 12)));
        assert!(o.contains(&("::1".parse().unwrap(), 0)));
        assert!(o.iter().any(|&(ip, n)| ip.is_loopback() && n == 3), "{o:?}");
        for bad in ["127.0.0.1", "127.0.0.1:-1", "127.0.0.1:x"] {
            assert!(host_counts(bad).is_err(), "{bad}");
        }
    }
}
