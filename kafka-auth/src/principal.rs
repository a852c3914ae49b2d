//! The principal of a TLS client: its certificate's distinguished name as Java prints it
//! ([`rfc2253_name`]), mapped to a short name by `ssl.principal.mapping.rules`
//! ([`SslPrincipalMapper`], Kafka's `SslPrincipalMapper`).
//!
//! Kafka's broker takes the client certificate's subject as `X500Principal.getName()` (RFC
//! 2253 form), applies the rules, and makes `User:<result>` the session's principal; a client
//! that sent no certificate is `User:ANONYMOUS`.
//!
//! The rules' patterns are compiled by the `regex` crate, whose syntax is Java's for what
//! mapping rules use (groups, classes, `.*?`, anchors, `(?i)`). Java-only syntax
//! (look-around, back-references, possessive quantifiers, `\p{Lower}`-style class names) is
//! refused when the rules are parsed. Two differences remain: `\w`, `\d`, `\s` and `\b` are
//! ASCII in Java and Unicode here, and Java's `.` also stops at `\r`, U+0085, U+2028 and
//! U+2029; neither shows on ordinary distinguished names.

use std::fmt;

use regex::{Captures, Regex};

/// The value of `ssl.principal.mapping.rules` when it is not set.
pub const DEFAULT_RULES: &str = "DEFAULT";

/// The principal of a client without a certificate (Kafka's `KafkaPrincipal.ANONYMOUS`).
pub const ANONYMOUS: &str = "User:ANONYMOUS";

/// What went wrong parsing or applying `ssl.principal.mapping.rules`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrincipalError {
    /// A rule that does not follow the syntax (Kafka's text).
    #[error("Invalid rule: `{rule}`, unmatched substring: `{unmatched}`")]
    InvalidRule {
        /// The rule as split from the list.
        rule: String,
        /// What follows the part that parsed.
        unmatched: String,
    },
    /// A line break where Kafka's rule parser cannot take one (inside a rule, outside its
    /// pattern and replacement).
    #[error("Invalid rules `{rules}`: a line break inside a rule")]
    LineBreak {
        /// The whole value.
        rules: String,
    },
    /// A pattern the regex engine refuses.
    #[error("Invalid rule `{rule}`: {reason}")]
    Pattern {
        /// The rule.
        rule: String,
        /// The regex engine's explanation.
        reason: String,
    },
    /// No rule matched the distinguished name (Kafka's `NoMatchingRule` text).
    #[error("No rules apply to {dn}, rules {rules}")]
    NoMatchingRule {
        /// The distinguished name.
        dn: String,
        /// The rules, as Kafka lists them.
        rules: String,
    },
    /// The matching rule's replacement cannot be expanded (a reference to a group the
    /// pattern does not have, a dangling `$` or `\`): Kafka fails the same way, on use.
    #[error("Rule `{rule}` cannot build a name: {reason}")]
    Replacement {
        /// The rule.
        rule: String,
        /// Java's explanation.
        reason: String,
    },
}

/// Upper- or lower-casing of a rule's result (`/U`, `/L`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// One piece of a parsed replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group(usize),
}

#[derive(Debug, Clone)]
struct PatternRule {
    pattern: String,
    replacement: String,
    case: Case,
    /// The pattern anchored at both ends: Java's `matches()`.
    whole: Regex,
    /// The pattern as is: Java's `replaceAll`.
    search: Regex,
    /// The replacement parsed as Java parses it, or why Java would refuse it.
    template: Result<Vec<Piece>, String>,
}

#[derive(Debug, Clone)]
enum MappingRule {
    Default,
    Pattern(Box<PatternRule>),
}

impl fmt::Display for PatternRule {
    /// Kafka's text of a rule: `RULE:pattern/replacement`, then `/L` or `/U`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RULE:{}/{}", self.pattern, self.replacement)?;
        match self.case {
            Case::Keep => Ok(()),
            Case::Lower => f.write_str("/L"),
            Case::Upper => f.write_str("/U"),
        }
    }
}

