//! The cases of the producer bench: record size, acks, placement, partitions, pacing and
//! transactions.

pub(crate) use kafka_bench::harness::{Client, Mode};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Case {
    pub(crate) size: usize,
    pub(crate) acks_all: bool,
    pub(crate) keyed: bool,
    pub(crate) partitions: i32,
    pub(crate) records: u64,
    /// Records per second for a paced (latency) case; `None`: as fast as possible.
    pub(crate) rate: Option<u64>,
    /// Records per transaction for a transactional case (`transactional.id` set, each
    /// record's partition given round-robin); 0: no transactions.
    pub(crate) txn: u64,
}

impl Case {
    pub(crate) fn name(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let placement = if self.txn > 0 {
            format!("txns of {}", self.txn)
        } else if self.keyed {
            "keyed".into()
        } else {
            "unkeyed".into()
        };
        let mut s = format!(
            "{size} acks={} {placement} {}p",
            if self.acks_all { "all" } else { "1" },
            self.partitions
        );
        if let Some(r) = self.rate {
            s.push_str(&format!(" @{r}/s"));
        }
        s
    }

    pub(crate) fn is_headline(&self) -> bool {
        self.size == 100
            && !self.acks_all
            && !self.keyed
            && self.partitions == 8
            && self.rate.is_none()
            && self.txn == 0
    }

    /// Transactions of a transactional case (0 otherwise).
    pub(crate) fn transactions(&self) -> u64 {
        self.records.checked_div(self.txn).unwrap_or(0)
    }
}

pub(crate) fn cases(mode: Mode) -> Vec<Case> {
    let records = |size: usize| match (mode, size) {
        (Mode::Quick, 100) => 1_000_000,
        (Mode::Quick, _) => 300_000,
        (_, 100) => 3_000_000,
        (_, _) => 1_000_000,
    };
    let case = |size, acks_all, keyed, partitions| Case {
        size,
        acks_all,
        keyed,
        partitions,
        records: records(size),
        rate: None,
        txn: 0,
    };
    let mut out = match mode {
        // The headline case, and one with every dimension changed.
        Mode::Quick => vec![case(100, false, false, 8), case(1024, true, true, 1)],
        // The headline case, then each dimension varied once.
        Mode::Default => vec![
            case(100, false, false, 8),
            case(1024, false, false, 8),
            case(100, true, false, 8),
            case(100, false, false, 1),
            case(100, false, true, 8),
        ],
        Mode::Full => {
            let mut v = Vec::new();
            for size in [100, 1024] {
                for acks_all in [false, true] {
                    for keyed in [false, true] {
                        for partitions in [1, 8] {
                            v.push(case(size, acks_all, keyed, partitions));
                        }
                    }
                }
            }
            v
        }
    };
    // Transactions of 100 and of 10,000 records (a fixed count, bounded by MAX_PHASE too).
    for (txn, transactions) in [(100, 1000), (10_000, 60)] {
        let transactions = if mode == Mode::Quick {
            transactions / 5
        } else {
            transactions
        };
        out.push(Case {
            size: 100,
            acks_all: true,
            keyed: false,
            partitions: 8,
            records: txn * transactions,
            rate: None,
            txn,
        });
    }
    // Latency below saturation: a paced case.
    let (rate, seconds) = if mode == Mode::Quick {
        (10_000, 2)
    } else {
        (10_000, 3)
    };
    out.push(Case {
        size: 100,
        acks_all: true,
        keyed: false,
        partitions: 8,
        records: rate * seconds,
        rate: Some(rate),
        txn: 0,
    });
    out
}
