"""kcat (Debian's package, linked to the system librdkafka) against the broker. Commands:

  metadata   kcat -L (plain and -J), checks the broker list and a topic's partitions
  lines      produce a file of lines with -P -l, consume it back with -C -o beginning -e,
             and compare the output with the file byte for byte (--compression: -z)
  produce    write the common record set in --style text (key, value, one header)
  consume    read the common record set with -J and compare
  group-consume  the same with -G (a group member), which commits at the end
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import common
from common import fail, log

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
if KCAT is None:
    common.missing_peer("kcat (Debian package kcat)")


def kcat(args, extra, stdin=None, timeout=None):
    cmd = [KCAT, "-b", args.bootstrap, "-X", "broker.address.family=v4",
           "-X", "socket.timeout.ms=15000"] + extra
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True,
                           timeout=timeout or args.timeout)
    except subprocess.TimeoutExpired as e:
        err = (e.stderr or b"").decode(errors="replace")[-2000:]
        fail(f"{' '.join(cmd[1:])} did not finish within {timeout or args.timeout} s; "
             f"stderr: {err}")
    if p.returncode != 0:
        fail(f"{' '.join(cmd[1:])} exited {p.returncode}; stderr: "
             f"{p.stderr.decode(errors='replace')[-2000:]}")
    return p.stdout, p.stderr.decode(errors="replace")


def compression_flags(args):
    if args.compression == "none":
        return []
    return ["-X", f"compression.codec={args.compression}"]


def metadata(args):
    out, _ = kcat(args, ["-L"])
    text = out.decode(errors="replace")
    log(text.strip())
    if "1 brokers:" not in text:
        fail("kcat -L does not list one broker")
    # -t on a new topic auto-creates it (num.partitions).
    out, _ = kcat(args, ["-L", "-J", "-t", args.topic])
    md = json.loads(out)
    log(f"kcat -L -J -t {args.topic}: {json.dumps(md)[:500]}")
    if len(md.get("brokers", [])) != 1:
        fail(f"brokers: {md.get('brokers')}")
    topics = [t for t in md.get("topics", []) if t.get("topic") == args.topic]
    if not topics:
        fail(f"topic {args.topic} not in {md.get('topics')}")
    t = topics[0]
    # Right after auto-creation one more request may be needed to see the partitions.
    if "error" in t or len(t.get("partitions", [])) != args.partitions:
        out, _ = kcat(args, ["-L", "-J", "-t", args.topic])
        t = [x for x in json.loads(out)["topics"] if x.get("topic") == args.topic][0]
    if len(t.get("partitions", [])) != args.partitions:
        fail(f"topic {args.topic}: expected {args.partitions} partitions, got {t}")
    log("OK: kcat metadata")


def lines_file(seed):
    rng = random.Random(seed)
    words = ["kafka", "broker", "r\u00e9sum\u00e9", "\u65e5\u672c\u8a9e", "tab\there", "  spaced  ",
             "quote\"d", "{json: 1}", "\\backslash", "emoji \U0001F600"]
    lines = []
    for i in range(1500):
        n = rng.choice([1, 3, 10, 40])
        line = f"{i}: " + " ".join(rng.choice(words) for _ in range(n))
        if i % 500 == 250:
            line += " " + "x" * 60_000
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def lines(args):
    data = lines_file(args.seed)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lines.txt")
        with open(path, "wb") as f:
            f.write(data)
        kcat(args, ["-P", "-t", args.topic, "-p", "0", "-l", path] + compression_flags(args))
    out, err = kcat(args, ["-C", "-t", args.topic, "-p", "0", "-o", "beginning", "-e", "-q"])
    if out != data:
        want = data.split(b"\n")
        got = out.split(b"\n")
        for i, (a, b) in enumerate(zip(want, got)):
            if a != b:
                fail(f"line {i} differs: wrote {a[:80]!r}, read {b[:80]!r} "
                     f"({len(want)} lines written, {len(got)} read)")
        fail(f"wrote {len(want) - 1} lines, read {len(got) - 1}")
    n = data.count(b"\n")
    log(f"OK: {n} lines ({len(data)} bytes, {args.compression}) read back exactly")


def produce(args):
    if args.style != "text":
        fail("kcat writes --style text only")
    name, value = common.TEXT_HEADER
    for p, recs in sorted(common.by_partition(common.records(args)).items()):
        stdin = b"".join(r.key + b"\t" + r.value + b"\n" for r in recs)
        kcat(args, ["-P", "-t", args.topic, "-p", str(p), "-K", "\t",
                    "-H", f"{name}={value.decode()}"] + compression_flags(args), stdin=stdin)
    log(f"OK: produced {args.count} records to {args.topic} with kcat ({args.compression})")


def consume(args):
    out, _ = kcat(args, ["-C", "-t", args.topic, "-o", "beginning", "-e", "-q", "-J"])
    report_json(args, out)


def group_consume(args):
    """kcat -G: a balanced consumer in a group reads the common record set to the end (-e) and
    commits on close (librdkafka's auto commit)."""
    group = args.group or f"{args.topic}-group"
    out, _ = kcat(args, ["-G", group, args.topic, "-X", "auto.offset.reset=earliest",
                         "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
                         "-e", "-q", "-J"])
    report_json(args, out)


def report_json(args, out):
    got = {p: [] for p in range(args.partitions)}
    for line in out.splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        hs = m.get("headers") or []
        headers = [(hs[i], hs[i + 1].encode()) for i in range(0, len(hs), 2)]
        key = m.get("key")
        value = m.get("payload")
        got.setdefault(m["partition"], []).append(
            (None if key is None else key.encode(), None if value is None else value.encode(),
             headers, m.get("ts")))
    common.report(args, got, check_timestamps=False)


def main():
    p = common.parser(__doc__)
    p.add_argument("--group", default=None)
    args = p.parse_args()
    cmds = {"metadata": metadata, "lines": lines, "produce": produce, "consume": consume,
            "group-consume": group_consume}
    if args.command not in cmds:
        fail(f"unknown command {args.command}")
    cmds[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
