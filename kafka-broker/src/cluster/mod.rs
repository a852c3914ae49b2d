//! KRaft-style clustering (issue 15, DESIGN.md decisions 10-12).
//!
//! The cluster's state lives in a log of Kafka's metadata records (the entries of
//! `__cluster_metadata`), agreed by the controller quorum. Two pure parts live here:
//!
//! | module | what |
//! |---|---|
//! | [`image`] | the metadata image every node keeps: brokers, topics, partitions, configs, built by applying committed record batches |
//! | [`controller`] | the active controller's decisions: registration, heartbeats and fencing, placement, elections, ISR changes, topic and config admin, each a function of the image, the request and `now_ms` that returns the records to commit and the answer to send once they are |
//!
//! Neither reads a clock, a file or a socket: the quorum driver commits the controller's
//! records, applies them to every node's image and answers the request.

pub mod controller;
pub mod image;
