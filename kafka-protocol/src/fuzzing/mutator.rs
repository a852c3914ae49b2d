//! The deterministic byte-level mutator of the stable smoke runner.

use super::*;

/// Byte values that tend to hit edge cases: zero, signs, and lengths of -1.
pub(super) const INTERESTING_8: [u8; 9] = [0x00, 0x01, 0x02, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff];
pub(super) const INTERESTING_32: [i32; 10] =
    [0, 1, -1, -2, 0x7f, 0x80, 0x7fff, 0x8000, i32::MAX, i32::MIN];

/// A deterministic mutator: the `n`-th mutation of a seed is always the same bytes.
///
/// Mutations are what a byte-level fuzzer does, applied one to four at a time: bit flips,
/// byte and word overwrites with edge values, truncation, insertion and deletion of bytes,
/// duplicated ranges, splices with another seed, and length-field tweaks (big-endian i16/i32
/// words that look like the length of what follows them, or single varint bytes, moved by a
/// small amount or set to -1 / huge).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mutator;

impl Mutator {
    /// The `n`-th mutation of `seed`, splicing with `other` where a splice is drawn.
    pub fn mutate(seed: &[u8], other: &[u8], n: u64) -> Vec<u8> {
        let mut rng = SplitMix::new(n ^ 0xa076_1d64_78bd_642f ^ (seed.len() as u64) << 40);
        let mut data = seed.to_vec();
        let rounds = 1 + rng.below(4);
        for _ in 0..rounds {
            Self::one(&mut data, other, &mut rng);
        }
        data
    }

    fn one(data: &mut Vec<u8>, other: &[u8], rng: &mut SplitMix) {
        let len = data.len();
        match rng.below(11) {
            // Bit flip.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            // Interesting byte.
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = INTERESTING_8[rng.below(INTERESTING_8.len())];
            }
            // Random byte.
            2 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next_u64() as u8;
            }
            // Truncate.
            3 if len > 0 => data.truncate(rng.below(len)),
            // Insert 1-8 bytes.
            4 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let fill = rng.bytes(n);
                data.splice(at..at, fill);
            }
            // Delete a range.
            5 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(16));
                data.drain(at..at + n);
            }
            // Duplicate a range.
            6 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                let chunk = data[at..at + n].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, chunk);
            }
            // Splice: our head, the other seed's tail.
            7 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            // Big-endian word overwrite with an edge value.
            8 if len >= 2 => {
                let v = INTERESTING_32[rng.below(INTERESTING_32.len())];
                if len >= 4 && rng.below(2) == 0 {
                    let i = rng.below(len - 3);
                    data[i..i + 4].copy_from_slice(&v.to_be_bytes());
                } else {
                    let i = rng.below(len - 1);
                    data[i..i + 2].copy_from_slice(&(v as i16).to_be_bytes());
                }
            }
            // Length-field tweak.
            9 if len >= 2 => Self::tweak_length(data, rng),
            // Varint-ish tweak: move one byte by a small amount.
            _ if len > 0 => {
                let i = rng.below(len);
                let delta = [1u8, 2, 0xff, 0xfe][rng.below(4)];
                data[i] = data[i].wrapping_add(delta);
            }
            _ => data.push(rng.next_u64() as u8),
        }
    }

    /// Finds big-endian i16/i32 words whose value is at most the bytes after them (likely a
    /// length or count) and moves one of them.
    fn tweak_length(data: &mut [u8], rng: &mut SplitMix) {
        let len = data.len();
        let mut candidates: Vec<(usize, usize)> = Vec::new();
        for i in 0..len.saturating_sub(3) {
            let v = i32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
            if v > 0 && (v as usize) <= len - i - 4 {
                candidates.push((i, 4));
            }
        }
        for i in 0..len.saturating_sub(1) {
            let v = i16::from_be_bytes([data[i], data[i + 1]]);
            if v > 0 && (v as usize) <= len - i - 2 {
                candidates.push((i, 2));
            }
        }
        if candidates.is_empty() {
            return;
        }
        let (at, width) = candidates[rng.below(candidates.len())];
        let choice = rng.below(6);
        if width == 4 {
            let v = i32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let new = match choice {
                0 => v.wrapping_add(1),
                1 => v.wrapping_sub(1),
                2 => v.wrapping_add(1 + rng.below(16) as i32),
                3 => -1,
                4 => i32::MAX,
                _ => v.wrapping_mul(2),
            };
            data[at..at + 4].copy_from_slice(&new.to_be_bytes());
        } else {
            let v = i16::from_be_bytes([data[at], data[at + 1]]);
            let new = match choice {
                0 => v.wrapping_add(1),
                1 => v.wrapping_sub(1),
                2 => v.wrapping_add(1 + rng.below(16) as i16),
                3 => -1,
                4 => i16::MAX,
                _ => v.wrapping_mul(2),
            };
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
        }
    }
}
