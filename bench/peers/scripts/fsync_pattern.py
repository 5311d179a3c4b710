#!/usr/bin/env python3
"""Time N writes of B bytes, each followed by fdatasync, into a new file:
either appending (every write extends the file) or over zeros written
ahead of the writes (1 MiB at a time, as kafkalite's durable appends do).

    python3 fsync_pattern.py append|zeroahead B N [DIR]

Prints the mean microseconds a write. Measures the file system, not
kafkalite: on ext4 an fdatasync after a write that extends the file also
commits the new size to the journal.
"""
import os
import sys
import time

mode, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
directory = sys.argv[4] if len(sys.argv) > 4 else "."
chunk = 1 << 20
path = os.path.join(directory, "fsync_pattern.tmp")
if os.path.exists(path):
    os.remove(path)
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
data = os.urandom(size)
zeros = bytes(chunk)
pos = zeroed = 0
start = time.perf_counter()
for _ in range(count):
    if mode == "zeroahead" and pos + size > zeroed:
        ahead = min(chunk, max(pos + size, 65536))
        ahead = (pos + size + ahead) // 4096 * 4096 - (pos + size)
        os.pwritev(fd, [data, zeros[:ahead]], pos)
        zeroed = pos + size + ahead
    else:
        os.pwrite(fd, data, pos)
    pos += size
    os.fdatasync(fd)
elapsed = time.perf_counter() - start
os.close(fd)
os.remove(path)
print(f"{mode} B={size}: {elapsed / count * 1e6:.0f} us a write")
