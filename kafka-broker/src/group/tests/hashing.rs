//! Group → `__consumer_offsets` partition, by Java's `String.hashCode` and Kafka's
//! `Utils.abs`. Expected values were worked out by hand with Java's rules (UTF-16 code units,
//! wrapping 32-bit arithmetic) and checked with an independent implementation.

use super::*;

#[test]
fn java_string_hash_known_answers() {
    assert_eq!(java_string_hash(""), 0);
    assert_eq!(java_string_hash("a"), 97);
    // 'a' * 31 + 'b'
    assert_eq!(java_string_hash("ab"), 3105);
    assert_eq!(java_string_hash("hello"), 99_162_322);
    // The classic collision.
    assert_eq!(java_string_hash("Aa"), 2112);
    assert_eq!(java_string_hash("BB"), 2112);
    // Overflows to a negative value.
    assert_eq!(java_string_hash("my-group"), -1_906_497_762);
    // Non-ASCII: code units, not bytes. 'ü' = 0xFC, 'ß' = 0xDF.
    assert_eq!(java_string_hash("grüße"), 98_768_023);
    // 日 = 0x65E5 = 26085, 本 = 0x672C = 26412: 26085 * 31 + 26412.
    assert_eq!(java_string_hash("日本"), 835_047);
    // Outside the BMP: a surrogate pair, 0xD83D * 31 + 0xDE00.
    assert_eq!(java_string_hash("😀"), 1_772_899);
    // Hashes to Integer.MIN_VALUE.
    assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
}

#[test]
fn partition_for_known_answers() {
    for (group, partition) in [
        ("", 0),
        ("a", 47),
        ("hello", 22),
        ("my-group", 12),
        ("test-group", 12),
        ("console-consumer-12345", 6),
        ("grüße", 23),
        ("日本", 47),
        ("😀", 49),
        ("kcat", 49),
        // Utils.abs(Integer.MIN_VALUE) is 0, not Integer.MIN_VALUE.
        ("polygenelubricants", 0),
    ] {
        assert_eq!(partition_for(group, 50), partition, "{group}");
    }
    assert_eq!(partition_for("my-group", 1), 0);
    assert_eq!(partition_for("my-group", 0), 0);
    assert_eq!(GroupConfig::default().partition_for("hello"), 22);
}

#[test]
fn member_ids_are_client_id_and_a_uuid() {
    let mut ids = MemberIdGen::new(42);
    let a = ids.next_uuid();
    let b = ids.next_uuid();
    assert_ne!(a, b);
    assert_eq!(a.len(), 36);
    assert_eq!(a.as_bytes()[14], b'4', "version 4");
    assert_eq!(MemberIdGen::new(42).next_uuid(), a, "seeded");
}
