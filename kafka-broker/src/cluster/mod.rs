//! The cluster: the controller quorum on controller nodes ([`quorum`]).
pub mod quorum;
