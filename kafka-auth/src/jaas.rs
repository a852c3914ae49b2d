//! Values of `sasl.jaas.config`, read as Kafka's `JaasConfig` reads them:
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_admin="admin-secret";
//! ```
//!
//! One or more entries `class flag (name=value)* ;`. Kafka tokenizes with Java's
//! `StreamTokenizer`, set up so that: characters up to the space are whitespace (newlines
//! included); `;` and `=` stand alone; `"` and `'` quote, with backslash escapes (`\n`, `\t`,
//! `\r`, `\b`, `\f`, `\a`, `\v`, octal `\0`-`\377`, and `\x` for any other `x`); `/` starts a
//! comment (`//` and a lone `/` to the end of the line, `/* ... */`), also in the middle of a
//! bare word, so a value holding `/` (a URL, a path) must be quoted; every other character is
//! part of a bare word. The flag is one of required, requisite, sufficient, optional, in any
//! case. A repeated option keeps its last value.
//!
//! Two differences from Java, both turning a silent truncation into an error: a quoted value
//! not closed before the end of its line (or of the text) is an error where Java ends the
//! value there, and the control characters U+0081-U+009F (which Java's set-up leaves as
//! one-character tokens, always a syntax error later) are reported where they stand.
//!
//! Errors give a line and column and never the text there: the value may be a password.

use std::collections::BTreeMap;
use std::fmt;

use crate::sasl::Secret;

/// Kafka's PLAIN login module (`user_NAME` options are its broker-side users).
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// Kafka's SCRAM login module.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
/// Kafka's OAUTHBEARER login module.
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// Where in a JAAS config text (1-based line and column, in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1, counted in characters.
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// A `sasl.jaas.config` value Kafka would refuse. Never holds text from the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JaasError {
    /// Nothing but whitespace and comments.
    #[error("the JAAS config names no login module")]
    NoLoginModule,
    /// Kafka takes exactly one module from a `sasl.jaas.config` property.
    #[error("the JAAS config has {count} login modules; Kafka takes exactly one")]
    ModuleCount {
        /// How many there are.
        count: usize,
    },
    /// A login module entry starts with `;` or `=`.
    #[error("JAAS config, {at}: expected a login module class name")]
    ExpectedClass {
        /// Where.
        at: Position,
    },
    /// The text ends after the class name.
    #[error("JAAS config, {at}: the login module has no control flag")]
    MissingFlag {
        /// Where.
        at: Position,
    },
    /// The flag is not required, requisite, sufficient or optional.
    #[error(
        "JAAS config, {at}: invalid control flag (required, requisite, sufficient or optional)"
    )]
    InvalidFlag {
        /// Where.
        at: Position,
    },
    /// Something other than an option name where one belongs.
    #[error("JAAS config, {at}: expected an option name or ';'")]
    ExpectedOptionName {
        /// Where.
        at: Position,
    },
    /// An option without `=value`.
    #[error("JAAS config, {at}: option without a value (expected name=value)")]
    MissingValue {
        /// Where.
        at: Position,
    },
    /// The text ends before the entry's `;`.
    #[error("JAAS config, {at}: the login module entry does not end with ';'")]
    MissingSemicolon {
        /// Where.
        at: Position,
    },
    /// A quoted value that is not closed on its line.
    #[error("JAAS config, {at}: quoted value not closed on its line")]
    UnterminatedQuote {
        /// Where the quote opens.
        at: Position,
    },
    /// A control character U+0081-U+009F outside quotes.
    #[error("JAAS config, {at}: unexpected control character")]
    UnexpectedCharacter {
        /// Where.
        at: Position,
    },
}

/// A login module's control flag (how JAAS combines modules; Kafka keeps it, uses one module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlFlag {
    /// `required`.
    Required,
    /// `requisite`.
    Requisite,
    /// `sufficient`.
    Sufficient,
    /// `optional`.
    Optional,
}

impl ControlFlag {
    fn parse(s: &str) -> Option<Self> {
        [
            ("required", Self::Required),
            ("requisite", Self::Requisite),
            ("sufficient", Self::Sufficient),
            ("optional", Self::Optional),
        ]
        .into_iter()
        .find(|(name, _)| s.eq_ignore_ascii_case(name))
        .map(|(_, f)| f)
    }
}

