#!/usr/bin/env bash
# End-to-end test of `kafkalite migrate` and `kafkalite import` against a
# Kafka-protocol broker no one here wrote: tansu (Apache-2.0), on loopback
# only, stopped when the script ends. The checks on the broker side are
# kafka-python's (scripts/migrate-check.py), not kafkalite code.
#
#   scripts/migrate-e2e.sh            # runs if tansu is installed, else says so and exits 0
#   scripts/migrate-e2e.sh --install  # builds tansu first (about 10 minutes)
#
# tansu is looked for in $TANSU, then .tansu/bin/tansu, then PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TANSU=${TANSU:-}
if [ -z "$TANSU" ]; then
  if [ -x "$ROOT/.tansu/bin/tansu" ]; then TANSU=$ROOT/.tansu/bin/tansu
  elif command -v tansu >/dev/null; then TANSU=$(command -v tansu); fi
fi
if [ -z "$TANSU" ] && [ "${1:-}" = "--install" ]; then
  cargo install tansu --features dynostore --root "$ROOT/.tansu"
  TANSU=$ROOT/.tansu/bin/tansu
fi
if [ -z "$TANSU" ]; then
  echo "migrate-e2e: SKIPPED: no tansu broker (run scripts/migrate-e2e.sh --install, or set TANSU)"
  exit 0
