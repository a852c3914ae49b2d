//! Compression codecs of record batches and legacy message sets, with decompression output
//! capped at a caller-given maximum.
//!
//! Every decoder streams its output into a buffer that never grows beyond `max_output + 1`
//! bytes, whatever sizes its headers claim (they only size the first allocation, within the
//! limit). Codec state is bounded separately: LZ4 frames
//! allocate their declared block size (at most 4 MiB) and zstd frames their window, which is
//! capped at 16 MiB or the next power of two above the maximum (128 MiB at most).

use std::io::{Read, Write};

use bytes::Bytes;

use crate::error::{DecodeError, EncodeError};

/// The compression codec of a batch: bits 0-2 of its attributes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// Mask of the codec bits in batch and message attributes.
pub const COMPRESSION_MASK: i16 = 0x07;

/// Block size of the xerial snappy framing that Kafka's Java client writes.
const XERIAL_BLOCK: usize = 32 * 1024;
/// The xerial snappy stream header: magic, then version 1 and minimum compatible version 1.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
/// The stream identifier chunk of the official snappy framing format.
const SNAPPY_FRAMED_MAGIC: [u8; 10] = [0xff, 0x06, 0x00, 0x00, b's', b'N', b'a', b'P', b'p', b'Y'];
/// zstd level Kafka uses by default.
const ZSTD_LEVEL: i32 = 3;

impl Compression {
    /// The codec numbered `id` (the attribute bits), if it is one Kafka defines.
    pub fn from_id(id: u8) -> Result<Self, DecodeError> {
        match id {
            0 => Ok(Self::None),
            1 => Ok(Self::Gzip),
            2 => Ok(Self::Snappy),
            3 => Ok(Self::Lz4),
            4 => Ok(Self::Zstd),
            codec => Err(DecodeError::UnknownCompression { codec }),
        }
    }

    /// The codec of a batch (or legacy message, widened) from its attributes.
    pub fn from_attributes(attributes: i16) -> Result<Self, DecodeError> {
        Self::from_id((attributes & COMPRESSION_MASK) as u8)
    }

    /// The codec's number, as stored in attribute bits 0-2.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }

    /// The attribute bits for this codec.
    pub fn attribute_bits(self) -> i16 {
        i16::from(self.id())
    }

    /// Kafka's name for the codec, as in the `compression.type` setting.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// The codec called `name` (`compression.type` values, case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::None, Self::Gzip, Self::Snappy, Self::Lz4, Self::Zstd]
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn comp_err(codec: Compression, e: impl std::fmt::Display) -> EncodeError {
    EncodeError::Compression {
        codec: codec.name(),
        reason: e.to_string(),
    }
}

fn decomp_err(codec: Compression, e: impl std::fmt::Display) -> DecodeError {
    DecodeError::Decompression {
        codec: codec.name(),
        reason: e.to_string(),
    }
}

/// The field a [`DecodeError::TooLarge`] names when decompressed output reached its limit.
const DECOMPRESSED: &str = "decompressed records";

/// Whether `e` is a decompression that stopped at its output limit (rather than bad input).
pub fn is_output_limit(e: &DecodeError) -> bool {
    matches!(e, DecodeError::TooLarge { field, .. } if *field == DECOMPRESSED)
}

fn too_large(len: usize, max: usize) -> DecodeError {
    DecodeError::TooLarge {
        field: DECOMPRESSED,
        len: len as u64,
        max: max as u64,
    }
}

/// Compresses `input` the way Kafka's Java client does (`None` copies it).
pub fn compress(codec: Compression, input: &[u8]) -> Result<Bytes, EncodeError> {
    compress_level(codec, input, None)
}

/// Compresses `input` at a level (`compression.gzip.level`: 1-9; `compression.zstd.level`:
/// -131072..=22; `None` takes the codec's default: gzip 6, zstd 3). Snappy has no levels, and
/// lz4 is always written at lz4_flex's single (fast) level.
pub fn compress_level(
    codec: Compression,
    input: &[u8],
    level: Option<i32>,
) -> Result<Bytes, EncodeError> {
    match codec {
        Compression::None => Ok(Bytes::copy_from_slice(input)),
        Compression::Gzip => {
            let level = match level {
                Some(l @ 1..=9) => flate2::Compression::new(l as u32),
                _ => flate2::Compression::default(),
            };
            let mut enc =
                flate2::write::GzEncoder::new(Vec::with_capacity(input.len() / 2 + 64), level);
            enc.write_all(input).map_err(|e| comp_err(codec, e))?;
            enc.finish()
                .map(Bytes::from)
                .map_err(|e| comp_err(codec, e))
        }
        Compression::Snappy => compress_xerial(input).map_err(|e| comp_err(codec, e)),
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(
                info,
                Vec::with_capacity(input.len() / 2 + 64),
            );
            enc.write_all(input).map_err(|e| comp_err(codec, e))?;
            enc.finish()
                .map(Bytes::from)
                .map_err(|e| comp_err(codec, e))
        }
        Compression::Zstd => zstd::bulk::compress(input, level.unwrap_or(ZSTD_LEVEL))
            .map(Bytes::from)
            .map_err(|e| comp_err(codec, e)),
    }
}

