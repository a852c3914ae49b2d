//! Subscriptions by regular expression (`subscribed_topic_regex`, ConsumerGroupHeartbeat v1),
//! resolved on the broker against the topics of the metadata image.
//!
//! KIP-848 specifies Google's RE2/J syntax; the `regex` crate implements the same RE2
//! family (linear-time matching, no backreferences, no lookaround), and a topic matches when
//! the whole name matches, as RE2/J's `matches()`. Where the two differ:
//! - `\Q...\E` quoting (RE2/J) is not supported here: such a regex is refused as invalid;
//! - `\d`, `\w`, `\s`, `\b` and case-insensitive matching are Unicode-aware here, ASCII in
//!   RE2/J (topic names are ASCII, so names match alike);
//! - `(?<name>...)` groups are accepted here too (RE2/J only takes `(?P<name>...)`);
//! - a compiled program larger than `regex_size_limit` is refused (INVALID_REGULAR_EXPRESSION),
//!   where RE2/J has no bound.
//!
//! Internal topics (`__consumer_offsets`, ...) never match.

use std::collections::BTreeSet;

use regex::{Regex, RegexBuilder};

use super::types::{ConsumerGroupError, TopicsImage};

/// Compiles `pattern` anchored at both ends, bounded by `size_limit` bytes of program.
///
/// The pattern is first compiled on its own, so that one like `a)|(b` cannot close the
/// anchoring group and match a part of a name.
pub fn compile(pattern: &str, size_limit: usize) -> Result<Regex, ConsumerGroupError> {
    let build = |p: &str| {
        RegexBuilder::new(p)
            .size_limit(size_limit)
            .dfa_size_limit(size_limit)
            .build()
            .map_err(|e| ConsumerGroupError::InvalidRegularExpression {
                regex: pattern.to_owned(),
                reason: e.to_string(),
            })
    };
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

/// The non-internal topics of `image` whose whole name matches `pattern`.
pub fn resolve(
    pattern: &str,
    image: &dyn TopicsImage,
    size_limit: usize,
) -> Result<BTreeSet<String>, ConsumerGroupError> {
    let re = compile(pattern, size_limit)?;
    Ok(image
        .topic_names()
        .into_iter()
        .filter(|name| !image.is_internal(name) && re.is_match(name))
        .collect())
}
