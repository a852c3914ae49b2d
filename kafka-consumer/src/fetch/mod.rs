//! The fetcher's pure parts: planning Fetch requests ([`request`]) and reading records out
//! of the answers ([`completed`]).

pub mod completed;
pub mod request;

pub use completed::{CompletedFetch, FetchedPartition, ReadOptions};
pub use request::{FetchPlan, FetchSettings, PlannedPartition};
