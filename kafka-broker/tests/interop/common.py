"""Shared by the interop client scripts: command-line options, the deterministic record set
every producer writes and every consumer expects, and the byte-for-byte comparison.

A producer and a consumer that are given the same --seed, --count, --spread and --style
agree on every record without exchanging a file: record i goes to partition i % spread, in
order, with the key, value, headers and timestamp that `records()` derives from (seed, i).
"""

import argparse
import random
import sys
import time

# Exit codes understood by tests/interop.rs.
EXIT_FAIL = 1
EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


def missing_peer(what):
    print(f"MISSING PEER: {what}", flush=True)
    sys.exit(EXIT_MISSING_PEER)


def log(msg):
    print(msg, flush=True)


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("command")
    p.add_argument("--bootstrap", required=True, help="host:port of the broker")
    p.add_argument("--topic", default="interop")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--spread", type=int, default=3,
                   help="records go to partitions 0..spread-1 round robin")
    p.add_argument("--partitions", type=int, default=3,
                   help="partitions the (auto-created) topic must have")
    p.add_argument("--style", choices=["binary", "text"], default="binary",
                   help="text: printable keys and values, one fixed header, no timestamps "
                        "(what kcat can write and print)")
    p.add_argument("--compression", default="none")
    p.add_argument("--timeout", type=float, default=40.0, help="seconds for the whole step")
    return p


class Record:
    __slots__ = ("index", "partition", "key", "value", "headers", "timestamp")

    def __init__(self, index, partition, key, value, headers, timestamp):
        self.index = index
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp

    def describe(self):
        def short(b):
            if b is None:
                return "None"
            return repr(b[:40]) + (f"...({len(b)} bytes)" if len(b) > 40 else "")
        hs = [(k, short(v)) for k, v in self.headers]
        return (f"#{self.index} p{self.partition} key={short(self.key)} value={short(self.value)} "
                f"headers={hs} ts={self.timestamp}")


# A fixed, recent-enough base so timestamps are valid for any retention setting, and the
# same in the producing and the consuming process. Rounded to the hour so that two steps of
# one scenario started a few seconds apart agree.
def timestamp_base():
    now_ms = int(time.time() * 1000)
    return now_ms - now_ms % 3_600_000 - 3_600_000


TEXT_HEADER = ("origin", b"interop")


def records(args):
    """The records for (seed, count, spread, style)."""
    rng = random.Random(args.seed)
    base = timestamp_base()
    out = []
    for i in range(args.count):
        partition = i % args.spread
        if args.style == "text":
            key = f"k{args.seed}-{i}".encode()
            n = rng.choice([1, 5, 20, 100, 300])
            alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:-_!?"
            value = (f"v{i} " + "".join(rng.choice(alphabet) for _ in range(n))).encode()
            out.append(Record(i, partition, key, value, [TEXT_HEADER], None))
            continue
        # Keys: mostly short binary, some absent.
        if i % 7 == 3:
            key = None
        else:
            key = rng.randbytes(rng.choice([1, 8, 16, 33]))
        # Values: every size class, some null (tombstones), some empty, some compressible.
        # (kafka-python refuses a record with neither key nor value.)
        if i % 11 == 5 and key is not None:
            value = None
        elif i % 13 == 6:
            value = b""
        elif i % 17 == 9:
            value = (b"compressible-%d " % i) * rng.choice([50, 400, 2000])
        else:
            value = rng.randbytes(rng.choice([1, 10, 100, 1000, 3000]))
        headers = []
        for h in range(i % 4):
            name = ["trace-id", "content-type", "h\u00e9ader", "x"][h]
            if h == 3:
                hv = b""
            elif h == 2 and i % 8 == 2:
                hv = None  # a header without a value
            else:
                hv = rng.randbytes(rng.choice([0, 4, 24]))
            headers.append((name, hv))
        out.append(Record(i, partition, key, value, headers, base + i * 7))
    return out


def past_times(args):
    """Issue 13's record set for offsets_for_times: `count` records, one second apart, the
    first about two hours old (CreateTime), record i on partition i % spread. Returns
    partition -> list of timestamps in offset order (the same in every step of a scenario)."""
    base = timestamp_base() - 3_600_000
    parts = {}
    for i in range(args.count):
        parts.setdefault(i % args.spread, []).append(base + i * 1000)
    return parts


def past_time_queries(times):
    """(timestamp asked, offset expected or None) for one partition's timestamps: before the
    first, each record's own time, one ms after each (the next record), after the last."""
    out = [(times[0] - 60_000, 0)]
    for off, ts in enumerate(times):
        out.append((ts, off))
        out.append((ts + 1, off + 1 if off + 1 < len(times) else None))
    return out


def by_partition(recs):
    parts = {}
    for r in recs:
        parts.setdefault(r.partition, []).append(r)
    return parts


def compare(args, got, check_timestamps=True, check_headers=True):
    """`got` maps partition -> list of (key, value, headers, timestamp) in offset order.
    Returns a list of mismatch descriptions (empty when everything is equal)."""
    expected = by_partition(records(args))
    problems = []
    for p in sorted(set(expected) | set(got)):
        exp = expected.get(p, [])
        have = got.get(p, [])
        if len(exp) != len(have):
            problems.append(f"partition {p}: expected {len(exp)} records, got {len(have)}")
        for j, (e, h) in enumerate(zip(exp, have)):
            key, value, headers, ts = h
            diffs = []
            if e.key != key:
                diffs.append(f"key {key!r:.60}")
            if e.value != value:
                vs = "None" if value is None else f"{len(value)} bytes {value[:30]!r}"
                diffs.append(f"value {vs}")
            if check_headers and list(e.headers) != list(headers):
                diffs.append(f"headers {headers!r:.200}")
            if check_timestamps and e.timestamp is not None and e.timestamp != ts:
                diffs.append(f"timestamp {ts}")
            if diffs:
                problems.append(f"partition {p} offset {j}: expected {e.describe()}; got "
                                + ", ".join(diffs))
            if len(problems) > 10:
                problems.append("...")
                return problems
    return problems


def report(args, got, **kw):
    problems = compare(args, got, **kw)
    total = sum(len(v) for v in got.values())
    if problems:
        for line in problems:
            log(line)
        fail(f"{len(problems)} mismatches in {total} records read from {args.topic}")
    log(f"OK: {total} records read back from {args.topic} equal what was written")
