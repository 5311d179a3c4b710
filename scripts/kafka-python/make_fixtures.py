#!/usr/bin/env python3
"""Writes the test segments that an independent Kafka implementation
(kafka-python's record builder and reader) produces, with the records each
holds, into tests/data/. Run once; the outputs are committed and CI does not
need Python.

    pip install kafka-python==3.0.12 python-snappy zstandard
    python3 scripts/kafka-python/make_fixtures.py

Fixtures:
  mixed-codecs/   batches of all five codecs (none, gzip, snappy, lz4, zstd)
                  interleaved in one segment, twice over
  transactional/  plain, idempotent and transactional batches from two
                  producers, one transaction committed and one aborted, with
                  their COMMIT and ABORT control batches
It also decodes, with kafka-python's reader, the segments kafkalite wrote
(tests/data/kafkalite-written/<codec>/, made by `cargo test --test it
vectors::write_kafkalite_segments -- --ignored`) into decoded-by-kafka-python.json
beside each, so a test can check kafkalite's writer against it.
"""
import base64
import json
import os
import struct
import sys

from kafka.record.default_records import DefaultRecordBatchBuilder, DefaultRecordBatch
from kafka.record.util import calc_crc32c

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data")
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TS = 1710000000000


def b64(b):
    return None if b is None else base64.b64encode(bytes(b)).decode()


def batch(codec, base, records, pid=-1, epoch=-1, seq=-1, txn=False):
    """records: list of (ts, key, value, headers)."""
    b = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, 1 << 20)
    for i, (ts, k, v, h) in enumerate(records):
        b.append(i, timestamp=ts, key=k, value=v, headers=h)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base)
    return buf


def control(base, pid, epoch, kind, coordinator_epoch, ts):
    """A control batch (attributes: transactional + control) holding one
    end-transaction marker: key (version 0, type), value (version 0,
    coordinator epoch). kafka-python's builder writes the record; the
    attributes are then set and the CRC-32C recomputed."""
    key = struct.pack(">hh", 0, kind)
    value = struct.pack(">hi", 0, coordinator_epoch)
    buf = batch(0, base, [(ts, key, value, [])], pid, epoch, -1, True)
    attrs = struct.unpack_from(">h", buf, 21)[0] | 0x20
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return buf


def read_all(data):
    """Decodes a segment with kafka-python's reader."""
    out, batches, pos = [], [], 0
    while pos < len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        raw = bytes(data[pos:pos + size])
        rb = DefaultRecordBatch(raw)
        assert rb.validate_crc(), "crc at %d" % pos
        batches.append({
            "position": pos, "size": size, "base_offset": rb.base_offset,
            "last_offset": rb.base_offset + rb.last_offset_delta,
            "count": struct.unpack_from(">i", raw, 57)[0],
            "compression": CODECS[rb.compression_type],
            "max_timestamp": rb.max_timestamp,
            "is_transactional": rb.is_transactional,
            "is_control": rb.is_control_batch,
            "producer_id": rb.producer_id, "producer_epoch": rb.producer_epoch,
            "base_sequence": rb.base_sequence,
        })
        for r in rb:
            out.append({
                "offset": r.offset, "timestamp": r.timestamp,
                "key": b64(r.key), "value": b64(r.value),
                "headers": [[k, b64(v)] for k, v in r.headers],
                "batch_base_offset": rb.base_offset,
                "control": rb.is_control_batch,
                "producer_id": rb.producer_id,
            })
        pos += size
    return batches, out


def write(name, description, segment, extra=None):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "00000000000000000000.log"), "wb") as f:
        f.write(segment)
    batches, records = read_all(segment)
    doc = {
        "description": description,
        "generator": "scripts/kafka-python/make_fixtures.py with kafka-python 3.0.12",
        "segment_file": "00000000000000000000.log",
        "bytes": len(segment),
        "batches": batches,
        "records": records,
    }
    doc.update(extra or {})
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def mixed():
    seg, off = bytearray(), 0
    for rnd in range(2):
        for codec in [0, 1, 2, 3, 4]:
            recs = []
            for i in range(3 + codec):
                n = off + i
                key = None if n % 4 == 0 else b"key-%d" % n
                value = None if n % 7 == 3 else (b"%s value %d " % (CODECS[codec].encode(), n)) * (1 + n % 5)
                headers = [("h%d" % n, b"v" * (n % 3))] if n % 2 else []
                if n % 5 == 0:
                    headers.append(("null", None))
                recs.append((TS + n * 11 - (n % 3) * 7, key, value, headers))
            seg += batch(codec, off, recs)
            off += len(recs)
    write("mixed-codecs", "batches of all five codecs interleaved, twice", seg)


def transactional():
    seg, off = bytearray(), 0

    def add(buf, n):
        nonlocal off
        seg.extend(buf)
        off += n

    plain = [(TS + i, b"plain-%d" % i, b"plain value %d" % i, []) for i in range(3)]
    add(batch(0, off, plain), 3)                                          # 0-2 plain
    add(batch(3, off, [(TS + 10, b"c1", b"committed 1 " * 20, []), (TS + 11, b"c2", b"committed 2 " * 20, [])],
              pid=1000, epoch=2, seq=0, txn=True), 2)                     # 3-4 pid 1000
    add(batch(1, off, [(TS + 12, b"a1", b"aborted 1 " * 20, [("h", b"x")]), (TS + 13, b"a2", None, [])],
              pid=2000, epoch=5, seq=0, txn=True), 2)                     # 5-6 pid 2000
    add(batch(0, off, [(TS + 14, b"i1", b"idempotent 1", [])], pid=3000, epoch=0, seq=0), 1)  # 7
    add(batch(4, off, [(TS + 15, b"c3", b"committed 3 " * 20, [])], pid=1000, epoch=2, seq=2, txn=True), 1)  # 8
    add(control(off, 1000, 2, 1, 7, TS + 16), 1)                          # 9 COMMIT 1000
    add(batch(2, off, [(TS + 17, b"a3", b"aborted 3 " * 20, [])], pid=2000, epoch=5, seq=2, txn=True), 1)  # 10
    add(control(off, 2000, 5, 0, 7, TS + 18), 1)                          # 11 ABORT 2000
    add(batch(0, off, [(TS + 19, b"after", b"after both", [])]), 1)       # 12 plain
    write("transactional",
          "plain, idempotent and transactional batches: producer 1000's transaction "
          "(offsets 3, 4, 8) committed at 9, producer 2000's (5, 6, 10) aborted at 11",
          seg,
          {"markers": [
              {"offset": 9, "type": "COMMIT", "producer_id": 1000, "coordinator_epoch": 7},
              {"offset": 11, "type": "ABORT", "producer_id": 2000, "coordinator_epoch": 7}],
           "aborted_offsets": [5, 6, 10]})


def decode_kafkalite_written():
    base = os.path.join(ROOT, "kafkalite-written")
    if not os.path.isdir(base):
        print("no", base, "- skipped", file=sys.stderr)
        return
    for codec in sorted(os.listdir(base)):
        seg_path = os.path.join(base, codec, "00000000000000000000.log")
        with open(seg_path, "rb") as f:
            data = f.read()
        batches, records = read_all(data)
        assert all(b["compression"] == codec for b in batches), codec
        with open(os.path.join(base, codec, "decoded-by-kafka-python.json"), "w") as f:
            json.dump({"decoder": "kafka-python 3.0.12", "batches": batches, "records": records}, f, indent=1)
            f.write("\n")
        print(codec, len(batches), "batches", len(records), "records decoded by kafka-python")


mixed()
transactional()
decode_kafkalite_written()
