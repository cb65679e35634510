//! Kafka's default partitioner, so records land where a Java producer would
//! put them.

/// Kafka's 32-bit murmur2 hash (`org.apache.kafka.common.utils.Utils.murmur2`).
///
/// ```
/// use connect_kafka::partitioner::murmur2;
/// assert_eq!(murmur2(b"21"), -973932308);
/// ```
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    // Kafka's length is an int; keys beyond 2 GiB cannot exist in a record.
    let mut h: u32 = SEED ^ (data.len() as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner picks for a non-null `key`
/// among `partitions` (`toPositive(murmur2(key)) % partitions`).
/// `partitions` must be at least 1.
///
/// ```
/// use connect_kafka::partitioner::partition_for_key;
/// assert_eq!(partition_for_key(b"21", 1), 0);
/// assert!(partition_for_key(b"order-17", 12) < 12);
/// ```
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    let positive = murmur2(key) & 0x7fff_ffff;
    positive % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_kafka_test_vectors() {
        // Values from Kafka's own murmur2 (clients' Utils).
        let cases: &[(&[u8], i32)] = &[
            (b"21", -973932308),
            (b"foobar", -790332482),
            (b"a-little-bit-long-string", -985981536),
            (b"a-little-bit-longer-string", -1486304829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            (b"abc", 479470107),
            (b"1", -1993445489),
            (b"12", 126087238),
            (b"123", -267702483),
            (b"1234", -1614185708),
            (b"12345", -1188365604),
        ];
        for (key, expected) in cases {
            assert_eq!(
                murmur2(key),
                *expected,
                "key {:?}",
                String::from_utf8_lossy(key)
            );
        }
    }

    proptest! {
        #[test]
        fn partition_is_in_range(key in proptest::collection::vec(any::<u8>(), 0..64), n in 1i32..1000) {
            let p = partition_for_key(&key, n);
            prop_assert!((0..n).contains(&p));
        }
    }
}
