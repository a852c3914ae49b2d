//! The four SCRAM messages (RFC 5802 section 7), parsed strictly and without copying more
//! than the decoded values. The raw texts that enter the `AuthMessage` are kept as received
//! (Kafka rebuilds them from parsed fields; for the messages Kafka's own clients and servers
//! send, the two are the same bytes).
//!
//! Errors say which message and which rule, never the bytes: a client may have typed its
//! password where its user name belongs.
//!
//! Also here, as parts of the message syntax both sides write: `saslname` escaping, base64
//! and fresh nonces. This file uses nothing of the crate but [`SaslError`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use crate::sasl::error::SaslError;

/// The longest SASL message either side accepts (a PLAIN password may be a long token; SCRAM
/// messages are a few hundred bytes).
pub(crate) const MAX_MESSAGE_LEN: usize = 64 * 1024;

/// A malformed-message error.
fn bad(message: &'static str, reason: &'static str) -> SaslError {
    SaslError::Malformed { message, reason }
}

/// The message as UTF-8 text of a sane size.
pub(crate) fn text<'a>(bytes: &'a [u8], message: &'static str) -> Result<&'a str, SaslError> {
    if bytes.len() > MAX_MESSAGE_LEN {
        return Err(bad(message, "the message is too long"));
    }
    std::str::from_utf8(bytes).map_err(|_| bad(message, "the message is not UTF-8"))
}

/// The value of attribute `name` (`name=value`), which must be next.
fn attr<'a>(
    part: Option<&'a str>,
    name: &str,
    message: &'static str,
    reason: &'static str,
) -> Result<&'a str, SaslError> {
    part.and_then(|p| p.strip_prefix(name))
        .and_then(|p| p.strip_prefix('='))
        .ok_or_else(|| bad(message, reason))
}

/// A nonce: one or more printable ASCII characters other than `,` (RFC 5802 `c-nonce`).
fn nonce<'a>(value: &'a str, message: &'static str) -> Result<&'a str, SaslError> {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
    {
        Ok(value)
    } else {
        Err(bad(message, "the nonce is empty or not printable ASCII"))
    }
}

/// A base64 value (standard alphabet, canonical padding).
fn base64(value: &str, message: &'static str, reason: &'static str) -> Result<Vec<u8>, SaslError> {
    BASE64.decode(value).map_err(|_| bad(message, reason))
}

/// A user name or authorization id: a non-empty `saslname` without NUL, unescaped.
fn saslname(value: &str, message: &'static str) -> Result<String, SaslError> {
    if value.is_empty() || value.contains('\0') {
        return Err(bad(message, "a user name is empty or holds NUL"));
    }
    unescape_saslname(value).ok_or_else(|| bad(message, "a user name has a bad =XX escape"))
}

/// Optional extensions `key=value`: the key one or more ASCII letters (Kafka's `[A-Za-z]+`,
/// so that its `tokenauth` fits), the value non-empty without NUL. Returns whether Kafka's
/// `tokenauth` extension asks for delegation-token authentication (`tokenauth=true`, any
/// case, as Java's `Boolean.parseBoolean`). Other extensions are ignored, as Kafka does.
fn extensions<'a>(
    parts: impl Iterator<Item = &'a str>,
    message: &'static str,
) -> Result<bool, SaslError> {
    let mut token_auth = false;
    for p in parts {
        let Some((key, value)) = p.split_once('=') else {
            return Err(bad(message, "an extension is not key=value"));
        };
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(bad(message, "an extension's name is not letters"));
        }
        if value.is_empty() || value.contains('\0') {
            return Err(bad(message, "an extension's value is empty or holds NUL"));
        }
        if key == "tokenauth" && value.eq_ignore_ascii_case("true") {
            token_auth = true;
        }
    }
    Ok(token_auth)
}

/// RFC 5802's reserved `m=` attribute: "its presence ... MUST cause authentication failure".
fn refuse_mandatory_extension(first: Option<&str>) -> Result<(), SaslError> {
    if first.is_some_and(|p| p.starts_with("m=")) {
        Err(SaslError::MandatoryExtension)
    } else {
        Ok(())
    }
}

