//! A request as a connection read it, before it is handled.
//!
//! Imports only kafka-net and kafka-protocol.

use bytes::Bytes;
use kafka_net::server::IncomingRequest;
use kafka_protocol::frame::{self, Request, RequestPrefix};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::view::ProduceRequestView;

/// A request as a connection read it: Produce requests are left as frames for the borrowing
/// view (nothing allocated, the record sets copied once into the log's buffer), the others
/// decoded.
#[derive(Debug)]
pub enum Incoming {
    Decoded(IncomingRequest),
    Produce {
        frame: Bytes,
        prefix: RequestPrefix,
    },
    /// A frame without a request header: on a SASL listener, a raw SASL token after a
    /// SaslHandshake v0 (anything else closes the connection).
    Unframed(Bytes),
}

/// The prefix an unframed token is given (no api has key -1).
const NO_PREFIX: RequestPrefix = RequestPrefix {
    api_key: -1,
    api_version: -1,
    correlation_id: -1,
};

impl Incoming {
    /// Decodes `frame` unless it is a Produce request.
    pub fn read(frame: Bytes, prefix: RequestPrefix) -> Self {
        if prefix.api_key == ApiKey::Produce as i16 {
            Self::Produce { frame, prefix }
        } else {
            Self::Decoded(IncomingRequest {
                request: frame::decode_request(&frame),
                frame,
                prefix,
            })
        }
    }

    pub fn prefix(&self) -> &RequestPrefix {
        match self {
            Self::Decoded(r) => &r.prefix,
            Self::Produce { prefix, .. } => prefix,
            Self::Unframed(_) => &NO_PREFIX,
        }
    }

    /// The bytes of the frame as read (a raw SASL token after a SaslHandshake v0, whatever
    /// they looked like).
    pub fn frame(&self) -> &Bytes {
        match self {
            Self::Decoded(r) => &r.frame,
            Self::Produce { frame, .. } | Self::Unframed(frame) => frame,
        }
    }

    /// The decoded request, if it was decoded and reads.
    pub fn decoded(&self) -> Option<&Request> {
        match self {
            Self::Decoded(r) => r.request.as_ref().ok(),
            Self::Produce { .. } | Self::Unframed(_) => None,
        }
    }

    /// The client id from the request header, if it reads.
    pub fn client_id(&self) -> Option<String> {
        match self {
            Self::Decoded(r) => r
                .request
                .as_ref()
                .ok()
                .and_then(|r| r.header.client_id.as_ref().map(ToString::to_string)),
            Self::Produce { frame, .. } => ProduceRequestView::parse(frame)
                .ok()
                .and_then(|(h, _)| h.client_id().map(str::to_owned)),
            Self::Unframed(_) => None,
        }
    }
}

/// A request decoded by the caller (a Produce request among them is read again from its frame,
/// through the view).
impl From<IncomingRequest> for Incoming {
    fn from(r: IncomingRequest) -> Self {
        Self::Decoded(r)
    }
}