fi
python3 -c "import kafka" 2>/dev/null || pip install --quiet kafka-python==3.0.12

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
cargo build --quiet --features migrate --bin kafkalite --example migrate_fixture
BIN=$CARGO_TARGET_DIR/debug
K=$BIN/kafkalite
CHECK="python3 $ROOT/scripts/migrate-check.py"

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BOOT=127.0.0.1:$PORT
BROKER_PID=
cleanup() {
  if [ -n "$BROKER_PID" ]; then kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# A JSON schema for topic `strict` (values must be numbers): the broker
# refuses a produce that breaks it, which is the refusal tested below.
mkdir -p "$WORK/schemas"
echo '{"type": "object", "properties": {"value": {"type": "number"}}}' >"$WORK/schemas/strict.json"
# (tansu reads a file:// registry relative to its working directory.)
(cd "$WORK" && exec "$TANSU" broker --listener-url "tcp://$BOOT" --advertised-listener-url "tcp://$BOOT" \
  --storage-engine memory://tansu/ --schema-registry "file://./schemas" >"$WORK/broker.log" 2>&1) &
BROKER_PID=$!
up=
for _ in $(seq 100); do
  if python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null; then up=1; break; fi
  kill -0 "$BROKER_PID" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$up" ]; then echo "migrate-e2e: FAILED: the broker did not start:"; tail -5 "$WORK/broker.log"; exit 1; fi
echo "migrate-e2e: tansu listening on $BOOT (pid $BROKER_PID)"

fail() { echo "migrate-e2e: FAILED: $*"; echo "--- broker log (tail)"; tail -20 "$WORK/broker.log"; exit 1; }
expect_error() { # expect_error PATTERN command...: fails with a message matching PATTERN
  local pat=$1; shift
  if "$@" >"$WORK/out" 2>"$WORK/err"; then fail "expected an error from: $*"; fi
  grep -q -- "$pat" "$WORK/err" || fail "error of '$*' does not match '$pat': $(cat "$WORK/err")"
  echo "  ok: $(cat "$WORK/err")"
}

S=$WORK/store
EXP=$WORK/expected.jsonl
echo "== the store: 3 topics (none, lz4, keyed with headers), 100,002 records, 2 groups mid-partition"
"$BIN/examples/migrate_fixture" "$S" "$EXP" 0 33334
"$K" --dir "$S" groups reset-offsets g1 --topic plain --to-offset 1234 >/dev/null
"$K" --dir "$S" groups reset-offsets g2 --topic keyed --to-offset 777 >/dev/null
"$K" --dir "$S" groups reset-offsets g2 --topic lz4 --to-offset 5000 >/dev/null

echo "== bad input"
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_error "cannot connect to the Kafka broker at 127.0.0.1:$CLOSED" "$K" --dir "$S" migrate --bootstrap-server "127.0.0.1:$CLOSED"
expect_error "does not exist on the target" "$K" --dir "$S" migrate --bootstrap-server "$BOOT"
M=$WORK/mismatch
"$K" --dir "$M" topics create plain --partitions 2 >/dev/null 2>&1 || "$K" --dir "$M" topics create plain --partitions 2
# The target gets `plain` with 3 partitions from the real store first.
"$K" --dir "$S" migrate --bootstrap-server "$BOOT" --topic plain --create-topics --dry-run >"$WORK/dry" 2>&1
grep -q "would create topic plain with 3 partitions" "$WORK/dry" || fail "dry run: $(cat "$WORK/dry")"
[ ! -e "$S"/migrate-*.offsets ] || fail "a dry run wrote an offset map"
echo "  ok: --dry-run plans and sends nothing"

echo "== migrate, interrupted right after a produce answer (before the map records it)"
set +e
KAFKALITE_MIGRATE_TEST_CRASH_AFTER=5 "$K" --dir "$S" migrate --bootstrap-server "$BOOT" --create-topics >"$WORK/m1" 2>&1
rc=$?
set -e
[ $rc = 3 ] || fail "the interrupted run ended with $rc: $(cat "$WORK/m1")"
grep -q "^pending " "$S"/migrate-*.offsets || fail "no pending send in the map"
echo "  ok: stopped with a pending send in $(basename "$S"/migrate-*.offsets)"
expect_error "partitions on the target and 2 here" "$K" --dir "$M" migrate --bootstrap-server "$BOOT"

echo "== a broker that refuses a produce (a value its schema for topic strict rejects)"
R=$WORK/refused
"$K" --dir "$R" topics create strict --partitions 1 >/dev/null
seq 1 100 | "$K" --dir "$R" produce strict
echo "not-a-number" | "$K" --dir "$R" produce strict
seq 101 110 | "$K" --dir "$R" produce strict
expect_error "refused the batch at source offset 100 of strict-0: INVALID_RECORD" "$K" --dir "$R" migrate --bootstrap-server "$BOOT" --create-topics
grep -q "^run strict 0 0 0 100$" "$R"/migrate-*.offsets || fail "the map does not record the 100 records sent: $(cat "$R"/migrate-*.offsets)"
grep -q "^pending" "$R"/migrate-*.offsets && fail "a refused send left a pending entry"
echo "  ok: the map records the 100 records before the refused batch, and nothing pending"

echo "== retention warning: a topic whose retention.ms is shorter than its records' age"
O=$WORK/old
"$K" --dir "$O" topics create old --partitions 1 --config retention.ms=1 >/dev/null
printf 'a\nb\n' | "$K" --dir "$O" produce old
sleep 0.1
"$K" --dir "$O" migrate --bootstrap-server "$BOOT" --create-topics >"$WORK/old.out" 2>&1 || fail "old: $(cat "$WORK/old.out")"
grep -q "warning: topic old has retention.ms=1 on the target" "$WORK/old.out" || fail "no retention warning: $(cat "$WORK/old.out")"
echo "  ok: $(grep -o 'warning: topic old has retention.ms=1 on the target[^:]*' "$WORK/old.out")"

echo "== migrate killed (SIGKILL) mid-run, then resumed"
"$K" --dir "$S" migrate --bootstrap-server "$BOOT" >"$WORK/m2" 2>&1 &
MPID=$!
# Kill it once it is sending again: 0.05 s after it has dealt with the
# last pending send (or, failing that, after 10 s).
for _ in $(seq 100); do
  grep -q "^plain-2: the interrupted send" "$WORK/m2" && break
  sleep 0.1
done
sleep 0.05
kill -9 "$MPID" 2>/dev/null && echo "  killed migrate while it was sending" || echo "  (migrate finished before the kill)"
wait "$MPID" 2>/dev/null || true
"$K" --dir "$S" migrate --bootstrap-server "$BOOT" >"$WORK/m3" 2>&1 || fail "resume: $(cat "$WORK/m3")"
grep -q "interrupted send landed\|interrupted send did not land" "$WORK/m1" "$WORK/m2" "$WORK/m3" || fail "no pending send was resolved: $(cat "$WORK/m2" "$WORK/m3")"
grep "interrupted send" "$WORK/m2" "$WORK/m3" | sed 's/^/  /' || true
grep "^migrated" "$WORK/m3" | sed 's/^/  /'
grep "^group" "$WORK/m3" | sed 's/^/  /'

echo "== kafka-python: every record exactly once, at its offset; groups resume at their commits"
$CHECK records "$BOOT" "$EXP" || fail "records"
$CHECK group "$BOOT" "$EXP" g1 plain 1234 || fail "group g1"
$CHECK group "$BOOT" "$EXP" g2 keyed 777 || fail "group g2 keyed"
$CHECK group "$BOOT" "$EXP" g2 lz4 5000 || fail "group g2 lz4"

echo "== more appends; a second migrate sends only the new records"
"$BIN/examples/migrate_fixture" "$S" "$EXP" 33334 1000
"$K" --dir "$S" migrate --bootstrap-server "$BOOT" >"$WORK/m4" 2>&1 || fail "second migrate: $(cat "$WORK/m4")"
grep -q "^migrated 3000 records" "$WORK/m4" || fail "second migrate: $(cat "$WORK/m4")"
grep "^migrated" "$WORK/m4" | sed 's/^/  /'
"$K" --dir "$S" migrate --bootstrap-server "$BOOT" >"$WORK/m5" 2>&1 || fail "third migrate: $(cat "$WORK/m5")"
grep -q "^migrated 0 records" "$WORK/m5" || fail "third migrate: $(cat "$WORK/m5")"
echo "  ok: a third migrate sends nothing"
$CHECK records "$BOOT" "$EXP" || fail "records after the second migrate"

echo "== import into a fresh store; kafkalite consume prints the same records"
for t in plain lz4 keyed; do
  I=$WORK/import-$t
  "$K" --dir "$I" import --bootstrap-server "$BOOT" --topic "$t" --from-beginning >"$WORK/i-$t" 2>&1 || fail "import $t: $(cat "$WORK/i-$t")"
  for d in "$S" "$I"; do
    "$K" --dir "$d" consume "$t" --from-beginning --print-key --print-offset --timeout-ms 200 | sort >"$d.$t.txt"
  done
  cmp -s "$S.$t.txt" "$I.$t.txt" || fail "import $t: consume output differs"
  echo "  ok: $t: $(wc -l <"$I.$t.txt") records, the same as the source store's"
done
I=$WORK/import-group
"$K" --dir "$I" import --bootstrap-server "$BOOT" --topic lz4 --group g2 >"$WORK/ig" 2>&1 || fail "import --group: $(cat "$WORK/ig")"
grep -q "cluster offsets 5000\.\." "$WORK/ig" || fail "import --group: $(cat "$WORK/ig")"
sed "s/^/  /" "$WORK/ig"

echo "migrate-e2e: PASSED"
