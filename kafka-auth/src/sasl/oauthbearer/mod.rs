//! SASL/OAUTHBEARER (RFC 7628) as Kafka speaks it (KIP-255, KIP-768): the client sends a
//! bearer token, a JWT; the broker validates it and authenticates the token's principal.
//! Pure: no I/O and no clock; times are passed in as ms since the epoch. The HTTP calls
//! (the JWKS endpoint, the token endpoint) are the caller's.
//!
//! | file                | what |
//! | ------------------- | ---- |
//! | `error.rs`          | [`OAuthBearerError`] and its RFC 6750 status |
//! | `messages.rs`       | the client's initial response [`ClientInitialResponse`], the server's error challenge [`ServerErrorResponse`], the 0x01 reply |
//! | `jwt.rs`            | [`Jwt`]: compact JWS split and decoded, registered claims read; [`Algorithm`] |
//! | `jwks.rs`           | [`JsonWebKeySet`], [`JsonWebKey`]: RSA and EC public keys, signature verification with ring |
//! | `validator.rs`      | [`TokenValidator`], [`JwtValidator`] (Kafka's OIDC validator), [`UnsecuredValidator`], [`OAuthBearerToken`] |
//! | `server.rs`         | [`OAuthBearerServer`]: the broker's exchange; [`session_lifetime_ms`] (KIP-368) |
//! | `client.rs`         | [`OAuthBearerClient`]: our clients' exchange; [`UnsecuredLogin`]; [`inspect_login_token`] |
//! | `token_endpoint.rs` | [`ClientCredentials`]: the client-credentials grant's request, [`parse_token_response`] |
//!
//! Each file imports only files above it in this table (`server.rs` and `client.rs` also the
//! SASL error of `sasl/error.rs`). The exchanges are also reachable as
//! [`crate::sasl::ServerExchange::oauthbearer`] and
//! [`crate::sasl::ClientExchange::oauthbearer`].

mod client;
mod error;
mod jwks;
mod jwt;
mod messages;
mod server;
mod token_endpoint;
mod validator;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_jwt;

pub use client::{OAuthBearerClient, OAuthBearerClientStep, UnsecuredLogin, inspect_login_token};
pub use error::OAuthBearerError;
pub use jwks::{Curve, JsonWebKey, JsonWebKeySet, PublicKey};
pub use jwt::{Algorithm, Jwt, MAX_TOKEN_LEN};
pub use messages::{
    AUTH_KEY, ClientInitialResponse, ERROR_ACKNOWLEDGEMENT, MAX_INITIAL_RESPONSE, SEPARATOR,
    ServerErrorResponse, validate_extensions,
};
pub use server::{
    OAuthBearerServer, OAuthBearerServerStep, OAuthBearerSession, session_lifetime_ms,
};
pub use token_endpoint::{
    ClientCredentials, MAX_RESPONSE, TokenRequest, TokenResponse, form_urlencode,
    parse_token_response,
};
pub use validator::{
    JwtValidator, JwtValidatorConfig, OAuthBearerToken, TokenValidator, UnsecuredValidator,
};

/// base64url without padding, for tests and the fuzz seeds.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use jwt::encode as encode64url;
