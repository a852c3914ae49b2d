//! Whole frames: request and response headers plus bodies, with Kafka's header-version rules.
//!
//! A frame here is what follows the 4-byte size prefix on the wire (the transport strips and
//! adds the prefix).

use bytes::Bytes;

use crate::codec::{Codec, Message, Reader, Writer};
use crate::error::{DecodeError, EncodeError};
use crate::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, RequestBody, RequestHeader,
    ResponseBody, ResponseHeader,
};

/// The request header version `key` uses at `version`: 2 for flexible versions, else 1; 0 for
/// ControlledShutdown v0 (the only request without a client id).
pub fn request_header_version(key: ApiKey, version: i16) -> i16 {
    if key == ApiKey::ControlledShutdown && version == 0 {
        0
    } else if key.request_flexible_min().is_some_and(|min| version >= min) {
        2
    } else {
        1
    }
}

/// The response header version `key` uses at `version`: 1 for flexible versions, else 0;
/// always 0 for ApiVersions, so a client can read the answer to any ApiVersions version.
pub fn response_header_version(key: ApiKey, version: i16) -> i16 {
    if key == ApiKey::ApiVersions {
        0
    } else if key
        .response_flexible_min()
        .is_some_and(|min| version >= min)
    {
        1
    } else {
        0
    }
}

/// The first fields of every request header, readable whatever the api key and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPrefix {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

/// Reads the api key, version and correlation id without decoding anything else, so a server
/// can answer a request it cannot decode (unknown key, unsupported version, bad body).
pub fn peek_request(frame: &Bytes) -> Result<RequestPrefix, DecodeError> {
    let mut r = Reader::new(frame);
    Ok(RequestPrefix {
        api_key: r.i16("RequestHeader.RequestApiKey")?,
        api_version: r.i16("RequestHeader.RequestApiVersion")?,
        correlation_id: r.i32("RequestHeader.CorrelationId")?,
    })
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub header: RequestHeader,
    pub body: RequestBody,
    /// Bytes after the body's last field. Kafka ignores them (some clients send a few); they
    /// are kept so that a frame can be re-encoded exactly.
    pub trailing: Bytes,
}

impl Request {
    /// The api key.
    pub fn api_key(&self) -> ApiKey {
        self.body.api_key()
    }

    /// The api version.
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }
}

/// Decodes a request frame. Strings, byte fields and record sets in the result are slices of
/// `frame`.
#[inline]
pub fn decode_request(frame: &Bytes) -> Result<Request, DecodeError> {
    let prefix = peek_request(frame)?;
    let key = ApiKey::from_i16(prefix.api_key).ok_or(DecodeError::UnknownApiKey {
        api_key: prefix.api_key,
    })?;
    let version = prefix.api_version;
    if !key.versions().contains(version) {
        return Err(DecodeError::UnsupportedVersion {
            message: key.name(),
            api_key: prefix.api_key,
            version,
        });
    }
    let mut r = Reader::new(frame);
    let hv = request_header_version(key, version);
    let header =
        RequestHeader::decode(&mut r, hv).map_err(|e| e.in_message("RequestHeader", hv))?;
    let body =
        RequestBody::decode(key, &mut r, version).map_err(|e| e.in_message(key.name(), version))?;
    Ok(Request {
        header,
        body,
        trailing: r.rest(),
    })
}

/// Encodes a request (header and body, no size prefix). The version is the header's; the
/// header's api key must match the body.
pub fn encode_request(header: &RequestHeader, body: &RequestBody) -> Result<Writer, EncodeError> {
    let key = body.api_key();
    let version = header.request_api_version;
    if header.request_api_key != key as i16 || !key.versions().contains(version) {
        return Err(EncodeError::UnsupportedVersion {
            message: body.message_name(),
            version,
        });
    }
    let mut w = Writer::new();
    let hv = request_header_version(key, version);
    header
        .encode(&mut w, hv)
        .map_err(|e| e.in_message("RequestHeader", hv))?;
    body.encode(&mut w, version)
        .map_err(|e| e.in_message(body.message_name(), version))?;
    Ok(w)
}

