//! `StickyAssignorUserData`: what the eager sticky assignor puts in a member's subscription.
//!
//! Version 1 (Java's `StickyAssignor` since 2.3, librdkafka's sticky assignors):
//!
//! ```text
//! previous_assignment: [topic: string (i16 length), partitions: [i32]]   (i32 counts)
//! generation: i32
//! ```
//!
//! Version 0 is the same without the generation. There is no version field: a reader tries v1
//! and falls back to v0 when the generation is missing; bytes after the fields are ignored.

use bytes::Bytes;
use kafka_protocol::{DecodeError, KStr, Reader, Writer};

use crate::assignor::protocol::group_by_topic;
use crate::assignor::{ConsumerError, TopicPartition};

const WHAT: &str = "StickyAssignorUserData";

/// A member's previous assignment and its generation, as the `sticky` assignor carries them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StickyAssignorUserData {
    pub previous_assignment: Vec<TopicPartition>,
    /// `None`: the v0 layout (no generation).
    pub generation: Option<i32>,
}

impl StickyAssignorUserData {
    /// v1 when there is a generation, else v0. Partitions are grouped by topic, sorted.
    pub fn encode(&self) -> Result<Bytes, ConsumerError> {
        let enc = |source| ConsumerError::Encode { what: WHAT, source };
        let groups = group_by_topic(&self.previous_assignment);
        let mut w = Writer::new();
        w.array_len(
            "StickyAssignorUserData.previous_assignment",
            false,
            Some(groups.len()),
        )
        .map_err(enc)?;
        for (topic, partitions) in groups {
            w.string("StickyAssignorUserData.topic", false, &KStr::from(topic))
                .map_err(enc)?;
            w.array_len(
                "StickyAssignorUserData.partitions",
                false,
                Some(partitions.len()),
            )
            .map_err(enc)?;
            for p in partitions {
                w.i32(p);
            }
        }
        if let Some(g) = self.generation {
            w.i32(g);
        }
        Ok(w.into_bytes())
    }

    /// Reads v1, or v0 when fewer than 4 bytes follow the assignment (Java's fallback).
    pub fn decode(bytes: &Bytes) -> Result<Self, ConsumerError> {
        let mut r = Reader::new(bytes);
        let groups = r
            .array(
                "StickyAssignorUserData.previous_assignment",
                false,
                1,
                |r| {
                    let topic = r.string("StickyAssignorUserData.topic", false, 1)?;
                    let partitions =
                        r.array("StickyAssignorUserData.partitions", false, 1, |r| {
                            r.i32("StickyAssignorUserData.partitions")
                        })?;
                    Ok::<_, DecodeError>((topic, partitions))
                },
            )
            .map_err(|source| ConsumerError::Malformed { what: WHAT, source })?;
        let generation = if r.remaining() >= 4 {
            r.i32("StickyAssignorUserData.generation").ok()
        } else {
            None
        };
        Ok(Self {
            previous_assignment: groups
                .iter()
                .flat_map(|(topic, ps)| ps.iter().map(|p| TopicPartition::new(topic.as_str(), *p)))
                .collect(),
            generation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn v1_layout() {
        let d = StickyAssignorUserData {
            previous_assignment: vec![
                TopicPartition::new("t", 2),
                TopicPartition::new("s", 0),
                TopicPartition::new("t", 0),
            ],
            generation: Some(7),
        };
        let bytes = d.encode().unwrap();
        let want = concat!(
            "00000002", // two topics
            "000173", "00000001", "00000000", // s: [0]
            "000174", "00000002", "00000000", "00000002", // t: [0, 2]
            "00000007", // generation
        );
        assert_eq!(hex(&bytes), want);
        let back = StickyAssignorUserData::decode(&bytes).unwrap();
        assert_eq!(back.generation, Some(7));
        assert_eq!(
            back.previous_assignment,
            [
                TopicPartition::new("s", 0),
                TopicPartition::new("t", 0),
                TopicPartition::new("t", 2)
            ]
        );
    }

    #[test]
    fn v0_and_trailing_bytes() {
        let v0 = StickyAssignorUserData {
            previous_assignment: vec![TopicPartition::new("t", 1)],
            generation: None,
        };
        let bytes = v0.encode().unwrap();
        assert_eq!(
            hex(&bytes),
            concat!("00000001", "000174", "00000001", "00000001")
        );
        assert_eq!(StickyAssignorUserData::decode(&bytes).unwrap(), v0);
        // Two stray bytes: not a generation, so v0.
        let mut odd = bytes.to_vec();
        odd.extend_from_slice(&[0, 9]);
        assert_eq!(
            StickyAssignorUserData::decode(&Bytes::from(odd)).unwrap(),
            v0
        );
        // A generation and more: v1, the rest ignored.
        let mut long = bytes.to_vec();
        long.extend_from_slice(&[0, 0, 0, 3, 0xff]);
        assert_eq!(
            StickyAssignorUserData::decode(&Bytes::from(long))
                .unwrap()
                .generation,
            Some(3)
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            &b"\x00\x00\x00\x05"[..],
            b"\xff\xff\xff\xfe",
            b"\x00\x00\x00\x01\x00\x05ab",
            b"\x00\x00\x00\x01\xff\xff\x00\x00\x00\x00",
            b"\x7f\xff\xff\xff",
        ] {
            assert!(
                StickyAssignorUserData::decode(&Bytes::copy_from_slice(bad)).is_err(),
                "{bad:?}"
            );
        }
    }
}
