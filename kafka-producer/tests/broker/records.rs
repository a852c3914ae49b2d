//! The generated records, the dumps peers read back, and the checks against what was sent.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use kafka_producer::ProducerRecord;
use kafka_producer::partitioner::partition_for_key;

use crate::{PARTITIONS, VALUE_SIZE};

/// How record `i` of a run looks; the value starts with `i` in decimal and a colon, so a
/// record read back names its index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scheme {
    /// Value: `i` in 10 digits, `:`, then bytes of a generator seeded by `i` (every byte value),
    /// [`VALUE_SIZE`] bytes in all. Key: `key-<(i / 2) % keys>` for even `i`, none for odd.
    Mixed { keys: u64 },
    /// The `produce` example's: value `i`, `:`, then letters from a xorshift seeded by `i`,
    /// `size` bytes; key `i % keys` in decimal.
    Example { size: usize, keys: u64 },
}

impl Scheme {
    pub(crate) fn key(self, i: u64) -> Option<Vec<u8>> {
        match self {
            Self::Mixed { keys } => (i % 2 == 0).then(|| format!("key-{}", (i / 2) % keys).into()),
            Self::Example { keys, .. } => Some((i % keys).to_string().into()),
        }
    }

    pub(crate) fn value(self, i: u64) -> Vec<u8> {
        match self {
            Self::Mixed { .. } => {
                let mut v = Vec::with_capacity(VALUE_SIZE);
                v.extend_from_slice(format!("{i:010}:").as_bytes());
                let mut x = i ^ 0x5851_f42d_4c95_7f2d;
                while v.len() < VALUE_SIZE {
                    x = x
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    v.push((x >> 56) as u8);
                }
                v
            }
            Self::Example { size, .. } => {
                let mut v = i.to_string().into_bytes();
                v.push(b':');
                let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                while v.len() < size {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    v.push(b'a' + (x % 26) as u8);
                }
                v.truncate(size.max(1));
                v
            }
        }
    }

    pub(crate) fn record(self, topic: &str, i: u64) -> ProducerRecord {
        let rec = ProducerRecord::new(topic, self.value(i));
        match self.key(i) {
            Some(k) => rec.key(k),
            None => rec,
        }
    }
}

/// The index a value starts with.
pub(crate) fn index_of(value: &[u8]) -> Option<u64> {
    let colon = value.iter().take(21).position(|&b| b == b':')?;
    std::str::from_utf8(&value[..colon]).ok()?.parse().ok()
}

/// One record of a dump.
struct Dumped {
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// Reads `len` bytes, or none for a length of -1 (null).
fn read_field(r: &mut impl Read, len: i64) -> Option<Vec<u8>> {
    let len = usize::try_from(len).ok()?;
    let mut b = vec![0; len];
    r.read_exact(&mut b).unwrap();
    Some(b)
}

/// Calls `f` with every record of a dump (`<p> <o> <klen> <vlen>:<key><value>\n`).
fn for_each_dumped(path: &Path, mut f: impl FnMut(Dumped)) {
    let mut r = BufReader::with_capacity(1 << 20, File::open(path).unwrap());
    let mut head = Vec::new();
    let mut n = 0u64;
    loop {
        head.clear();
        if r.read_until(b':', &mut head).unwrap() == 0 {
            break;
        }
        let fields: Option<Vec<i64>> = head
            .strip_suffix(b":")
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| h.split_ascii_whitespace().map(|f| f.parse().ok()).collect());
        let Some(&[partition, offset, klen, vlen]) = fields.as_deref() else {
            panic!("{}: record {n}: bad header {head:?}", path.display());
        };
        let key = read_field(&mut r, klen);
        let value = read_field(&mut r, vlen);
        let mut nl = [0u8];
        r.read_exact(&mut nl).unwrap();
        assert_eq!(nl[0], b'\n', "{}: record {n}: no newline", path.display());
        f(Dumped {
            partition: i32::try_from(partition).unwrap(),
            offset,
            key,
            value,
        });
        n += 1;
    }
}

/// What a topic must hold: records `0..count` of `scheme`, each where its future said.
pub(crate) struct Expected<'a> {
    pub(crate) topic: &'a str,
    pub(crate) scheme: Scheme,
    pub(crate) count: u64,
    /// Partition and offset from each record's future (offset -1 with acks=0); `None` when
    /// not known (the example).
    pub(crate) placed: Option<&'a [(i32, i64)]>,
}

/// Collects the first problems and counts all of them.
#[derive(Default)]
pub(crate) struct Problems {
    first: Vec<String>,
    count: usize,
}

impl Problems {
    pub(crate) fn add(&mut self, msg: String) {
        self.count += 1;
        if self.first.len() < 15 {
            self.first.push(msg);
        }
    }