/// A decoded response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub header: ResponseHeader,
    pub body: ResponseBody,
    /// Bytes after the body's last field (normally none).
    pub trailing: Bytes,
}

/// Decodes a response frame to a request of `key` at `version` (the caller knows both from the
/// correlation id).
#[inline]
pub fn decode_response(frame: &Bytes, key: ApiKey, version: i16) -> Result<Response, DecodeError> {
    if !key.versions().contains(version) {
        return Err(DecodeError::UnsupportedVersion {
            message: key.name(),
            api_key: key as i16,
            version,
        });
    }
    let mut r = Reader::new(frame);
    let hv = response_header_version(key, version);
    let header =
        ResponseHeader::decode(&mut r, hv).map_err(|e| e.in_message("ResponseHeader", hv))?;
    let body = ResponseBody::decode(key, &mut r, version)
        .map_err(|e| e.in_message(key.name(), version))?;
    Ok(Response {
        header,
        body,
        trailing: r.rest(),
    })
}

/// Encodes a response (header and body, no size prefix) at `version`.
pub fn encode_response(
    header: &ResponseHeader,
    body: &ResponseBody,
    version: i16,
) -> Result<Writer, EncodeError> {
    encode_response_into(Writer::new(), header, body, version)
}

/// As [`encode_response`], into `w`: a writer on which the caller registered external record
/// sets ([`Writer::register_external`]), say.
pub fn encode_response_into(
    mut w: Writer,
    header: &ResponseHeader,
    body: &ResponseBody,
    version: i16,
) -> Result<Writer, EncodeError> {
    let key = body.api_key();
    if !key.versions().contains(version) {
        return Err(EncodeError::UnsupportedVersion {
            message: body.message_name(),
            version,
        });
    }
    let hv = response_header_version(key, version);
    header
        .encode(&mut w, hv)
        .map_err(|e| e.in_message("ResponseHeader", hv))?;
    body.encode(&mut w, version)
        .map_err(|e| e.in_message(body.message_name(), version))?;
    Ok(w)
}

/// The consumer group protocol's member metadata and assignment travel inside JoinGroup and
/// SyncGroup as bytes: a big-endian i16 version, then the struct in that version. A version
/// newer than the schema knows is read with the newest known layout (Kafka's rule: new
/// versions only append fields).
pub fn decode_versioned<M: Message>(bytes: &Bytes) -> Result<(i16, M), DecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.i16(M::NAME)?;
    if version < M::VERSIONS.min {
        return Err(DecodeError::UnsupportedVersion {
            message: M::NAME,
            api_key: -1,
            version,
        });
    }
    let layout = version.min(M::VERSIONS.max);
    let m = M::decode(&mut r, layout).map_err(|e| e.in_message(M::NAME, version))?;
    Ok((version, m))
}

/// Writes `m` as a version prefix plus the struct (see [`decode_versioned`]).
pub fn encode_versioned<M: Message>(m: &M, version: i16) -> Result<Bytes, EncodeError> {
    if !M::VERSIONS.contains(version) {
        return Err(EncodeError::UnsupportedVersion {
            message: M::NAME,
            version,
        });
    }
    let mut w = Writer::new();
    w.i16(version);
    m.encode(&mut w, version)
        .map_err(|e| e.in_message(M::NAME, version))?;
    Ok(w.into_bytes())
}

/// Shorthand for the consumer protocol's subscription bytes.
pub fn decode_subscription(
    bytes: &Bytes,
) -> Result<(i16, ConsumerProtocolSubscription), DecodeError> {
    decode_versioned(bytes)
}

/// Shorthand for the consumer protocol's assignment bytes.
pub fn decode_assignment(bytes: &Bytes) -> Result<(i16, ConsumerProtocolAssignment), DecodeError> {
    decode_versioned(bytes)
}