impl fmt::Display for MappingRule {
    /// Kafka's text of a rule: `DEFAULT` or the pattern rule's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingRule::Default => f.write_str("DEFAULT"),
            MappingRule::Pattern(rule) => rule.fmt(f),
        }
    }
}

/// `ssl.principal.mapping.rules`: a list of `RULE:pattern/replacement/` (optionally followed
/// by `L` or `U`) and `DEFAULT`, separated by commas (a comma inside a pattern or
/// replacement belongs to it; `/` in them is written `\/`). The first rule whose pattern
/// matches the whole distinguished name gives the name: every match of the pattern in it is
/// replaced (`$1` ... refer to groups; a reference to a group the pattern does not have is
/// kept as text, as Kafka does), then lower- or upper-cased. `DEFAULT` gives the
/// distinguished name unchanged. No matching rule is an error; an empty list matches
/// nothing.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<MappingRule>,
}

impl Default for SslPrincipalMapper {
    /// The mapper for [`DEFAULT_RULES`]: the distinguished name unchanged.
    fn default() -> Self {
        SslPrincipalMapper {
            rules: vec![MappingRule::Default],
        }
    }
}

impl fmt::Display for SslPrincipalMapper {
    /// Kafka's text: `SslPrincipalMapper(rules = [RULE:..., DEFAULT])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SslPrincipalMapper(rules = {})", self.rules_text())
    }
}

impl SslPrincipalMapper {
    /// Parses a value of `ssl.principal.mapping.rules`, splitting it as Kafka's parser does.
    /// Empty rules (`,,`) are skipped.
    pub fn parse(rules: &str) -> Result<Self, PrincipalError> {
        let mut parsed = Vec::new();
        for text in split_rules(rules)? {
            if let Some(rule) = parse_rule(text)? {
                parsed.push(rule);
            }
        }
        Ok(SslPrincipalMapper { rules: parsed })
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True when there is no rule at all (then every name fails to map).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Maps a distinguished name to the principal's name (Kafka's `getName`).
    pub fn map(&self, distinguished_name: &str) -> Result<String, PrincipalError> {
        for rule in &self.rules {
            match rule {
                MappingRule::Default => return Ok(distinguished_name.to_string()),
                MappingRule::Pattern(rule) => {
                    if let Some(name) = apply(rule, distinguished_name)? {
                        return Ok(name);
                    }
                }
            }
        }
        Err(PrincipalError::NoMatchingRule {
            dn: distinguished_name.to_string(),
            rules: self.rules_text(),
        })
    }

    /// The session principal of a TLS client: `User:<mapped name>`, or `User:ANONYMOUS`
    /// without a client certificate.
    pub fn principal(&self, distinguished_name: Option<&str>) -> Result<String, PrincipalError> {
        match distinguished_name {
            None => Ok(ANONYMOUS.to_string()),
            Some(dn) => Ok(format!("User:{}", self.map(dn)?)),
        }
    }

    fn rules_text(&self) -> String {
        let texts: Vec<String> = self.rules.iter().map(ToString::to_string).collect();
        format!("[{}]", texts.join(", "))
    }
}

/// Java's `\s`.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// What Java's `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn skip_spaces(s: &str, from: usize) -> usize {
    s.get(from..)
        .and_then(|rest| rest.char_indices().find(|&(_, c)| !is_java_space(c)))
        .map_or(s.len(), |(at, _)| from + at)
}

/// If a rule may end at `at` (spaces, then a comma or the end), the position after the
/// comma and the spaces following it.
fn separator_at(s: &str, at: usize) -> Option<usize> {
    let after_spaces = skip_spaces(s, at);
    match s.get(after_spaces..)?.chars().next() {
        None => Some(after_spaces),
        Some(',') => Some(skip_spaces(s, after_spaces + 1)),
        Some(_) => None,
    }
}

/// The first place at or after `from` where a rule may end, reading no line terminator on
/// the way (Java's lazy `.*?`): (end of the rule text, start of the next rule).
fn lazy_to_separator(s: &str, from: usize) -> Option<(usize, usize)> {
    let rest = s.get(from..)?;
    for (at, c) in rest.char_indices() {
        if let Some(next) = separator_at(s, from + at) {
            return Some((from + at, next));
        }
        if is_line_terminator(c) {
            return None;
        }
    }
    separator_at(s, s.len()).map(|next| (s.len(), next))
}

