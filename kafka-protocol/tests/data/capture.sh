#!/usr/bin/env bash
# Regenerates the golden request frames in tests/data/golden/ from real third-party clients.
#
# It installs kcat and the Python clients if they are missing, builds the capture server
# (kafka-protocol/examples/capture_server.rs), runs every client scenario against a fresh
# capture server on 127.0.0.1, each scenario into its own folder under $CAPTURE_WORK, and then
# copies one frame per (client, api, version, variant) into golden/<client>/.
#
# Usage: bash kafka-protocol/tests/data/capture.sh
# Environment: CAPTURE_PORT (default 19092), CAPTURE_WORK (default: a new temp dir),
#              CARGO_TARGET_DIR (as for cargo), SKIP_INSTALL=1 to skip the install step,
#              SELECT_ONLY=1 to redo only the selection from an earlier CAPTURE_WORK.
# Everything is loopback only, and every client step is bounded by `timeout`.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CRATE=$(cd "$HERE/../.." && pwd)
WS=$(cd "$CRATE/.." && pwd)
PORT=${CAPTURE_PORT:-19092}
BOOT=127.0.0.1:$PORT
WORK=${CAPTURE_WORK:-$(mktemp -d -t golden-capture.XXXXXX)}
GOLDEN=$HERE/golden
DRIVER=$HERE/capture_clients.py
COMPRESSIONS=(none gzip snappy lz4 zstd)
mkdir -p "$WORK"

log() { printf '\n=== %s\n' "$*"; }

if [ "${SELECT_ONLY:-0}" != 1 ]; then # capture: sections 1 to 4
rm -f "$WORK/scenarios.txt"

# --- 1. tools -----------------------------------------------------------------------------
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
    if ! command -v kcat >/dev/null; then
        log "installing kcat"
        apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y kcat
    fi
    if ! python3 -c 'import kafka, confluent_kafka, snappy, lz4, zstandard' 2>/dev/null; then
        log "installing Python clients"
        # The versions the committed frames came from (see golden/PROVENANCE.md).
        python3 -m pip install kafka-python==3.0.12 confluent-kafka==2.16.1 python-snappy lz4 zstandard
    fi
fi

log "client versions"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kcat: $(kcat -V 2>&1 | grep -m1 '^Version')"
    echo "kafka-python: $(python3 -c 'import kafka; print(kafka.__version__)')"
    echo "confluent-kafka: $(python3 -c 'import confluent_kafka as c; print(c.version(), "librdkafka", c.libversion()[0])')"
    echo "python: $(python3 --version 2>&1)"
    echo "Debian packages: $(dpkg-query -W -f '${Package} ${Version}; ' kcat librdkafka1 2>/dev/null)"
    echo "Python packages: $(python3 -m pip list 2>/dev/null |
        awk '/^(kafka-python|confluent-kafka|python-snappy|cramjam|lz4|zstandard) /{printf "%s %s; ", $1, $2}')"
} | tee "$WORK/versions.txt"

# --- 2. capture server --------------------------------------------------------------------
log "building the capture server"
(cd "$WS" && cargo build -p kafka-protocol --example capture_server) || exit 1
BIN=${CARGO_TARGET_DIR:-$WS/target}/debug/examples/capture_server
[ -x "$BIN" ] || { echo "capture server not found at $BIN"; exit 1; }

SERVER_PID=
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }
start_server() { # <scenario>
    rm -rf "${WORK:?}/$1"
    if port_open; then
        echo "something already listens on 127.0.0.1:$PORT; set CAPTURE_PORT"
        return 1
    fi
    "$BIN" "$PORT" "$WORK/$1" >"$WORK/$1.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 50); do
        if port_open && kill -0 "$SERVER_PID" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "capture server did not start (see $WORK/$1.log)"
    return 1
}
stop_server() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
        SERVER_PID=
    fi
}
trap stop_server EXIT

# $WORK/scenarios.txt lines: "<client> <scenario folder> <variant for Produce frames>"
scenario() { # <client> <name> <produce variant> -- command...
    local client=$1 name=$2 variant=$3
    shift 4
    log "$client: $name"
    start_server "$client-$name" || exit 1
    "$@"
    echo "(exit $?)"
    stop_server
    echo "$client $client-$name $variant" >>"$WORK/scenarios.txt"
    ls "$WORK/$client-$name" | sed 's/^/  /'
}

# --- 3. kcat (librdkafka from Debian) -----------------------------------------------------
KCAT=(timeout 20 kcat -b "$BOOT" -X api.version.request=true)
kcat_produce() { # <topic> <codec> [extra kcat args]
    local topic=$1 codec=$2
    shift 2
    printf 'k1:first line\nk2:second line\nk3:third line\n' |
        "${KCAT[@]}" -P -t "$topic" -z "$codec" -K: -H h1=v1 -H trace=abc "$@"
}
kcat_metadata() { "${KCAT[@]}" -L && "${KCAT[@]}" -L -t golden-kcat-meta; }
kcat_consume() {
    kcat_produce golden-kcat-c none && "${KCAT[@]}" -C -t golden-kcat-c -o beginning -e -f '%k=%s\n'
}
kcat_group() {
    kcat_produce golden-kcat-g none &&
        timeout -s INT 15 kcat -b "$BOOT" -X api.version.request=true -X auto.offset.reset=earliest \
            -X heartbeat.interval.ms=1000 -G golden-kcat-group golden-kcat-g
}

