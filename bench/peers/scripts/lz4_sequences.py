#!/usr/bin/env python3
"""Count the kinds of LZ4 sequences in the lz4 batches of a kafkalite (or
Kafka) segment: how many have 15 or more literals, a match of 19 or more
bytes (the ones past a token's 4-bit length), a match offset under 8, 16 or
32, or a match overlapping what it writes; with histograms of match and
literal lengths. This is what told which of the decoder's paths the
bench's records take.

    python3 lz4_sequences.py SEGMENT.log [BLOCKS]

BLOCKS (default 50): how many compressed blocks to read from the start.
Reads Kafka's frame as kafkalite writes it (no dictionary; a content size
and block checksums are skipped when flagged).
"""
import collections
import struct
import sys

path = sys.argv[1]
max_blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 50
data = open(path, "rb").read()


def extra(block, i, n):
    """A length's continuation bytes from `i`, added to `n`."""
    while True:
        b = block[i]
        i += 1
        n += b
        if b != 255:
            return n, i


counts = collections.Counter()
matches = collections.Counter()
literals_hist = collections.Counter()
blocks = 0
pos = 0
while pos + 12 <= len(data) and blocks < max_blocks:
    length = struct.unpack(">i", data[pos + 8 : pos + 12])[0]
    attributes = struct.unpack(">h", data[pos + 21 : pos + 23])[0]
    body = data[pos + 61 : pos + 12 + length]
    pos += 12 + length
    if attributes & 7 != 3:
        continue  # not lz4
    if body[:4] != b"\x04\x22\x4d\x18":
        sys.exit("not an lz4 frame")
    flg = body[4]
    p = 6 + (8 if flg & 0x08 else 0) + 1
    while True:
        word = struct.unpack("<I", body[p : p + 4])[0]
        p += 4
        if word == 0:
            break
        stored, size = word >> 31, word & 0x7FFFFFFF
        block = body[p : p + size]
        p += size + (4 if flg & 0x10 else 0)
        if stored:
            continue
        blocks += 1
        i = 0
        while i < len(block):
            token = block[i]
            i += 1
            lits = token >> 4
            if lits == 15:
                lits, i = extra(block, i, 15)
            literals_hist[min(lits, 40) // 4 * 4] += 1
            i += lits
            if i >= len(block):
                break  # the last sequence: literals alone
            offset = block[i] | block[i + 1] << 8
            i += 2
            match = token & 15
            if match == 15:
                match, i = extra(block, i, 15)
            match += 4
            counts["sequences"] += 1
            counts["literals >= 15"] += lits >= 15
            counts["match >= 19"] += match >= 19
            counts["offset < 8"] += offset < 8
            counts["offset < 16"] += offset < 16
            counts["offset < 32"] += offset < 32
            counts["overlapping"] += offset < match
            matches[min(match, 80) // 8 * 8] += 1

print(f"{blocks} blocks: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
print("match lengths (from, count):", sorted(matches.items()))
print("literal runs (from, count):", sorted(literals_hist.items()))
