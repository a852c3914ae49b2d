//! Storage: log manager, partition logs, segments, indexes, recovery.
