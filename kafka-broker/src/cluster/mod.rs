//! The cluster (KRaft mode): the controller quorum on controller nodes ([`quorum`]), the
//! controller listener ([`listener`]), and brokers that follow the metadata log from the
//! controllers ([`follow`]).
pub mod follow;
pub mod listener;
pub mod quorum;