/// xerial snappy framing: the 16-byte header, then (i32 length, raw snappy block) pairs.
fn compress_xerial(input: &[u8]) -> Result<Bytes, snap::Error> {
    let mut out = Vec::with_capacity(
        XERIAL_HEADER_LEN + snap::raw::max_compress_len(input.len().min(XERIAL_BLOCK)),
    );
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut enc = snap::raw::Encoder::new();
    for block in input.chunks(XERIAL_BLOCK) {
        let compressed = enc.compress_vec(block)?;
        // A block of at most 32 KiB compresses to far less than 2 GiB.
        let len = i32::try_from(compressed.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&compressed);
    }
    Ok(Bytes::from(out))
}

/// Decompresses `input`, failing as soon as the output would exceed `max_output` bytes.
///
/// Snappy input may be xerial-framed (Java client), raw (librdkafka) or in the official
/// snappy framing format. `None` returns a copy of `input` (subject to the same bound).
pub fn decompress(
    codec: Compression,
    input: &[u8],
    max_output: usize,
) -> Result<Bytes, DecodeError> {
    decompress_with(codec, input, max_output, false)
}

/// Like [`decompress`]; `legacy_lz4_checksum` accepts the wrong LZ4 frame header checksum
/// that Kafka wrote in magic 0 message sets (KAFKA-3160).
pub(crate) fn decompress_with(
    codec: Compression,
    input: &[u8],
    max_output: usize,
    legacy_lz4_checksum: bool,
) -> Result<Bytes, DecodeError> {
    match codec {
        Compression::None => {
            if input.len() > max_output {
                return Err(too_large(input.len(), max_output));
            }
            Ok(Bytes::copy_from_slice(input))
        }
        Compression::Gzip => read_bounded(
            codec,
            flate2::read::MultiGzDecoder::new(input),
            max_output,
            size_hint(codec, input),
        ),
        Compression::Snappy => decompress_snappy(input, max_output),
        Compression::Lz4 => {
            if legacy_lz4_checksum {
                let fixed = fix_lz4_header_checksum(input);
                read_bounded(
                    codec,
                    lz4_flex::frame::FrameDecoder::new(&fixed[..]),
                    max_output,
                    size_hint(codec, input),
                )
            } else {
                read_bounded(
                    codec,
                    lz4_flex::frame::FrameDecoder::new(input),
                    max_output,
                    size_hint(codec, input),
                )
            }
        }
        Compression::Zstd => {
            let mut dec = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|e| decomp_err(codec, e))?;
            // The frame header names the window the decoder must allocate: refuse windows far
            // beyond what the output limit needs (but never below 16 MiB, which covers every
            // level a client uses by default).
            let needed = usize::BITS - max_output.leading_zeros();
            dec.window_log_max(needed.clamp(24, 27))
                .map_err(|e| decomp_err(codec, e))?;
            read_bounded(codec, dec, max_output, size_hint(codec, input))
        }
    }
}

