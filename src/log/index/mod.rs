//! Kafka's sparse segment indexes: the entry layouts and lookups over an
//! [`IndexFile`] (`file` owns the file itself: mapping, reservation,
//! trimming).
//!
//! `.index` entries are 8 bytes: relative offset u32, file position u32.
//! `.timeindex` entries are 12 bytes: timestamp i64, relative offset u32.
//! Both big-endian.

mod file;

pub(crate) use file::IndexFile;

fn u32_at(e: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = e.get(at..at + 4) {
        b.copy_from_slice(s);
    }
    u32::from_be_bytes(b)
}

fn i64_at(e: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    if let Some(s) = e.get(at..at + 8) {
        b.copy_from_slice(s);
    }
    i64::from_be_bytes(b)
}

/// `.index`: maps offsets to file positions.
pub(crate) struct OffsetIndex {
    pub(crate) file: IndexFile,
    base_offset: i64,
}

/// One offset-index entry, with the offset made absolute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetPosition {
    pub(crate) offset: i64,
    pub(crate) position: u32,
}

impl OffsetIndex {
    pub(crate) const ENTRY: usize = 8;

    pub(crate) fn new(file: IndexFile, base_offset: i64) -> Self {
        OffsetIndex { file, base_offset }
    }

    fn decode(&self, e: &[u8]) -> OffsetPosition {
        OffsetPosition {
            offset: self.base_offset + i64::from(u32_at(e, 0)),
            position: u32_at(e, 4),
        }
    }

    /// The last entry whose offset is ≤ `target`, or (base, 0); and the
    /// entry after it (the first whose offset is > `target`), if any.
    pub(crate) fn lookup(&self, target: i64) -> (OffsetPosition, Option<OffsetPosition>) {
        let base = self.base_offset;
        let found = self
            .file
            .last_where(|e| base + i64::from(u32_at(e, 0)) <= target);
        let at = found.and_then(|i| self.file.entry(i)).map_or(
            OffsetPosition {
                offset: base,
                position: 0,
            },
            |e| self.decode(e),
        );
        let next = found.map_or(0, |i| i + 1);
        (at, self.file.entry(next).map(|e| self.decode(e)))
    }

    pub(crate) fn last(&self) -> Option<OffsetPosition> {
        self.file.last().map(|e| self.decode(e))
    }

    pub(crate) fn append(&mut self, offset: i64, position: u32) -> bool {
        let rel = (offset - self.base_offset) as u32;
        let mut e = [0u8; 8];
        e[..4].copy_from_slice(&rel.to_be_bytes());
        e[4..].copy_from_slice(&position.to_be_bytes());
        self.file.push(&e)
    }

    /// Kafka's checks plus the ones that catch a zero-filled tail: entries
    /// strictly increase in offset and position and point inside the log.
    pub(crate) fn sanity_check(&self, log_size: u64) -> bool {
        let mut prev: Option<OffsetPosition> = None;
        for i in 0..self.file.len() {
            let Some(e) = self.file.entry(i).map(|e| self.decode(e)) else {
                return false;
            };
            if u64::from(e.position) >= log_size {
                return false;
            }
            if let Some(p) = prev {
                if e.offset <= p.offset || e.position <= p.position {
                    return false;
                }
            }
            prev = Some(e);
        }
        true
    }
}

/// `.timeindex`: maps timestamps to offsets.
pub(crate) struct TimeIndex {
    pub(crate) file: IndexFile,
    base_offset: i64,
}

/// One time-index entry, with the offset made absolute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimestampOffset {
    pub(crate) timestamp: i64,
    pub(crate) offset: i64,
}

impl TimeIndex {
    pub(crate) const ENTRY: usize = 12;

    pub(crate) fn new(file: IndexFile, base_offset: i64) -> Self {
        TimeIndex { file, base_offset }
    }

    fn decode(&self, e: &[u8]) -> TimestampOffset {
        TimestampOffset {
            timestamp: i64_at(e, 0),
            offset: self.base_offset + i64::from(u32_at(e, 8)),
        }
    }

    pub(crate) fn last(&self) -> Option<TimestampOffset> {
        self.file.last().map(|e| self.decode(e))
    }

    /// The last entry whose timestamp is ≤ `target`.
    pub(crate) fn lookup(&self, target: i64) -> Option<TimestampOffset> {
        self.file
            .last_where(|e| i64_at(e, 0) <= target)
            .and_then(|i| self.file.entry(i))
            .map(|e| self.decode(e))
    }

    /// Appends (timestamp, offset) when the timestamp is greater than the last
    /// entry's (Kafka's `maybeAppend`). Returns false only when full.
    pub(crate) fn maybe_append(&mut self, timestamp: i64, offset: i64) -> bool {
        if self.last().is_some_and(|l| timestamp <= l.timestamp) {
            return true;
        }
        let rel = (offset - self.base_offset) as u32;
        let mut e = [0u8; 12];
        e[..8].copy_from_slice(&timestamp.to_be_bytes());
        e[8..].copy_from_slice(&rel.to_be_bytes());
        self.file.push(&e)
    }

    /// Timestamps strictly increase and offsets never decrease, which a
    /// zero-filled tail fails.
    pub(crate) fn sanity_check(&self) -> bool {
        let mut prev: Option<TimestampOffset> = None;
        for i in 0..self.file.len() {
            let Some(e) = self.file.entry(i).map(|e| self.decode(e)) else {
                return false;
            };
            if let Some(p) = prev {
                if e.timestamp <= p.timestamp || e.offset < p.offset {
                    return false;
                }
            }
            prev = Some(e);
        }
        true
    }
}
