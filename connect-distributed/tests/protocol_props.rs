//! Property tests of the sub-protocol codec: encode then decode is the
//! identity for metadata and assignments of every version, and decoding
//! any bytes (random, or Java-shaped bytes with random damage) returns a
//! value or a typed error, never a panic.

use connect_distributed::protocol::{
    Assignment, ConnectorAssignment, ProtocolError, WorkerMetadata,
};
use proptest::prelude::*;

const CASES: u32 = 2000;

fn name() -> impl Strategy<Value = String> {
    // ASCII, non-ASCII and empty names.
    prop_oneof!["[a-z0-9-]{0,12}", "[a-zA-Zé中😀]{0,6}", Just(String::new()),]
}

fn entries() -> impl Strategy<Value = Vec<ConnectorAssignment>> {
    prop::collection::vec(
        (
            name(),
            prop::collection::vec(prop_oneof![Just(-1), 0..50i32, any::<i32>()], 0..6),
        )
            .prop_map(|(connector, tasks)| ConnectorAssignment { connector, tasks }),
        0..6,
    )
}

/// An assignment that every version can carry: v0 without revoked or delay.
fn assignment_of(version: i16) -> impl Strategy<Value = Assignment> {
    (
        any::<i16>(),
        name(),
        name(),
        any::<i64>(),
        entries(),
        entries(),
        any::<i32>(),
    )
        .prop_map(
            move |(error, leader, leader_url, config_offset, assigned, revoked, delay)| {
                let v1 = version >= 1;
                Assignment {
                    version,
                    error,
                    leader,
                    leader_url,
                    config_offset,
                    assigned,
                    revoked: if v1 { revoked } else { Vec::new() },
                    delay: if v1 { delay } else { 0 },
                }
            },
        )
}

fn any_assignment() -> impl Strategy<Value = Assignment> {
    prop_oneof![
        assignment_of(0),
        assignment_of(1),
        assignment_of(2),
        assignment_of(7)
    ]
}

fn any_metadata() -> impl Strategy<Value = WorkerMetadata> {
    (
        prop_oneof![Just(0i16), Just(1), Just(2), 3..100i16],
        name(),
        any::<i64>(),
    )
        .prop_flat_map(|(version, url, config_offset)| {
            let nested = if version == 0 {
                Just(None).boxed()
            } else {
                prop::option::of(assignment_of(version)).boxed()
            };
            nested.prop_map(move |assignment| WorkerMetadata {
                version,
                url: url.clone(),
                config_offset,
                assignment,
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn assignment_roundtrip(a in any_assignment()) {
        let bytes = a.encode().unwrap();
        prop_assert_eq!(Assignment::decode(&bytes).unwrap(), a);
    }

    #[test]
    fn metadata_roundtrip(m in any_metadata()) {
        let bytes = m.encode().unwrap();
        prop_assert_eq!(WorkerMetadata::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn decode_of_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Assignment::decode(&bytes);
        let _ = WorkerMetadata::decode(&bytes);
    }

    /// Valid bytes with one byte changed, or cut, or with bytes appended:
    /// a value or an error; what decodes re-encodes and decodes to itself.
    #[test]
    fn decode_of_damaged_bytes_never_panics(
        m in any_metadata(),
        a in any_assignment(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
        tail in prop::collection::vec(any::<u8>(), 0..8),
    ) {
        for mut bytes in [m.encode().unwrap(), a.encode().unwrap()] {
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let c = cut.index(bytes.len() + 1);
            let mut variants = vec![bytes.clone(), bytes[..c].to_vec()];
            let mut longer = bytes.clone();
            longer.extend_from_slice(&tail);
            variants.push(longer);
            for v in variants {
                if let Ok(decoded) = Assignment::decode(&v) {
                    if let Ok(again) = decoded.encode() {
                        prop_assert_eq!(Assignment::decode(&again).unwrap(), decoded);
                    }
                }
                if let Ok(decoded) = WorkerMetadata::decode(&v) {
                    if let Ok(again) = decoded.encode() {
                        prop_assert_eq!(WorkerMetadata::decode(&again).unwrap(), decoded);
                    }
                }
            }
        }
    }

    /// Any cut inside the fixed head (version to config offset) is an
    /// error that names the field being read at the cut.
    #[test]
    fn truncated_head_is_a_typed_error(a in any_assignment(), cut in any::<prop::sample::Index>()) {
        let bytes = a.encode().unwrap();
        let head = 2 + 2 + 2 + a.leader.len() + 2 + a.leader_url.len() + 8;
        let c = cut.index(head);
        match Assignment::decode(&bytes[..c]) {
            Err(ProtocolError::Truncated { field, offset, remaining, .. }) => {
                prop_assert!(["version", "error", "leader", "leader-url", "config-offset"].contains(&field));
                prop_assert!(offset <= c);
                prop_assert_eq!(offset + remaining, c);
            }
            other => prop_assert!(false, "expected truncation at {}, got {:?}", c, other),
        }
    }
}