/// The position of the `/` that ends a pattern or a replacement starting at `from`
/// (characters other than `\` and `/`, or `\` and any character but a line terminator).
fn scan_part(s: &str, from: usize) -> Option<usize> {
    let mut chars = s.get(from..)?.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '/' => return Some(from + at),
            '\\' => match chars.next() {
                Some((_, escaped)) if !is_line_terminator(escaped) => {}
                _ => return None,
            },
            _ => {}
        }
    }
    None
}

/// The parts of a rule text `RULE:pattern/replacement/[LU]`: (pattern, replacement, case,
/// end of what parsed).
fn rule_parts(text: &str) -> Option<(&str, &str, Case, usize)> {
    let body = "RULE:".len();
    if !text.starts_with("RULE:") {
        return None;
    }
    let pattern_end = scan_part(text, body)?;
    let replacement_end = scan_part(text, pattern_end + 1)?;
    let flags = replacement_end + 1;
    let (case, end) = match text.get(flags..).and_then(|rest| rest.chars().next()) {
        Some('L') => (Case::Lower, flags + 1),
        Some('U') => (Case::Upper, flags + 1),
        _ => (Case::Keep, flags),
    };
    Some((
        text.get(body..pattern_end)?,
        text.get(pattern_end + 1..replacement_end)?,
        case,
        end,
    ))
}

/// Splits the value into rule texts as Kafka's splitter regex does: after optional spaces,
/// `DEFAULT`, or `RULE:pattern/replacement/` with anything up to the next comma, or anything
/// up to the next comma; each followed by optional spaces and a comma, or the end.
fn split_rules(value: &str) -> Result<Vec<&str>, PrincipalError> {
    let s = value.trim_matches(|c: char| c <= ' ');
    let line_break = || PrincipalError::LineBreak {
        rules: value.to_string(),
    };
    let mut texts = Vec::new();
    let mut at = 0;
    while at < s.len() {
        let start = skip_spaces(s, at);
        let rest = s.get(start..).unwrap_or_default();
        let default_end = rest
            .starts_with("DEFAULT")
            .then(|| start + "DEFAULT".len())
            .and_then(|end| separator_at(s, end).map(|next| (end, next)));
        let rule_end = || {
            let (_, _, _, end) = rule_parts(rest)?;
            lazy_to_separator(s, start + end)
        };
        let (end, next) = match default_end.or_else(rule_end) {
            Some(found) => found,
            None => lazy_to_separator(s, start).ok_or_else(line_break)?,
        };
        texts.push(s.get(start..end).unwrap_or_default());
        if next <= at {
            break;
        }
        at = next;
    }
    Ok(texts)
}

/// Parses one rule text; `None` for an empty one.
fn parse_rule(text: &str) -> Result<Option<MappingRule>, PrincipalError> {
    if text.is_empty() {
        return Ok(None);
    }
    let invalid = |end: usize| PrincipalError::InvalidRule {
        rule: text.to_string(),
        unmatched: text.get(end..).unwrap_or_default().to_string(),
    };
    if text.starts_with("DEFAULT") {
        return if text.len() == "DEFAULT".len() {
            Ok(Some(MappingRule::Default))
        } else {
            Err(invalid("DEFAULT".len()))
        };
    }
    let Some((pattern, replacement, case, end)) = rule_parts(text) else {
        return Err(invalid(0));
    };
    if end != text.len() {
        return Err(invalid(end));
    }
    let compile = |source: &str| {
        Regex::new(source).map_err(|e| PrincipalError::Pattern {
            rule: text.to_string(),
            reason: e.to_string(),
        })
    };
    let search = compile(pattern)?;
    let whole = compile(&format!(r"\A(?:{pattern})\z"))?;
    let template = parse_replacement(replacement, &search);
    Ok(Some(MappingRule::Pattern(Box::new(PatternRule {
        pattern: pattern.to_string(),
        replacement: replacement.to_string(),
        case,
        whole,
        search,
        template,
    }))))
}

