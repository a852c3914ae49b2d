//! Kafka's security model as pure code (no I/O, no async): what the broker and the clients
//! both need to authenticate and authorize, kept apart from the transport so each piece is
//! tested on its own.
//!
//! - [`sasl`], the SASL mechanisms Kafka speaks (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) as
//!   client and server state machines, and SCRAM credentials as Kafka stores them.
//! - [`jaas`], values of `sasl.jaas.config` (login module, flag, options).
//! - [`acl`], ACL bindings and filters, and an authorizer with the semantics of Kafka's
//!   StandardAuthorizer.
//! - [`principal`], for `ssl.principal.mapping.rules`.
#![forbid(unsafe_code)]

pub mod acl;
pub mod jaas;
pub mod principal;
pub mod sasl;
