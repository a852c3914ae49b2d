//! ApiVersions negotiation: which version of each api to use with one broker.

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseBody};

use crate::connection::{Connection, ConnectionConfig, api_versions_request};
use crate::error::NetError;

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

/// Sends ApiVersions at our newest version; if the broker answers UNSUPPORTED_VERSION, retries
/// with the highest version it lists for ApiVersions (or one less than ours).
pub(crate) async fn negotiate(
    conn: &Connection,
    cfg: &ConnectionConfig,
) -> Result<ApiVersions, NetError> {
    let mut version = ApiKey::ApiVersions.versions().max;
    loop {
        let body = conn.request_at(api_versions_request(cfg), version).await?;
        let ResponseBody::ApiVersions(resp) = body else {
            return Err(NetError::Closed(Some(
                "ApiVersions answered with another api".into(),
            )));
        };
        let code = ErrorCode(resp.error_code);
        if code == ErrorCode::UNSUPPORTED_VERSION && version > 0 {
            let theirs = resp
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                .map(|k| k.max_version);
            let next = theirs.map_or(version - 1, |m| m.min(version - 1));
            tracing::debug!(
                addr = conn.addr(),
                from = version,
                to = next,
                "ApiVersions downgrade"
            );
            version = next.max(0);
            continue;
        }
        crate::connection::check(resp.error_code, "ApiVersions")?;
        return Ok(ApiVersions::from_response(&resp));
    }
}
