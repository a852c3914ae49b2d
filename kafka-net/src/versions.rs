//! ApiVersions negotiation: which version of each api to use with one broker, and the
//! handshake's decision on each ApiVersions answer (pure; the connection sends the requests).
//!
//! Imports only the error type.

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use crate::error::{NetError, check};

/// The version ranges a broker supports, and the choice per api.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersions {
    broker: BTreeMap<i16, (i16, i16)>,
}

impl ApiVersions {
    /// From an ApiVersions response.
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        Self {
            broker: resp
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect(),
        }
    }

    /// The broker's range for `api` (raw key), if it listed it.
    pub fn broker_range(&self, api: i16) -> Option<(i16, i16)> {
        self.broker.get(&api).copied()
    }

    /// Every `(api key, min, max)` the broker listed, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (i16, i16, i16)> + '_ {
        self.broker.iter().map(|(k, (lo, hi))| (*k, *lo, *hi))
    }

    /// The highest version of `api` both sides support.
    pub fn version_for(&self, api: ApiKey) -> Result<i16, NetError> {
        let Some((lo, hi)) = self.broker_range(api as i16) else {
            return Err(NetError::UnsupportedApi {
                api,
                detail: Some("not in the broker's ApiVersions".into()),
            });
        };
        let ours = api.versions();
        let v = hi.min(ours.max);
        if v < lo.max(ours.min) {
            return Err(NetError::UnsupportedApi {
                api,
                detail: Some(format!(
                    "broker supports v{lo}-{hi}, this client v{}-{}",
                    ours.min, ours.max
                )),
            });
        }
        Ok(v)
    }
}

/// What to do with one ApiVersions answer during the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Negotiation {
    /// The broker answered: these are its versions.
    Done(ApiVersions),
    /// The broker refused our ApiVersions version: ask again at this one.
    Retry(i16),
}

/// The handshake's decision on the answer to an ApiVersions request sent at `version`: if the
/// broker answered UNSUPPORTED_VERSION, ask again at the highest version it lists for
/// ApiVersions (or one less than ours); any other error ends the handshake. The connection
/// sends the requests ([`crate::connection::Connection::connect`]).
pub(crate) fn on_answer(resp: &ApiVersionsResponse, version: i16) -> Result<Negotiation, NetError> {
    let code = ErrorCode(resp.error_code);
    if code == ErrorCode::UNSUPPORTED_VERSION && version > 0 {
        let theirs = resp
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ApiVersions as i16)
            .map(|k| k.max_version);
        let next = theirs.map_or(version - 1, |m| m.min(version - 1));
        return Ok(Negotiation::Retry(next.max(0)));
    }
    check(resp.error_code, "ApiVersions")?;
    Ok(Negotiation::Done(ApiVersions::from_response(resp)))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    use super::*;

    fn answer(code: ErrorCode, api_versions_max: Option<i16>) -> ApiVersionsResponse {
        let mut resp = ApiVersionsResponse {
            error_code: code.0,
            ..Default::default()
        };
        if let Some(max) = api_versions_max {
            resp.api_keys.push(ApiVersion {
                api_key: ApiKey::ApiVersions as i16,
                min_version: 0,
                max_version: max,
                ..Default::default()
            });
        }
        resp
    }

    #[test]
    fn an_unsupported_version_is_retried_at_the_brokers_highest_or_one_less() {
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, Some(2)), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(2));
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, Some(9)), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(3));
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, None), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(3));
    }

    #[test]
    fn a_good_answer_ends_the_handshake_and_other_errors_fail_it() {
        let Negotiation::Done(v) = on_answer(&answer(ErrorCode::NONE, Some(3)), 4).unwrap() else {
            panic!("expected the versions");
        };
        assert_eq!(v.broker_range(ApiKey::ApiVersions as i16), Some((0, 3)));
        assert!(on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, None), 0).is_err());
        assert!(on_answer(&answer(ErrorCode::UNKNOWN_SERVER_ERROR, None), 4).is_err());
    }
}