/// What `input` says it decompresses to, where its format records that: the zstd frame's
/// content size, the LZ4 frame's content size, the sum of the raw snappy blocks' lengths
/// (xerial or raw), gzip's ISIZE trailer (modulo 2^32, single member). A hint to size buffers
/// and memory reservations with, never trusted as a bound: the decoders still stop at their
/// limit, and a frame whose content differs from its header fails to decode.
pub fn size_hint(codec: Compression, input: &[u8]) -> Option<usize> {
    let n = match codec {
        Compression::None => Some(input.len() as u64),
        Compression::Gzip => match input.len() {
            0..18 => None,
            len => input
                .get(len - 4..)
                .and_then(|t| <[u8; 4]>::try_from(t).ok())
                .map(|t| u64::from(u32::from_le_bytes(t))),
        },
        Compression::Snappy => snappy_size_hint(input),
        Compression::Lz4 => {
            // Magic, FLG (content-size bit 0x08), BD, then the 8-byte little-endian size.
            let flg = *input.get(4)?;
            (input.starts_with(&[0x04, 0x22, 0x4d, 0x18]) && flg & 0x08 != 0)
                .then(|| input.get(6..14))
                .flatten()
                .and_then(|s| <[u8; 8]>::try_from(s).ok())
                .map(u64::from_le_bytes)
        }
        Compression::Zstd => zstd::zstd_safe::get_frame_content_size(input)
            .ok()
            .flatten(),
    };
    n.and_then(|n| usize::try_from(n).ok())
}

fn snappy_size_hint(input: &[u8]) -> Option<u64> {
    if input.starts_with(&SNAPPY_FRAMED_MAGIC) {
        return None;
    }
    if !input.starts_with(&XERIAL_MAGIC) {
        return snap::raw::decompress_len(input).ok().map(|n| n as u64);
    }
    let (mut rest, mut total) = (input, 0u64);
    while !rest.is_empty() {
        if rest.starts_with(&XERIAL_MAGIC) {
            rest = rest.get(XERIAL_HEADER_LEN..)?;
            continue;
        }
        let (len, body) = rest.split_first_chunk::<4>()?;
        let len = usize::try_from(i32::from_be_bytes(*len)).ok()?;
        let (block, after) = body.split_at_checked(len)?;
        total = total.saturating_add(snap::raw::decompress_len(block).ok()? as u64);
        rest = after;
    }
    Some(total)
}

