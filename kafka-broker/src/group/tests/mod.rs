//! Tests of the group coordinator on virtual time.
