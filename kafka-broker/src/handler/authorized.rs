//! The `authorized_operations` bit fields of Metadata (v8+), DescribeCluster and
//! DescribeGroups (v3+). Without an authorizer Kafka reports every operation the resource type
//! supports; a field that was not asked for is INT32_MIN.
//!
//! Bit `n` stands for the `AclOperation` with code `n`: READ 3, WRITE 4, CREATE 5, DELETE 6,
//! ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
//! IDEMPOTENT_WRITE 12.

const READ: u8 = 3;
const WRITE: u8 = 4;
const CREATE: u8 = 5;
const DELETE: u8 = 6;
const ALTER: u8 = 7;
const DESCRIBE: u8 = 8;
const CLUSTER_ACTION: u8 = 9;
const DESCRIBE_CONFIGS: u8 = 10;
const ALTER_CONFIGS: u8 = 11;
const IDEMPOTENT_WRITE: u8 = 12;

/// The answer when the request did not ask.
pub(crate) const NOT_ASKED: i32 = i32::MIN;

const fn bits(ops: &[u8]) -> i32 {
    let mut mask = 0;
    let mut i = 0;
    while i < ops.len() {
        mask |= 1 << ops[i];
        i += 1;
    }
    mask
}

/// Every operation on a topic.
pub(crate) const TOPIC: i32 = bits(&[
    READ,
    WRITE,
    CREATE,
    DESCRIBE,
    DELETE,
    ALTER,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
]);
/// Every operation on the cluster.
pub(crate) const CLUSTER: i32 = bits(&[
    CREATE,
    CLUSTER_ACTION,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    IDEMPOTENT_WRITE,
    ALTER,
    DESCRIBE,
]);

/// `all` when asked, else [`NOT_ASKED`].
pub(crate) fn answer(asked: bool, all: i32) -> i32 {
    if asked { all } else { NOT_ASKED }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_kafkas() {
        assert_eq!(TOPIC, 3576);
        assert_eq!(CLUSTER, 8096);
        assert_eq!(answer(false, TOPIC), -2_147_483_648);
    }
}
