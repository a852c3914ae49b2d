//! The cases of the consumer bench: which topics are read, with what settings.

use kafka_bench::harness::Error;

pub(crate) use kafka_bench::harness::{Client, Mode};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Case {
    pub(crate) size: usize,
    pub(crate) partitions: i32,
    pub(crate) records: u64,
    /// `compression.type` of the producer that filled the topic.
    pub(crate) compression: &'static str,
    pub(crate) check_crcs: bool,
    /// The topic is filled with transactions (some aborted), read with
    /// `isolation.level=read_committed`; `records` counts the committed ones.
    pub(crate) read_committed: bool,
}

impl Case {
    pub(crate) fn name(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let mut s = format!("{size} {}p", self.partitions);
        if self.compression != "none" {
            s.push(' ');
            s.push_str(self.compression);
        }
        if self.check_crcs {
            s.push_str(" crc");
        }
        if self.read_committed {
            s.push_str(" read_committed");
        }
        s
    }

    /// Cases with the same key read the same topic.
    pub(crate) fn topic_key(&self) -> (usize, i32, u64, &'static str, bool) {
        (
            self.size,
            self.partitions,
            self.records,
            self.compression,
            self.read_committed,
        )
    }

    pub(crate) fn is_headline(&self) -> bool {
        self.size == 100
            && self.partitions == 8
            && self.compression == "none"
            && !self.read_committed
    }
}

pub(crate) fn codec(name: &str) -> Result<&'static str, Error> {
    match name {
        "none" => Ok("none"),
        "lz4" => Ok("lz4"),
        other => Err(format!("unknown compression {other}").into()),
    }
}

pub(crate) fn cases(mode: Mode, check_crcs: bool) -> Vec<Case> {
    let records = |size: usize| match (mode, size) {
        (Mode::Quick, 100) => 2_000_000,
        (Mode::Quick, _) => 300_000,
        (_, 100) => 10_000_000,
        (_, _) => 1_000_000,
    };
    let case = |size, partitions, compression, crc| Case {
        size,
        partitions,
        records: records(size),
        compression,
        check_crcs: crc,
        read_committed: false,
    };
    // The headline case first; a CRC variant right after the case whose topic it reads.
    let mut out = Vec::new();
    for (size, partitions) in [(100, 8), (100, 1), (1024, 8), (1024, 1)] {
        out.push(case(size, partitions, "none", check_crcs));
        if mode == Mode::Full && partitions == 8 && !check_crcs {
            out.push(case(size, partitions, "none", true));
        }
    }
    if mode == Mode::Full {
        out.push(case(100, 8, "lz4", check_crcs));
    }
    // Committed transactions with aborted ones among them, read_committed.
    out.push(Case {
        records: if mode == Mode::Quick {
            1_000_000
        } else {
            5_000_000
        },
        read_committed: true,
        ..case(100, 8, "none", check_crcs)
    });
    out
}
