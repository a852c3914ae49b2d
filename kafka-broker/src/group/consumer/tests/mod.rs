//! Tests of KIP-848 groups.
