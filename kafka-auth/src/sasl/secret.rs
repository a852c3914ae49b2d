//! [`Secret`]: a password, proof or key that never prints.

use std::fmt;

use subtle::ConstantTimeEq;

/// Bytes that must not reach a log line: a password, a SCRAM proof or key, a token.
///
/// `Debug` and `Display` print `[hidden]`, whatever the content; the bytes come out only
/// through [`Secret::expose`] (and [`Secret::expose_str`]), so every place that reads them is
/// easy to find. Equality is compared in constant time (for equal lengths: the length itself
/// is not hidden), as Kafka compares passwords with `Utils.isEqualConstantTime`. On drop the
/// bytes are overwritten with zeros, on a best-effort basis (the crate has no unsafe code to
/// force the write past the optimizer; copies made earlier by a caller are not reached).
#[derive(Clone, Default)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps bytes (or a string's UTF-8 bytes) as a secret.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// The secret bytes. Call it only where the bytes are used (compared, hashed, sent).
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// The secret as text, when it is UTF-8 (passwords from a JAAS config always are).
    pub fn expose_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// Number of bytes (not secret: lengths are visible on the wire anyway).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Constant-time comparison with other bytes (the time depends on the lengths only).
    pub fn ct_eq(&self, other: &[u8]) -> bool {
        bool::from(self.0.as_slice().ct_eq(other))
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Self(s.into_bytes())
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Self(s.as_bytes().to_vec())
    }
}

impl From<Vec<u8>> for Secret {
    fn from(v: Vec<u8>) -> Self {
        Self(v)
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq(&other.0)
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[hidden]")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.fill(0);
        std::hint::black_box(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_its_bytes() {
        let s = Secret::from("pencil");
        assert_eq!(format!("{s}"), "[hidden]");
        assert_eq!(format!("{s:?}"), "[hidden]");
        assert_eq!(format!("{:?}", Some(&s)), "Some([hidden])");
        assert_eq!(format!("{s:#?}"), "[hidden]");
    }

    #[test]
    fn compares_by_content() {
        let a = Secret::from("pencil");
        assert_eq!(a, Secret::from(String::from("pencil")));
        assert_ne!(a, Secret::from("pencik"));
        assert_ne!(a, Secret::from("pencil "));
        assert_ne!(a, Secret::from(""));
        assert!(a.ct_eq(b"pencil"));
        assert!(!a.ct_eq(b"pen"));
        assert_eq!(a.expose(), b"pencil");
        assert_eq!(a.expose_str(), Some("pencil"));
        assert_eq!(Secret::new(vec![0xff]).expose_str(), None);
        assert_eq!(a.len(), 6);
        assert!(Secret::default().is_empty());
    }
}