scenario kcat metadata none -- kcat_metadata
for c in "${COMPRESSIONS[@]}"; do
    scenario kcat "produce-$c" "$c" -- kcat_produce "golden-kcat-$c" "$c"
done
scenario kcat idempotent "idempotent-none" -- kcat_produce golden-kcat-idem none -X enable.idempotence=true
scenario kcat consume none -- kcat_consume
scenario kcat group none -- kcat_group

# --- 4. kafka-python and confluent-kafka --------------------------------------------------
for client in kafka-python confluent-kafka; do
    for c in "${COMPRESSIONS[@]}"; do
        scenario "$client" "produce-$c" "$c" -- timeout 30 python3 "$DRIVER" "$client" produce "$BOOT" "$c"
    done
    for c in none zstd; do
        scenario "$client" "idempotent-$c" "idempotent-$c" -- \
            timeout 30 python3 "$DRIVER" "$client" idempotent "$BOOT" "$c"
    done
    scenario "$client" consume none -- timeout 40 python3 "$DRIVER" "$client" consume "$BOOT"
    scenario "$client" admin none -- timeout 40 python3 "$DRIVER" "$client" admin "$BOOT"
done

fi # end of capture

# --- 5. selection -------------------------------------------------------------------------
# One file per (client, api, version, variant), the largest frame seen (it carries the most:
# topics in Metadata, records in Fetch, ...). Variants: Produce frames by the compression (and
# idempotence) of their scenario; Metadata for all topics (null list) as "all-topics";
# JoinGroup with an empty member id as "new-member".
log "selecting golden frames"
for client in kcat kafka-python confluent-kafka; do rm -rf "${GOLDEN:?}/$client"; done
python3 - "$WORK" "$GOLDEN" <<'PY'
import os, shutil, struct, sys

work, golden = sys.argv[1], sys.argv[2]
FLEX = {"Metadata": 9, "JoinGroup": 6}  # first flexible request version


def uvarint(b, i):
    shift = value = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def skip_tags(b, i):
    n, i = uvarint(b, i)
    for _ in range(n):
        _, i = uvarint(b, i)
        size, i = uvarint(b, i)
        i += size
    return i


def variant(api, version, b):
    """The variant name a frame's content implies, for the APIs where it matters."""
    if api not in FLEX:
        return None
    flex = version >= FLEX[api]
    (cid_len,) = struct.unpack_from(">h", b, 8)
    i = 10 + max(cid_len, 0)
    if flex:
        i = skip_tags(b, i)
    if api == "Metadata":
        n, _ = uvarint(b, i) if flex else (struct.unpack_from(">i", b, i)[0] + 1, 0)
        return "all-topics" if n == 0 or (version == 0 and n == 1) else None
    # JoinGroup: group id, session timeout, [rebalance timeout (v1+)], member id.
    if flex:
        n, i = uvarint(b, i)
        i += n - 1
    else:
        (n,) = struct.unpack_from(">h", b, i)
        i += 2 + n
    i += 4 + (4 if version >= 1 else 0)
    if flex:
        n, _ = uvarint(b, i)
        empty = n == 1
    else:
        empty = struct.unpack_from(">h", b, i)[0] == 0
    return "new-member" if empty else None


pick = {}
for line in open(os.path.join(work, "scenarios.txt")).read().split("\n"):
    if not line.strip():
        continue
    client, folder, produce_variant = line.split()
    for f in sorted(os.listdir(os.path.join(work, folder))):
        if not f.endswith(".bin"):
            continue
        path = os.path.join(work, folder, f)
        name = f[:-4].split("-", 1)[1]  # ApiName-vV
        api, version = name.rsplit("-v", 1)
        data = open(path, "rb").read()
        try:
            var = produce_variant if api == "Produce" else variant(api, int(version), data)
        except (IndexError, struct.error):
            var = None
        key = f"{client}/{name}" + (f"-{var}" if var else "")
        if key not in pick or len(data) > pick[key][1]:
            pick[key] = (path, len(data))
for key in sorted(pick):
    path, size = pick[key]
    os.makedirs(os.path.join(golden, os.path.dirname(key)), exist_ok=True)
    shutil.copyfile(path, os.path.join(golden, key + ".bin"))
    print(f"  {key}.bin ({size} bytes)")
PY
echo
echo "$(find "$GOLDEN" -name '*.bin' | wc -l) golden files, $(find "$GOLDEN" -name '*.bin' -printf '%s\n' | awk '{s+=$1} END {print s}') bytes; raw captures in $WORK"
grep -h 'no handler\|closing' "$WORK"/*.log | sort | uniq -c || true