/// Parses a replacement as Java's `Matcher.appendReplacement` reads it, after Kafka's pass
/// that turns a reference to a missing group into text: `\x` is `x`; `${name}` is a named
/// group; `$` and digits is a group, taking as many digits as still name a group (`$12` with
/// one group is group 1 and `2`). When the pattern has groups, a `$` whose first digit is
/// above their count is text (Kafka's pass); without groups, `$1` is an error, as in Kafka.
///
/// Kafka's pass works on the raw text: it also rewrites a `\$9`, and after its first rewrite
/// it puts the next escape one character early. Those two corners are not copied: here an
/// escaped `$` stays text and every out-of-range reference is text.
fn parse_replacement(replacement: &str, pattern: &Regex) -> Result<Vec<Piece>, String> {
    let groups = pattern.captures_len().saturating_sub(1);
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped) => text.push(escaped),
                None => return Err("character to be escaped is missing".to_string()),
            },
            '$' => {
                let group = match chars.peek().copied() {
                    None => {
                        return Err("Illegal group reference: group index is missing".to_string());
                    }
                    Some('{') => {
                        chars.next();
                        let mut name = String::new();
                        while let Some(&n) = chars.peek() {
                            if !n.is_ascii_alphanumeric() {
                                break;
                            }
                            name.push(n);
                            chars.next();
                        }
                        if name.is_empty() {
                            return Err("named capturing group has 0 length name".to_string());
                        }
                        if chars.next() != Some('}') {
                            return Err("named capturing group is missing trailing '}'".to_string());
                        }
                        if name.starts_with(|n: char| n.is_ascii_digit()) {
                            return Err(format!(
                                "capturing group name {{{name}}} starts with digit character"
                            ));
                        }
                        pattern
                            .capture_names()
                            .position(|n| n == Some(name.as_str()))
                            .ok_or_else(|| format!("No group with name {{{name}}}"))?
                    }
                    Some(d) if d.is_ascii_digit() => {
                        let first = d.to_digit(10).unwrap_or(0) as usize;
                        if groups > 0 && first > groups {
                            // Kafka's pass: a reference to a group the pattern lacks is text.
                            text.push('$');
                            continue;
                        }
                        chars.next();
                        let mut number = first;
                        while let Some(next) = chars.peek().and_then(|n| n.to_digit(10)) {
                            let longer = number * 10 + next as usize;
                            if longer > groups {
                                break;
                            }
                            number = longer;
                            chars.next();
                        }
                        if number > groups {
                            return Err(format!("No group {number}"));
                        }
                        number
                    }
                    Some(_) => return Err("Illegal group reference".to_string()),
                };
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                pieces.push(Piece::Group(group));
            }
            other => text.push(other),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

fn expand(pieces: &[Piece], captures: &Captures<'_>, out: &mut String) {
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Group(n) => {
                if let Some(m) = captures.get(*n) {
                    out.push_str(m.as_str());
                }
            }
        }
    }
}

/// Applies one rule: `None` when its pattern does not match the whole name.
fn apply(rule: &PatternRule, dn: &str) -> Result<Option<String>, PrincipalError> {
    if !rule.whole.is_match(dn) {
        return Ok(None);
    }
    let pieces = rule
        .template
        .as_ref()
        .map_err(|reason| PrincipalError::Replacement {
            rule: rule.to_string(),
            reason: reason.clone(),
        })?;
    // Java's replaceAll: every match from left to right; after an empty match the search
    // moves on one character, after a non-empty one it may find an empty match right at its
    // end (so `(.*)` replaces twice: the name, then the empty end).
    let mut out = String::with_capacity(dn.len());
    let mut copied = 0;
    let mut at = 0;
    while at <= dn.len() {
        let Some(captures) = rule.search.captures_at(dn, at) else {
            break;
        };
        let Some(whole) = captures.get(0) else {
            break;
        };
        out.push_str(dn.get(copied..whole.start()).unwrap_or_default());
        expand(pieces, &captures, &mut out);
        copied = whole.end();
        at = if whole.is_empty() {
            match dn.get(whole.end()..).and_then(|rest| rest.chars().next()) {
                Some(c) => whole.end() + c.len_utf8(),
                None => break,
            }
        } else {
            whole.end()
        };
    }
    out.push_str(dn.get(copied..).unwrap_or_default());
    Ok(Some(match rule.case {
        Case::Keep => out,
        Case::Lower => out.to_lowercase(),
        Case::Upper => out.to_uppercase(),
    }))
}