/// Reads `r` to the end, erroring once more than `max` bytes come out. The buffer starts at
/// the hinted size (within the limit) and never grows beyond `max + 1` bytes, so the memory a
/// caller reserved for `max` bytes of output is what the output takes.
fn read_bounded(
    codec: Compression,
    mut r: impl Read,
    max: usize,
    hint: Option<usize>,
) -> Result<Bytes, DecodeError> {
    const FIRST: usize = 64 * 1024;
    let ceiling = max.saturating_add(1);
    // One byte beyond the hint, so that a right hint ends with a read of 0 without growing.
    let first = hint.map_or(FIRST, |h| h.saturating_add(1)).min(ceiling);
    let mut out = vec![0u8; first];
    let mut filled = 0;
    loop {
        if filled == out.len() {
            if out.len() >= ceiling {
                return Err(too_large(out.len(), max));
            }
            let grow = out.len().max(FIRST).min(ceiling - out.len());
            out.reserve_exact(grow);
            out.resize(out.len() + grow, 0);
        }
        match r.read(out.get_mut(filled..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(decomp_err(codec, e)),
        }
    }
    out.truncate(filled);
    Ok(Bytes::from(out))
}

fn decompress_snappy(input: &[u8], max: usize) -> Result<Bytes, DecodeError> {
    const CODEC: Compression = Compression::Snappy;
    if input.starts_with(&SNAPPY_FRAMED_MAGIC) {
        return read_bounded(CODEC, snap::read::FrameDecoder::new(input), max, None);
    }
    let mut out = Vec::new();
    if !input.starts_with(&XERIAL_MAGIC) {
        raw_snappy_into(input, &mut out, max)?;
        return Ok(Bytes::from(out));
    }
    let mut rest = input;
    loop {
        // A xerial stream may be the concatenation of several streams, each with a header.
        if rest.starts_with(&XERIAL_MAGIC) {
            rest = rest
                .get(XERIAL_HEADER_LEN..)
                .ok_or_else(|| decomp_err(CODEC, "truncated xerial header"))?;
            continue;
        }
        let Some((len, body)) = rest.split_first_chunk::<4>() else {
            if rest.is_empty() {
                break;
            }
            return Err(decomp_err(CODEC, "truncated xerial block length"));
        };
        let len = usize::try_from(i32::from_be_bytes(*len))
            .map_err(|_| decomp_err(CODEC, "negative xerial block length"))?;
        let (block, after) = body
            .split_at_checked(len)
            .ok_or_else(|| decomp_err(CODEC, "xerial block longer than the input"))?;
        raw_snappy_into(block, &mut out, max)?;
        rest = after;
    }
    Ok(Bytes::from(out))
}

/// Appends the raw snappy block `block` to `out`, checking its declared length first.
fn raw_snappy_into(block: &[u8], out: &mut Vec<u8>, max: usize) -> Result<(), DecodeError> {
    const CODEC: Compression = Compression::Snappy;
    let n = snap::raw::decompress_len(block).map_err(|e| decomp_err(CODEC, e))?;
    let total = out.len().saturating_add(n);
    if total > max {
        return Err(too_large(total, max));
    }
    let start = out.len();
    out.resize(total, 0);
    let dst = out.get_mut(start..).unwrap_or_default();
    let written = snap::raw::Decoder::new()
        .decompress(block, dst)
        .map_err(|e| decomp_err(CODEC, e))?;
    out.truncate(start + written);
    Ok(())
}

/// A copy of an LZ4 frame with its header checksum byte recomputed, for frames written with
/// Kafka's old, wrong checksum (computed over the magic number too).
fn fix_lz4_header_checksum(input: &[u8]) -> Vec<u8> {
    let mut fixed = input.to_vec();
    // Descriptor: FLG, BD, optional 8-byte content size, optional 4-byte dictionary id, HC.
    if let Some(&flg) = fixed.get(4) {
        let mut end = 6;
        if flg & 0x08 != 0 {
            end += 8;
        }
        if flg & 0x01 != 0 {
            end += 4;
        }
        let hc = fixed.get(4..end).map(|d| (xxh32_short(d) >> 8) as u8);
        if let (Some(hc), Some(slot)) = (hc, fixed.get_mut(end)) {
            *slot = hc;
        }
    }
    fixed
}

/// xxHash32 with seed 0 of an input shorter than 16 bytes (an LZ4 frame descriptor).
fn xxh32_short(input: &[u8]) -> u32 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in words.by_ref() {
        let v = u32::from_le_bytes(w.try_into().unwrap_or([0; 4]));
        h = h
            .wrapping_add(v.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    #[test]
    fn size_hints_name_the_decompressed_length_and_never_bound_the_output() {
        let data = sample();
        for c in ALL {
            let z = compress(c, &data).unwrap();
            let hint = size_hint(c, &z);
            match c {
                // lz4_flex's frames leave the optional content size out.
                Compression::Lz4 => assert_eq!(hint, None),
                _ => assert_eq!(hint, Some(data.len()), "{c}"),
            }
            // A lying size: gzip's ISIZE trailer claims 1 byte, zstd's header is not consulted
            // as a limit either way: the output is whole, or refused at the limit.
            let mut lie = z.to_vec();
            if c == Compression::Gzip {
                let n = lie.len();
                lie[n - 4..].copy_from_slice(&1u32.to_le_bytes());
                assert_eq!(size_hint(c, &lie), Some(1));
                // The trailer is also checked by the decoder: a wrong one is an error.
                assert!(decompress(c, &lie, data.len()).is_err());
            }
            assert_eq!(
                &decompress(c, &z, data.len()).unwrap()[..],
                &data[..],
                "{c}"
            );
            assert!(
                matches!(
                    decompress(c, &z, data.len() - 1),
                    Err(DecodeError::TooLarge { .. })
                ),
                "{c}"
            );
        }
        // A raw snappy block claiming 3.75 GiB: the hint says so, the decoder refuses before
        // allocating anything like it.
        let mut raw = vec![0x80, 0x80, 0x80, 0x80, 0x0f];
        raw.extend_from_slice(&[0; 16]);
        assert_eq!(size_hint(Compression::Snappy, &raw), Some(0xf000_0000));
        assert!(matches!(
            decompress(Compression::Snappy, &raw, 1 << 20),
            Err(DecodeError::TooLarge { .. })
        ));
        // lz4 frames that carry their content size.
        let info = lz4_flex::frame::FrameInfo::new().content_size(Some(data.len() as u64));
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(&data).unwrap();
        let framed = enc.finish().unwrap();
        assert_eq!(size_hint(Compression::Lz4, &framed), Some(data.len()));
        assert_eq!(
            &decompress(Compression::Lz4, &framed, data.len()).unwrap()[..],
            &data[..]
        );
    }

    fn sample() -> Vec<u8> {
        (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn ids_names_and_attributes() {
        for c in ALL {
            assert_eq!(Compression::from_id(c.id()).unwrap(), c);
            assert_eq!(
                Compression::from_attributes(c.attribute_bits() | 0x38).unwrap(),
                c
            );
            assert_eq!(Compression::from_name(&c.name().to_uppercase()), Some(c));
        }
        for id in 5..8 {
            assert_eq!(
                Compression::from_id(id),
                Err(DecodeError::UnknownCompression { codec: id })
            );
        }
        assert_eq!(Compression::from_name("brotli"), None);
    }

    #[test]
    fn every_codec_round_trips() {
        let data = sample();
        for c in ALL {
            for input in [&data[..], b"", b"x"] {
                let z = compress(c, input).unwrap();
                let back = decompress(c, &z, input.len()).unwrap();
                assert_eq!(&back[..], input, "{c}");
            }
            // Exactly at the limit passes, one below fails.
            let z = compress(c, &data).unwrap();
            assert!(decompress(c, &z, data.len() - 1).is_err(), "{c}");
        }
    }

    #[test]
    fn output_bound_stops_a_bomb() {
        let zeros = vec![0u8; 1 << 20];
        for c in ALL {
            let z = compress(c, &zeros).unwrap();
            if c != Compression::None {
                assert!(z.len() < 64 * 1024, "{c} should shrink zeros");
            }
            let err = decompress(c, &z, 64 * 1024).unwrap_err();
            assert!(
                matches!(
                    err,
                    DecodeError::TooLarge { .. } | DecodeError::Decompression { .. }
                ),
                "{c}: {err:?}"
            );
        }
    }

    #[test]
    fn snappy_raw_xerial_and_framed_are_all_readable() {
        let data = sample();
        let xerial = compress(Compression::Snappy, &data).unwrap();
        assert_eq!(&xerial[..8], &XERIAL_MAGIC);
        assert_eq!(&xerial[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        // Several 32 KiB blocks.
        assert!(xerial.len() > 16 + 3 * 4);
        assert_eq!(
            &decompress(Compression::Snappy, &xerial, data.len()).unwrap()[..],
            &data[..]
        );

        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            &decompress(Compression::Snappy, &raw, data.len()).unwrap()[..],
            &data[..]
        );

        let mut framed = Vec::new();
        let mut w = snap::write::FrameEncoder::new(&mut framed);
        w.write_all(&data).unwrap();
        drop(w);
        assert_eq!(
            &decompress(Compression::Snappy, &framed, data.len()).unwrap()[..],
            &data[..]
        );

        // Two concatenated xerial streams read as one.
        let second = compress(Compression::Snappy, b"tail").unwrap();
        let both = [&xerial[..], &second[..]].concat();
        let out = decompress(Compression::Snappy, &both, data.len() + 4).unwrap();
        assert_eq!(&out[data.len()..], b"tail");

        // A raw block claiming a huge length is refused before allocating.
        let mut huge = Vec::new();
        crate::primitives::put_uvarint(&mut huge, u32::MAX >> 1);
        huge.push(0);
        assert!(matches!(
            decompress(Compression::Snappy, &huge, 1024),
            Err(DecodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn corrupt_input_is_an_error_not_a_panic() {
        let data = sample();
        for c in ALL.into_iter().skip(1) {
            let z = compress(c, &data).unwrap();
            for cut in [0, 1, 5, 10, 17, z.len() / 2, z.len() - 1] {
                let _ = decompress(c, &z[..cut], data.len());
            }
            let mut bad = z.to_vec();
            for i in (0..bad.len()).step_by(97) {
                bad[i] ^= 0x5a;
            }
            let _ = decompress(c, &bad, data.len());
            let _ = decompress(c, &[0xff; 40], data.len());
        }
    }

    #[test]
    fn xxh32_matches_lz4_header_checksum() {
        let z = compress(Compression::Lz4, b"hello hello hello").unwrap();
        // Magic, FLG, BD, HC: the checksum covers FLG and BD.
        assert_eq!(z[6], (xxh32_short(&z[4..6]) >> 8) as u8);
        // Known xxHash32 values.
        assert_eq!(xxh32_short(b""), 0x02CC_5D05);
        assert_eq!(xxh32_short(b"a"), 0x550D_7456);
        assert_eq!(xxh32_short(b"abc"), 0x32D1_53FF);
        // Kafka's old (KAFKA-3160) checksum is repaired on request.
        let mut broken = z.to_vec();
        broken[6] ^= 0xff;
        assert!(decompress(Compression::Lz4, &broken, 100).is_err());
        let out = decompress_with(Compression::Lz4, &broken, 100, true).unwrap();
        assert_eq!(&out[..], b"hello hello hello");
    }
}
