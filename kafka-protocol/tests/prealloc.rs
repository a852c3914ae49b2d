//! A lying array count cannot make the decoder reserve many times the frame's size.
//!
//! Counts are checked against the bytes left (a count larger than that is refused outright),
//! but an element in memory is far larger than its smallest encoding: without a cap, a 32 MiB
//! frame announcing 32 million topics would reserve gigabytes before the first element failed
//! to decode. The process's peak virtual size (`VmPeak`, Linux) shows such a reservation even
//! though its pages are never touched. This file holds this one test, so no other test of the
//! same process allocates meanwhile.
#![allow(clippy::unwrap_used)]

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::frame;

/// `VmPeak` of this process in KiB (`None` off Linux).
fn vm_peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmPeak:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_huge_array_count_reserves_a_bounded_amount() {
    const BODY: usize = 32 << 20;
    // Metadata v1 request: header v1 (api key 3, version 1, correlation id, client id), then
    // the topics array: a count as large as the bytes after it, and a first topic name whose
    // length is negative, so decoding fails at the first element.
    let mut f = BytesMut::with_capacity(BODY + 64);
    f.put_i16(3);
    f.put_i16(1);
    f.put_i32(7);
    f.put_i16(1);
    f.put_u8(b'c');
    let count = i32::try_from(BODY).unwrap();
    f.put_i32(count);
    f.put_i16(-5);
    f.resize(f.len() + BODY - 2, 0);
    let frame: Bytes = f.freeze();
    let Some(before) = vm_peak_kib() else {
        eprintln!("NOTICE: no /proc/self/status; skipping");
        return;
    };
    let err = frame::decode_request(&frame).unwrap_err();
    let after = vm_peak_kib().unwrap();
    let grew_mib = after.saturating_sub(before) / 1024;
    eprintln!("error: {err}; VmPeak grew by {grew_mib} MiB");
    assert!(
        err.to_string().contains("negative") || err.to_string().contains("length"),
        "{err}"
    );
    assert!(
        grew_mib < 256,
        "decoding a {} MiB frame reserved {grew_mib} MiB",
        BODY >> 20
    );
}