/// `gs2-header client-first-message-bare`.
#[derive(Debug)]
pub(crate) struct ClientFirst<'a> {
    /// `n,,`, `y,,`, `n,a=...,` or `y,a=...,` as received: the client-final's `c=` must be
    /// its base64.
    pub(crate) gs2_header: &'a str,
    /// The authorization id, unescaped, if the header named one.
    pub(crate) authzid: Option<String>,
    /// `n=...,r=...[,ext...]` as received (the start of the AuthMessage).
    pub(crate) bare: &'a str,
    /// The user name, unescaped.
    pub(crate) username: String,
    /// The client's nonce.
    pub(crate) nonce: &'a str,
    /// Kafka's `tokenauth=true` extension was present.
    pub(crate) token_auth: bool,
}

const CLIENT_FIRST: &str = "SCRAM client-first message";

impl<'a> ClientFirst<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, SaslError> {
        let m = CLIENT_FIRST;
        let s = text(bytes, m)?;
        // gs2-cbind-flag "," [authzid] ","
        let (flag, rest) = s.split_once(',').ok_or_else(|| bad(m, "no gs2 header"))?;
        match flag {
            // "n": the client does not support channel binding; "y": it does but thinks the
            // server does not (we offer no -PLUS mechanism, so that is right).
            "n" | "y" => {}
            f if f.starts_with("p=") => return Err(SaslError::ChannelBindingUnsupported),
            _ => return Err(bad(m, "the gs2 flag is not n, y or p=")),
        }
        let (authz, bare) = rest
            .split_once(',')
            .ok_or_else(|| bad(m, "the gs2 header does not end"))?;
        let authzid = if authz.is_empty() {
            None
        } else {
            let v = attr(
                Some(authz),
                "a",
                m,
                "the gs2 header's second field is not a=",
            )?;
            Some(saslname(v, m)?)
        };
        let gs2_len = flag.len() + authz.len() + 2;
        let gs2_header = s.get(..gs2_len).ok_or_else(|| bad(m, "no gs2 header"))?;

        let mut parts = bare.split(',');
        let first = parts.next();
        refuse_mandatory_extension(first)?;
        let username = saslname(attr(first, "n", m, "expected n= (user name)")?, m)?;
        let nonce = nonce(attr(parts.next(), "r", m, "expected r= (nonce)")?, m)?;
        let token_auth = extensions(parts, m)?;
        Ok(Self {
            gs2_header,
            authzid,
            bare,
            username,
            nonce,
            token_auth,
        })
    }
}

/// `r=nonce,s=salt,i=iterations[,ext...]`.
#[derive(Debug)]
pub(crate) struct ServerFirst<'a> {
    /// The message as received (the middle of the AuthMessage).
    pub(crate) raw: &'a str,
    /// Client nonce followed by the server's.
    pub(crate) nonce: &'a str,
    /// The credential's salt.
    pub(crate) salt: Vec<u8>,
    /// The credential's iteration count (not yet bounded: the caller checks it).
    pub(crate) iterations: u32,
}

const SERVER_FIRST: &str = "SCRAM server-first message";

impl<'a> ServerFirst<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, SaslError> {
        let m = SERVER_FIRST;
        let raw = text(bytes, m)?;
        let mut parts = raw.split(',');
        let first = parts.next();
        refuse_mandatory_extension(first)?;
        let nonce = nonce(attr(first, "r", m, "expected r= (nonce)")?, m)?;
        let salt = base64(
            attr(parts.next(), "s", m, "expected s= (salt)")?,
            m,
            "the salt is not base64",
        )?;
        let i = attr(parts.next(), "i", m, "expected i= (iteration count)")?;
        if i.is_empty() || !i.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(m, "the iteration count is not a number"));
        }
        let iterations = i
            .parse()
            .map_err(|_| bad(m, "the iteration count is too large"))?;
        extensions(parts, m)?;
        Ok(Self {
            raw,
            nonce,
            salt,
            iterations,
        })
    }
}

