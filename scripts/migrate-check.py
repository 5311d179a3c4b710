#!/usr/bin/env python3
"""The independent side of scripts/migrate-e2e.sh: reads a Kafka cluster with
kafka-python (not kafkalite code) and compares what it finds with the JSON
lines examples/migrate_fixture.rs wrote for each record it sent.

    migrate-check.py records BOOTSTRAP EXPECTED.jsonl
        every partition holds exactly the expected records, at the expected
        offsets (the target was empty, so the map is the identity), with
        their keys, values, headers and CreateTime timestamps; no duplicates.
    migrate-check.py group BOOTSTRAP EXPECTED.jsonl GROUP TOPIC COMMITTED
        a consumer in GROUP starts each partition of TOPIC at COMMITTED
        (the group's committed offset in the store) and reads exactly the
        expected records from there to the end.
"""
import json
import sys
from collections import defaultdict

from kafka import KafkaConsumer, TopicPartition

TIMEOUT_MS = 3000


def expected_by_partition(path):
    parts = defaultdict(list)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            parts[(r["topic"], r["partition"])].append(r)
    for recs in parts.values():
        recs.sort(key=lambda r: r["offset"])
    return parts


def consumer(bootstrap, group=None):
    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="none" if group else "earliest",
        consumer_timeout_ms=TIMEOUT_MS,
        max_poll_records=5000,
    )


def read_to_end(c, tp):
    """Every record from the position on, until none arrives for TIMEOUT_MS.
    (Not up to end_offsets(): tansu 0.6 answers ListOffsets latest with the
    base offset of the last batch + 1, inside the last batch.)"""
    got = []
    while True:
        batch = c.poll(timeout_ms=TIMEOUT_MS)
        if not batch:
            return got
        for recs in batch.values():
            got.extend(recs)
def as_tuple(m):
    return (
        m.offset,
        None if m.key is None else m.key.decode(),
        m.value.decode(),
        [[k, v.decode()] for k, v in m.headers],
        m.timestamp,
        m.timestamp_type,
    )


def want_tuple(r):
    return (r["offset"], r["key"], r["value"], r["headers"], r["timestamp"], 0)


def compare(tp, got, want):
    g = [as_tuple(m) for m in got]
    w = [want_tuple(r) for r in want]
    if g != w:
        for i, (a, b) in enumerate(zip(g, w)):
            if a != b:
                raise SystemExit(f"{tp}: record {i} differs: got {a}, want {b}")
        raise SystemExit(f"{tp}: {len(g)} records, want {len(w)}")


def records(bootstrap, path):
    total = 0
    for (topic, p), want in sorted(expected_by_partition(path).items()):
        tp = TopicPartition(topic, p)
        c = consumer(bootstrap)
        c.assign([tp])
        c.seek_to_beginning(tp)
        got = read_to_end(c, tp)
        c.close()
        compare(tp, got, want)
        total += len(got)
    print(f"records: {total} records exactly as expected (offsets, keys, values, headers, timestamps)")


def group(bootstrap, path, group_id, topic, committed):
    committed = int(committed)
    parts = {p: w for (t, p), w in expected_by_partition(path).items() if t == topic}
    c = consumer(bootstrap, group_id)
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    n = 0
    for tp in tps:
        c.assign([tp])
        pos = c.position(tp)
        if pos != committed:
            raise SystemExit(f"group {group_id} {tp}: starts at {pos}, want {committed}")
        # The records from the committed position on. Read from the start
        # of the partition and keep offsets >= committed: tansu 0.6's Fetch
        # at an offset inside a batch skips the rest of that batch (it
        # returns only batches whose base offset is >= the fetch offset),
        # so a consumer seeking mid-batch on tansu loses records that a
        # Kafka broker would return.
        c.seek_to_beginning(tp)
        got = [m for m in read_to_end(c, tp) if m.offset >= committed]
        compare(tp, got, [r for r in parts[tp.partition] if r["offset"] >= committed])
        n += len(got)
    c.close()
    print(f"group {group_id}: resumes {topic} at {committed} on {len(tps)} partitions and reads exactly the {n} records after it")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"records": records, "group": group}[cmd](*args)
