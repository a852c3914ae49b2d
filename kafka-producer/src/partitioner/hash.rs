//! The key hashes of the Java client (murmur2) and of librdkafka's other partitioners (CRC-32,
//! FNV-1a), and the key-to-partition mappings built on them.

/// Kafka's murmur2: MurmurHash2 (32 bit) with the Java client's seed, exactly as
/// `org.apache.kafka.common.utils.Utils.murmur2` computes it (little-endian 4-byte words, the
/// trailing 1-3 bytes folded in high byte first, then the final mix).
///
/// Every Kafka client that places keyed records "like Java" (the Java producer's default,
/// librdkafka's `murmur2`/`murmur2_random`, kafka-python's default) uses this hash, so the same
/// key lands on the same partition whichever client produced it.
///
/// The length is folded in as a 32-bit value, as Java's `int` length.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    // Java folds in `data.length`, an int; a slice longer than that cannot come from Java.
    let mut h = SEED ^ (data.len() as u32);
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        if let &[b0, b1, b2, b3] = word {
            let mut k = u32::from_le_bytes([b0, b1, b2, b3]);
            k = k.wrapping_mul(M);
            k ^= k >> R;
            k = k.wrapping_mul(M);
            h = h.wrapping_mul(M);
            h ^= k;
        }
    }
    // Java's fall-through switch on length % 4: the trailing bytes, then one multiply.
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, b) in tail.iter().enumerate() {
            h ^= u32::from(*b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Java's `Utils.toPositive`: clears the sign bit (not the absolute value: `i32::MIN` maps to 0).
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition the Java producer (and librdkafka's `murmur2_random`) gives a keyed record:
/// `to_positive(murmur2(key)) % num_partitions`, over all partitions of the topic whether
/// their leader is known or not.
///
/// Returns -1 (Kafka's "unknown partition") when `num_partitions` is not positive.
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> i32 {
    if num_partitions <= 0 {
        return -1;
    }
    to_positive(murmur2(key)) % num_partitions
}

/// The CRC-32 table of the reflected IEEE polynomial 0xEDB88320.
const CRC32_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// CRC-32 (IEEE 802.3, the zlib one: reflected, initial and final value 0xFFFFFFFF), the hash
/// of librdkafka's `consistent` and `consistent_random` partitioners.
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC32_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// FNV-1a, 32 bit (offset basis 0x811C9DC5, prime 0x01000193).
pub fn fnv1a(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// librdkafka's `fnv1a` partitioner hash: FNV-1a read as a signed 32-bit value and made
/// non-negative by negation (Sarama's hash partitioner does the same), so that the three
/// clients agree. `i32::MIN` stays as it is and reads as 2^31.
pub(crate) fn fnv1a_librdkafka(data: &[u8]) -> u32 {
    (fnv1a(data) as i32).wrapping_abs() as u32
}

/// librdkafka's `consistent` placement: `crc32(key) % num_partitions` (unsigned).
/// Returns -1 when `num_partitions` is not positive.
pub fn partition_for_key_crc32(key: &[u8], num_partitions: i32) -> i32 {
    unsigned_mod(crc32(key), num_partitions)
}

/// librdkafka's `fnv1a` placement: the non-negative FNV-1a hash modulo `num_partitions`.
/// Returns -1 when `num_partitions` is not positive.
pub fn partition_for_key_fnv1a(key: &[u8], num_partitions: i32) -> i32 {
    unsigned_mod(fnv1a_librdkafka(key), num_partitions)
}

fn unsigned_mod(hash: u32, num_partitions: i32) -> i32 {
    match u32::try_from(num_partitions) {
        // The remainder is below num_partitions, itself an i32.
        Ok(n) if n > 0 => (hash % n) as i32,
        _ => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known answers of Apache Kafka's `UtilsTest.testMurmur2`
    /// (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
    const KAFKA_UTILS_TEST: [(&[u8], i32); 6] = [
        (b"21", -973_932_308),
        (b"foobar", -790_332_482),
        (b"a-little-bit-long-string", -985_981_536),
        (b"a-little-bit-longer-string", -1_486_304_829),
        (
            b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
            -58_897_971,
        ),
        // Java's `new byte[] {'a', 'b', 'c'}`.
        (b"abc", 479_470_107),
    ];

    /// Known answers of librdkafka's `unittest_murmur2` (src/rdmurmur2.c), there called the
    /// Java murmur2 results; they cover every tail length and the empty key.
    const LIBRDKAFKA_MURMUR2: [(&[u8], u32); 11] = [
        (b"kafka", 0xd067_cf64),
        (b"giberish123456789", 0x8f55_2b0c),
        (b"1234", 0x9fc9_7b14),
        (b"234", 0xe7c0_09ca),
        (b"34", 0x8739_30da),
        (b"4", 0x5a4b_5ca1),
        (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x7842_4f1c),
        (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4a62_b377),
        (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0xe0e4_e09e),
        (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x62b8_b43f),
        (b"", 0x106e_08d9),
    ];

    #[test]
    fn murmur2_matches_kafka_utils_test() {
        for (input, want) in KAFKA_UTILS_TEST {
            assert_eq!(
                murmur2(input),
                want,
                "murmur2({:?})",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn murmur2_matches_librdkafka_unit_test() {
        for (input, want) in LIBRDKAFKA_MURMUR2 {
            assert_eq!(
                murmur2(input) as u32,
                want,
                "murmur2({:?})",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn to_positive_clears_the_sign_bit() {
        assert_eq!(to_positive(0), 0);
        assert_eq!(to_positive(5), 5);
        assert_eq!(to_positive(-1), i32::MAX);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-790_332_482), 1_357_151_166);
    }

    #[test]
    fn partition_for_key_uses_the_positive_hash() {
        // to_positive(-790332482) = 1357151166; 1357151166 % 50 = 16.
        assert_eq!(partition_for_key(b"foobar", 50), 16);
        // 275646681 (the empty key) % 8 = 1.
        assert_eq!(partition_for_key(b"", 8), 1);
        assert_eq!(partition_for_key(b"anything", 1), 0);
        for (input, want) in KAFKA_UTILS_TEST {
            for n in 1..40 {
                let p = partition_for_key(input, n);
                assert_eq!(p, (want & 0x7fff_ffff) % n);
                assert!((0..n).contains(&p));
            }
        }
    }

    #[test]
    fn no_partitions_means_no_partition() {
        assert_eq!(partition_for_key(b"k", 0), -1);
        assert_eq!(partition_for_key(b"k", -3), -1);
        assert_eq!(partition_for_key_crc32(b"k", 0), -1);
        assert_eq!(partition_for_key_fnv1a(b"k", -1), -1);
    }

    #[test]
    fn crc32_check_values() {
        // The CRC-32 catalogue's check value, and two more everyone agrees on.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414f_a339
        );
        assert_eq!(
            partition_for_key_crc32(b"123456789", 7),
            (0xcbf4_3926u32 % 7) as i32
        );
    }

    #[test]
    fn fnv1a_reference_values() {
        // FNV-1a 32 test vectors of the algorithm's authors.
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
    }

    /// Known answers of librdkafka's `unittest_fnv1a` (src/rdfnv1a.c), after its sign fix-up.
    #[test]
    fn fnv1a_matches_librdkafka_unit_test() {
        let cases: [(&[u8], u32); 11] = [
            (b"kafka", 0x0d33_c4e1),
            (b"giberish123456789", 0x77a5_8295),
            (b"1234", 0x023b_dd03),
            (b"234", 0x2dea_3cd2),
            (b"34", 0x740f_a83e),
            (b"4", 0x310c_a263),
            (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x65cb_d69c),
            (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x6e49_c79a),
            (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0x69ee_d356),
            (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x6abc_c023),
            (b"", 0x7ee3_623b),
        ];
        for (input, want) in cases {
            assert_eq!(
                fnv1a_librdkafka(input),
                want,
                "fnv1a({:?})",
                String::from_utf8_lossy(input)
            );
        }
        assert_eq!(partition_for_key_fnv1a(b"", 8), (0x7ee3_623bu32 % 8) as i32);
    }
}