/// `c=channel-binding,r=nonce[,ext...],p=proof`.
#[derive(Debug)]
pub(crate) struct ClientFinal<'a> {
    /// Everything before `,p=` (the end of the AuthMessage).
    pub(crate) without_proof: &'a str,
    /// The decoded `c=` value: the gs2 header again (we do no channel binding).
    pub(crate) channel_binding: Vec<u8>,
    /// The combined nonce.
    pub(crate) nonce: &'a str,
    /// The decoded client proof (length not yet checked).
    pub(crate) proof: Vec<u8>,
}

const CLIENT_FINAL: &str = "SCRAM client-final message";

impl<'a> ClientFinal<'a> {
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, SaslError> {
        let m = CLIENT_FINAL;
        let s = text(bytes, m)?;
        let (without_proof, proof) = s
            .rsplit_once(',')
            .ok_or_else(|| bad(m, "expected c=, r= and p="))?;
        let proof = base64(
            attr(Some(proof), "p", m, "the last attribute is not p= (proof)")?,
            m,
            "the proof is not base64",
        )?;
        let mut parts = without_proof.split(',');
        let channel_binding = base64(
            attr(parts.next(), "c", m, "expected c= (channel binding)")?,
            m,
            "the channel binding is not base64",
        )?;
        let nonce = nonce(attr(parts.next(), "r", m, "expected r= (nonce)")?, m)?;
        extensions(parts, m)?;
        Ok(Self {
            without_proof,
            channel_binding,
            nonce,
            proof,
        })
    }
}

/// `v=signature[,ext...]` or `e=error`.
#[derive(Debug)]
pub(crate) enum ServerFinal {
    /// The server's signature.
    Verifier(Vec<u8>),
    /// The server's `server-error-value` (RFC 5802: letters, digits and `-`; anything else
    /// is dropped so that it can be shown safely).
    Error(String),
}

const SERVER_FINAL: &str = "SCRAM server-final message";

/// Longest server error value kept.
const MAX_SERVER_ERROR: usize = 128;

impl ServerFinal {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, SaslError> {
        let m = SERVER_FINAL;
        let s = text(bytes, m)?;
        if let Some(e) = s.strip_prefix("e=") {
            if e.is_empty() || e.contains(',') || e.contains('=') || e.contains('\0') {
                return Err(bad(m, "the error value is empty or has , = or NUL"));
            }
            let shown: String = e
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ' '))
                .take(MAX_SERVER_ERROR)
                .collect();
            return Ok(Self::Error(shown));
        }
        let mut parts = s.split(',');
        let v = base64(
            attr(parts.next(), "v", m, "expected v= (server signature) or e=")?,
            m,
            "the server signature is not base64",
        )?;
        extensions(parts, m)?;
        Ok(Self::Verifier(v))
    }
}

/// Base64 (standard alphabet, padded), for the messages we write.
pub(crate) fn encode64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// A fresh nonce: 24 random bytes from the OS, in base64 (32 printable characters, no `,`).
pub(crate) fn random_nonce() -> Result<String, SaslError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|_| SaslError::Internal("no random bytes from the OS"))?;
    Ok(encode64(&bytes))
}

/// A user name as a SCRAM `saslname`: `=` becomes `=3D` and `,` becomes `=2C`
/// (Kafka's `ScramFormatter.saslName`).
pub(crate) fn escape_saslname(username: &str) -> String {
    let mut out = String::with_capacity(username.len());
    for c in username.chars() {
        match c {
            '=' => out.push_str("=3D"),
            ',' => out.push_str("=2C"),
            c => out.push(c),
        }
    }
    out
}

/// A `saslname` back to a user name: `=2C` and `=3D` are the only escapes; any other `=` is
/// malformed (RFC 5802 section 5.1, Kafka's `ScramFormatter.username`).
pub(crate) fn unescape_saslname(saslname: &str) -> Option<String> {
    let mut out = String::with_capacity(saslname.len());
    let mut rest = saslname;
    while let Some(i) = rest.find('=') {
        out.push_str(rest.get(..i)?);
        let after = rest.get(i..)?;
        if let Some(r) = after.strip_prefix("=2C") {
            out.push(',');
            rest = r;
        } else if let Some(r) = after.strip_prefix("=3D") {
            out.push('=');
            rest = r;
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}