/// Well-known attribute type OIDs of distinguished names.
pub mod oid {
    /// commonName (CN).
    pub const COMMON_NAME: &str = "2.5.4.3";
    /// countryName (C).
    pub const COUNTRY: &str = "2.5.4.6";
    /// localityName (L).
    pub const LOCALITY: &str = "2.5.4.7";
    /// stateOrProvinceName (ST).
    pub const STATE: &str = "2.5.4.8";
    /// streetAddress (STREET).
    pub const STREET: &str = "2.5.4.9";
    /// organizationName (O).
    pub const ORGANIZATION: &str = "2.5.4.10";
    /// organizationalUnitName (OU).
    pub const ORGANIZATIONAL_UNIT: &str = "2.5.4.11";
    /// serialNumber (printed by OID in RFC 2253 form).
    pub const SERIAL_NUMBER: &str = "2.5.4.5";
    /// domainComponent (DC).
    pub const DOMAIN_COMPONENT: &str = "0.9.2342.19200300.100.1.25";
    /// userId (UID).
    pub const USER_ID: &str = "0.9.2342.19200300.100.1.1";
    /// PKCS #9 emailAddress (printed by OID in RFC 2253 form).
    pub const EMAIL_ADDRESS: &str = "1.2.840.113549.1.9.1";
}

/// DER tags of the string types.
const TAG_UTF8_STRING: u8 = 12;
const TAG_PRINTABLE_STRING: u8 = 19;
const TAG_T61_STRING: u8 = 20;
const TAG_IA5_STRING: u8 = 22;
const TAG_GENERAL_STRING: u8 = 27;
const TAG_BMP_STRING: u8 = 30;

/// One attribute of a certificate's subject: its type and its DER-encoded value, as a
/// certificate parser gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttributeTypeAndValue<'a> {
    /// The attribute type, dotted (`2.5.4.3`; see [`oid`]).
    pub oid: &'a str,
    /// The value's DER tag (12 UTF8String, 19 PrintableString, 22 IA5String ...).
    pub tag: u8,
    /// The value's content octets.
    pub content: &'a [u8],
}

impl<'a> AttributeTypeAndValue<'a> {
    /// A UTF8String value.
    pub fn utf8(oid: &'a str, text: &'a str) -> Self {
        AttributeTypeAndValue {
            oid,
            tag: TAG_UTF8_STRING,
            content: text.as_bytes(),
        }
    }

    /// A PrintableString value.
    pub fn printable(oid: &'a str, text: &'a str) -> Self {
        AttributeTypeAndValue {
            oid,
            tag: TAG_PRINTABLE_STRING,
            content: text.as_bytes(),
        }
    }
}

/// The RFC 2253 keyword Java prints for an attribute type; other types print as their OID.
fn rfc2253_keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        oid::COMMON_NAME => "CN",
        oid::COUNTRY => "C",
        oid::LOCALITY => "L",
        oid::STATE => "ST",
        oid::ORGANIZATION => "O",
        oid::ORGANIZATIONAL_UNIT => "OU",
        oid::STREET => "STREET",
        oid::DOMAIN_COMPONENT => "DC",
        oid::USER_ID => "UID",
        _ => return None,
    })
}