/// Whether an option's value is hidden from `Debug`: `password`, `user_NAME` (PLAIN users'
/// passwords), and any name containing "password" or "secret" (any case), such as
/// OAUTHBEARER's `clientSecret`.
pub fn is_sensitive_option(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    name.starts_with("user_") || lower.contains("password") || lower.contains("secret")
}

/// One entry of a JAAS config: a login module class, its flag and its options.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginModule {
    class: String,
    flag: ControlFlag,
    options: BTreeMap<String, String>,
}

impl LoginModule {
    /// The login module's class name.
    pub fn class(&self) -> &str {
        &self.class
    }

    /// The control flag.
    pub fn flag(&self) -> ControlFlag {
        self.flag
    }

    /// The value of option `name`, if set.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }

    /// Every option, by name (values in clear: see [`is_sensitive_option`] before showing
    /// them).
    pub fn options(&self) -> impl Iterator<Item = (&str, &str)> {
        self.options.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The `username` option (a client's user name).
    pub fn username(&self) -> Option<&str> {
        self.option("username")
    }

    /// The `password` option (a client's password).
    pub fn password(&self) -> Option<Secret> {
        self.option("password").map(Secret::from)
    }

    /// The broker's PLAIN users: the `user_NAME="password"` options, when this is Kafka's
    /// `PlainLoginModule` (Kafka's `PlainServerCallbackHandler` reads them from that module
    /// only). An option named just `user_` (an empty user name) is left out.
    pub fn plain_users(&self) -> BTreeMap<String, Secret> {
        if self.class != PLAIN_LOGIN_MODULE {
            return BTreeMap::new();
        }
        self.options
            .iter()
            .filter_map(|(k, v)| {
                let user = k.strip_prefix("user_").filter(|u| !u.is_empty())?;
                Some((user.to_owned(), Secret::from(v.as_str())))
            })
            .collect()
    }
}

impl fmt::Debug for LoginModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Options<'a>(&'a BTreeMap<String, String>);
        impl fmt::Debug for Options<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.iter().map(|(k, v)| {
                        let v: &dyn fmt::Debug = if is_sensitive_option(k) {
                            &"[hidden]"
                        } else {
                            v
                        };
                        (k, v)
                    }))
                    .finish()
            }
        }
        f.debug_struct("LoginModule")
            .field("class", &self.class)
            .field("flag", &self.flag)
            .field("options", &Options(&self.options))
            .finish()
    }
}

/// The parser of `sasl.jaas.config` values.
#[derive(Debug, Clone, Copy)]
pub struct JaasConfig;

impl JaasConfig {
    /// Every login module entry of `text`, in order (at least one).
    pub fn parse(text: &str) -> Result<Vec<LoginModule>, JaasError> {
        let mut lexer = Lexer::new(text);
        let mut modules = Vec::new();
        while let Some(token) = lexer.next()? {
            modules.push(entry(&mut lexer, token)?);
        }
        if modules.is_empty() {
            return Err(JaasError::NoLoginModule);
        }
        Ok(modules)
    }

    /// The one login module of a `sasl.jaas.config` property: Kafka's clients and brokers
    /// both refuse a property with more than one ("should be 1 module").
    pub fn parse_single(text: &str) -> Result<LoginModule, JaasError> {
        let mut modules = Self::parse(text)?;
        match modules.len() {
            1 => modules.pop().ok_or(JaasError::NoLoginModule),
            count => Err(JaasError::ModuleCount { count }),
        }
    }
}

