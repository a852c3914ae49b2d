//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` checks it: one message,
//! `[authzid] NUL authcid NUL passwd`, in UTF-8.
//!
//! Kafka's rules: the user name and the password must not be empty; the password is compared
//! in constant time with the `user_NAME` option of the JAAS config; the authorization id must
//! be empty or the user name (checked after the password, so that it reveals nothing). Kafka
//! also takes a message with more than two NULs (ignoring what follows the third field); RFC
//! 4616 forbids NUL inside a field, and so do we.

use super::error::SaslError;
use super::scram::messages::text;
use super::secret::Secret;

const PLAIN: &str = "PLAIN message";

/// Checks a client's PLAIN message; the authenticated user name on success. `password_of`
/// gives a user's PLAIN password, if the user exists (the exchange in `sasl/mod.rs` passes
/// its `CredentialStore`'s `plain_password`).
pub(crate) fn server_step(
    message: &[u8],
    password_of: &dyn Fn(&str) -> Option<Secret>,
) -> Result<String, SaslError> {
    let s = text(message, PLAIN)?;
    let mut fields = s.split('\0');
    let (Some(authzid), Some(username), Some(password), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(SaslError::Malformed {
            message: PLAIN,
            reason: "expected exactly two NUL separators",
        });
    };
    if username.is_empty() {
        return Err(SaslError::Malformed {
            message: PLAIN,
            reason: "the user name is empty",
        });
    }
    if password.is_empty() {
        return Err(SaslError::Malformed {
            message: PLAIN,
            reason: "the password is empty",
        });
    }
    // An unknown user costs the same comparison as a known one.
    let expected = password_of(username);
    let known = expected.is_some();
    let expected = expected.unwrap_or_else(|| Secret::new(vec![0; password.len()]));
    if !(expected.ct_eq(password.as_bytes()) & known) {
        return Err(SaslError::AuthenticationFailed);
    }
    if !authzid.is_empty() && authzid != username {
        return Err(SaslError::AuthorizationIdMismatch);
    }
    Ok(username.to_owned())
}

/// A client's PLAIN message: no authorization id, then the user name and password.
pub(crate) fn client_message(username: &str, password: &Secret) -> Result<Vec<u8>, SaslError> {
    if username.is_empty() || password.is_empty() {
        return Err(SaslError::InvalidClientCredentials(
            "PLAIN needs a non-empty user name and password",
        ));
    }
    if username.contains('\0') || password.expose().contains(&0) {
        return Err(SaslError::InvalidClientCredentials(
            "PLAIN user names and passwords cannot hold NUL",
        ));
    }
    let mut m = Vec::with_capacity(2 + username.len() + password.len());
    m.push(0);
    m.extend_from_slice(username.as_bytes());
    m.push(0);
    m.extend_from_slice(password.expose());
    Ok(m)
}