    pub(crate) fn into_result(self, what: &str) -> Result<(), String> {
        if self.count == 0 {
            return Ok(());
        }
        Err(format!(
            "{what}: {} problems, the first ones:\n{}",
            self.count,
            self.first.join("\n")
        ))
    }

    pub(crate) fn assert_none(self, what: &str) {
        if let Err(e) = self.into_result(what) {
            panic!("{e}");
        }
    }
}

/// Compares a dump with what was sent: every record once, with its key and value, at the
/// partition and offset its future reported; per partition, offsets contiguous from 0 and
/// records in send order; keyed records on `partition_for_key`. Returns the record count.
pub(crate) fn check_dump(who: &str, path: &Path, exp: &Expected<'_>) -> Result<u64, String> {
    let n = usize::try_from(exp.count).unwrap();
    let mut seen = vec![false; n];
    let mut next_offset = vec![0i64; PARTITIONS as usize];
    let mut last_index: Vec<Option<u64>> = vec![None; PARTITIONS as usize];
    let mut problems = Problems::default();
    let mut records = 0u64;
    for_each_dumped(path, |d| {
        records += 1;
        let at = format!("{}-{}@{}", exp.topic, d.partition, d.offset);
        let Some(p) = usize::try_from(d.partition)
            .ok()
            .filter(|&p| p < PARTITIONS as usize)
        else {
            problems.add(format!("{at}: partition out of range"));
            return;
        };
        if d.offset != next_offset[p] {
            problems.add(format!(
                "{at}: offset {} expected (a gap or a repeat)",
                next_offset[p]
            ));
        }
        next_offset[p] = d.offset + 1;
        let Some(i) = d.value.as_deref().and_then(index_of) else {
            problems.add(format!("{at}: a value that names no index: {:?}", d.value));
            return;
        };
        let Some(idx) = usize::try_from(i).ok().filter(|&x| x < n) else {
            problems.add(format!("{at}: index {i} was never sent"));
            return;
        };
        if std::mem::replace(&mut seen[idx], true) {
            problems.add(format!("{at}: record {i} a second time"));
        }
        if d.value.as_deref() != Some(&exp.scheme.value(i)[..]) {
            problems.add(format!("{at}: record {i}: wrong value {:?}", d.value));
        }
        if d.key != exp.scheme.key(i) {
            problems.add(format!("{at}: record {i}: key {:?}", d.key));
        }
        if let Some(k) = &d.key {
            let want = partition_for_key(k, PARTITIONS);
            if want != d.partition {
                problems.add(format!(
                    "{at}: record {i}: keyed, belongs on partition {want}"
                ));
            }
        }
        if let Some(placed) = exp.placed {
            let (pp, po) = placed[idx];
            if pp != d.partition || (po >= 0 && po != d.offset) {
                problems.add(format!(
                    "{at}: record {i}: its future said partition {pp} offset {po}"
                ));
            }
        }
        if last_index[p].is_some_and(|last| last >= i) {
            problems.add(format!(
                "{at}: record {i} after record {:?}: not in send order",
                last_index[p]
            ));
        }
        last_index[p] = Some(i);
    });
    let missing: Vec<usize> = (0..n).filter(|&i| !seen[i]).collect();
    if !missing.is_empty() {
        problems.add(format!(
            "{} records missing, the first: {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    problems.into_result(&format!("{who} reading {}", exp.topic))?;
    Ok(records)
}

/// [`check_dump`], panicking with the problems.
pub(crate) fn assert_dump(who: &str, path: &Path, exp: &Expected<'_>) -> u64 {
    check_dump(who, path, exp).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks the partitions and offsets the futures reported: per partition contiguous from
/// `first` and increasing in send order; keyed records on `partition_for_key`, every key
/// on one partition. Returns each key's partition.
pub(crate) fn check_placed(
    scheme: Scheme,
    placed: &[(i32, i64)],
    first: i64,
) -> HashMap<Vec<u8>, i32> {
    let mut next = vec![first; PARTITIONS as usize];
    let mut by_key: HashMap<Vec<u8>, i32> = HashMap::new();
    let mut problems = Problems::default();
    for (i, &(p, o)) in placed.iter().enumerate() {
        let i = i as u64;
        let Some(slot) = usize::try_from(p).ok().filter(|&x| x < PARTITIONS as usize) else {
            problems.add(format!("record {i}: partition {p}"));
            continue;
        };
        if o != next[slot] {
            problems.add(format!(
                "record {i}: offset {o} on partition {p}, {} expected",
                next[slot]
            ));
        }
        next[slot] = o + 1;
        if let Some(k) = scheme.key(i) {
            if p != partition_for_key(&k, PARTITIONS) {
                problems.add(format!("record {i}: key {k:?} on partition {p}"));
            }
            if *by_key.entry(k.clone()).or_insert(p) != p {
                problems.add(format!("record {i}: key {k:?} on two partitions"));
            }
        }
    }
    problems.assert_none("the futures' partitions and offsets");
    by_key
}