/// Decodes a string value as Java does for RFC 2253 (`None` for a type that is not one of
/// Java's string types). Malformed UTF-8 / UTF-16 turns into U+FFFD, as Java decodes.
fn decode_string(tag: u8, content: &[u8]) -> Option<String> {
    match tag {
        TAG_UTF8_STRING => Some(String::from_utf8_lossy(content).into_owned()),
        TAG_PRINTABLE_STRING | TAG_T61_STRING | TAG_IA5_STRING | TAG_GENERAL_STRING => {
            Some(content.iter().map(|&b| char::from(b)).collect())
        }
        TAG_BMP_STRING => {
            let units = content.chunks(2).map(|pair| match pair {
                [hi, lo] => u16::from_be_bytes([*hi, *lo]),
                _ => 0xFFFD,
            });
            Some(
                char::decode_utf16(units)
                    .map(|c| c.unwrap_or('\u{FFFD}'))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Escapes an attribute value as Java's RFC 2253 output does: a backslash before each of
/// `,` `=` `+` `<` `>` `#` `;` `"` `\` (Java escapes `=` and every `#`, more than RFC 2253
/// asks), NUL as `\00`, and a backslash before each leading or trailing space or carriage
/// return. Other characters, non-ASCII ones included, are kept as they are.
pub fn escape_rfc2253_value(value: &str) -> String {
    let mut escaped: Vec<char> = Vec::with_capacity(value.len() + 4);
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => {
                escaped.push('\\');
                escaped.push(c);
            }
            '\0' => escaped.extend(['\\', '0', '0']),
            _ => escaped.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + lead + trail);
    let len = escaped.len();
    for (i, c) in escaped.into_iter().enumerate() {
        if i < lead || i >= len.saturating_sub(trail) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Writes `len` as a DER length: one byte below 128, else 0x80 + the number of length
/// bytes, then the length big-endian without leading zeros.
fn push_der_length(out: &mut Vec<u8>, len: usize) {
    match u8::try_from(len) {
        Ok(short) if short < 0x80 => out.push(short),
        _ => {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|&&b| b == 0).count();
            let significant = bytes.get(skip..).unwrap_or_default();
            // At most 8 length bytes, so the count fits in the low bits.
            out.push(0x80 | u8::try_from(significant.len()).unwrap_or(0x7f));
            out.extend_from_slice(significant);
        }
    }
}

fn rfc2253_attribute(attribute: &AttributeTypeAndValue<'_>, out: &mut String) {
    use std::fmt::Write as _;
    let keyword = rfc2253_keyword(attribute.oid);
    out.push_str(keyword.unwrap_or(attribute.oid));
    out.push('=');
    match (keyword, decode_string(attribute.tag, attribute.content)) {
        (Some(_), Some(text)) => out.push_str(&escape_rfc2253_value(&text)),
        _ => {
            // `#` and the value's DER encoding in lower-case hexadecimal.
            let mut der = Vec::with_capacity(attribute.content.len() + 6);
            der.push(attribute.tag);
            push_der_length(&mut der, attribute.content.len());
            der.extend_from_slice(attribute.content);
            out.push('#');
            for byte in der {
                // Writing to a String cannot fail.
                let _ = write!(out, "{byte:02x}");
            }
        }
    }
}

/// A subject's distinguished name as Kafka sees it: Java's `X500Principal.getName()`, the
/// RFC 2253 form, from the subject's relative distinguished names in certificate order
/// (each a set of one or more attributes).
///
/// Java prints the RDNs in reverse: a certificate encoding `C=US, O=Example, OU=eng,
/// CN=alice` prints as `CN=alice,OU=eng,O=Example,C=US`. Within a multi-valued RDN the
/// attributes keep their order, joined by `+`. CN, C, L, ST, O, OU, STREET, DC and UID print
/// by keyword with their text escaped ([`escape_rfc2253_value`]); any other type (emailAddress,
/// serialNumber ...) prints as its OID with `#` and the hexadecimal DER of its value, and so
/// does a keyword type whose value is not a string.
pub fn rfc2253_name<'a, R: AsRef<[AttributeTypeAndValue<'a>]>>(
    rdns_in_certificate_order: &[R],
) -> String {
    let mut out = String::new();
    for (i, rdn) in rdns_in_certificate_order.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, attribute) in rdn.as_ref().iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            rfc2253_attribute(attribute, &mut out);
        }
    }
    out
}

#[cfg(test)]
#[path = "principal_tests.rs"]
mod tests;