/// One entry, its first token already read.
fn entry(lexer: &mut Lexer<'_>, first: Token) -> Result<LoginModule, JaasError> {
    let at = first.at;
    let class = first.word().ok_or(JaasError::ExpectedClass { at })?;
    let flag_token = lexer
        .next()?
        .ok_or_else(|| JaasError::MissingFlag { at: lexer.here() })?;
    let at = flag_token.at;
    let flag = flag_token
        .word()
        .and_then(|w| ControlFlag::parse(&w))
        .ok_or(JaasError::InvalidFlag { at })?;
    let mut options = BTreeMap::new();
    loop {
        let Some(token) = lexer.next()? else {
            return Err(JaasError::MissingSemicolon { at: lexer.here() });
        };
        if token.kind == Kind::Semicolon {
            break;
        }
        let at = token.at;
        let name = token.word().ok_or(JaasError::ExpectedOptionName { at })?;
        let equals = lexer.next()?;
        if equals.map(|t| t.kind) != Some(Kind::Equals) {
            return Err(JaasError::MissingValue { at });
        }
        let value = lexer
            .next()?
            .and_then(Token::word)
            .ok_or(JaasError::MissingValue { at })?;
        options.insert(name, value);
    }
    Ok(LoginModule {
        class,
        flag,
        options,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Quoted,
    Semicolon,
    Equals,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    text: String,
    at: Position,
}

impl Token {
    /// The text of a bare word or quoted string (Java's `sval`).
    fn word(self) -> Option<String> {
        matches!(self.kind, Kind::Word | Kind::Quoted).then_some(self.text)
    }
}

/// Java's `StreamTokenizer` as Kafka's `JaasConfig` sets it up.
struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
    column: usize,
}

fn is_word_char(c: char) -> bool {
    c > ' ' && !matches!(c, '/' | ';' | '=' | '"' | '\'') && !is_c1(c)
}

fn is_c1(c: char) -> bool {
    ('\u{81}'..='\u{9f}').contains(&c)
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            chars: text.chars().peekable(),
            line: 1,
            column: 1,
        }
    }

    fn here(&self) -> Position {
        Position {
            line: self.line,
            column: self.column,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    /// Skips whitespace and comments.
    fn skip(&mut self) {
        while let Some(&c) = self.chars.peek() {
            if c <= ' ' {
                self.bump();
            } else if c == '/' {
                self.bump();
                if self.chars.peek() == Some(&'*') {
                    self.bump();
                    let mut star = false;
                    while let Some(c) = self.bump() {
                        if star && c == '/' {
                            break;
                        }
                        star = c == '*';
                    }
                } else {
                    while self.chars.peek().is_some_and(|&c| c != '\n' && c != '\r') {
                        self.bump();
                    }
                }
            } else {
                break;
            }
        }
    }

    fn next(&mut self) -> Result<Option<Token>, JaasError> {
        self.skip();
        let at = self.here();
        let Some(c) = self.bump() else {
            return Ok(None);
        };
        let token = |kind, text| Ok(Some(Token { kind, text, at }));
        match c {
            ';' => token(Kind::Semicolon, String::new()),
            '=' => token(Kind::Equals, String::new()),
            '"' | '\'' => token(Kind::Quoted, self.quoted(c, at)?),
            c if is_c1(c) => Err(JaasError::UnexpectedCharacter { at }),
            c => {
                let mut text = String::from(c);
                while let Some(&c) = self.chars.peek().filter(|&&c| is_word_char(c)) {
                    text.push(c);
                    self.bump();
                }
                token(Kind::Word, text)
            }
        }
    }

    /// The rest of a quoted string opened by `quote` at `at`.
    fn quoted(&mut self, quote: char, at: Position) -> Result<String, JaasError> {
        let unterminated = JaasError::UnterminatedQuote { at };
        let mut out = String::new();
        loop {
            let c = self.bump().ok_or_else(|| unterminated.clone())?;
            match c {
                c if c == quote => return Ok(out),
                '\n' | '\r' => return Err(unterminated),
                '\\' => {
                    let e = self.bump().ok_or_else(|| unterminated.clone())?;
                    out.push(match e {
                        'a' => '\u{7}',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        'n' => '\n',
                        'r' => '\r',
                        't' => '\t',
                        'v' => '\u{b}',
                        '0'..='7' => self.octal(e),
                        other => other,
                    });
                }
                c => out.push(c),
            }
        }
    }

    /// An octal escape whose first digit is `first`: up to three digits, three only when the
    /// first is 0-3 (so at most `\377`).
    fn octal(&mut self, first: char) -> char {
        let digit = |c: char| c.to_digit(8);
        let mut value = digit(first).unwrap_or(0);
        let max_digits = if value <= 3 { 3 } else { 2 };
        for _ in 1..max_digits {
            match self.chars.peek().copied().and_then(digit) {
                Some(d) => {
                    value = value * 8 + d;
                    self.bump();
                }
                None => break,
            }
        }
        char::from_u32(value).unwrap_or('\0')
    }
}

#[cfg(test)]
mod tests;
