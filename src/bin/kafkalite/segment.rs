//! Reading segment files without a store: batch scans of `.log` files and
//! checks of `.index` / `.timeindex` files against them. Shared by `dump`
//! and `verify`; nothing here writes or locks.

use bytes::Bytes;
use kafkalite::files::{self, FileKind};
use kafkalite::record::{BatchHeader, BatchScan, OffsetOrder};
use std::path::{Path, PathBuf};

/// A batch found by a scan: its file position and header.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    /// Byte position in the `.log`.
    pub position: u64,
    /// The decoded header.
    pub header: BatchHeader,
}

/// The result of scanning a `.log` as recovery does: batch by batch, CRC and
/// offsets, stopping at the first bad batch.
#[derive(Debug, Default)]
pub struct Scan {
    /// The valid batches, in order.
    pub batches: Vec<Found>,
    /// Bytes up to the end of the last valid batch.
    pub valid_size: u64,
    /// The file's size.
    pub size: u64,
    /// The first bad batch: position and what is wrong.
    pub error: Option<(u64, String)>,
    /// The offset after the last valid batch.
    pub next_offset: i64,
    /// The bad "batch" is zeros to the end of the file: what durable
    /// appends write ahead of themselves, which sealing cuts off and
    /// recovery takes as the end.
    pub zero_tail: bool,
}

/// Whether `data` holds only zeros from `pos` to its end.
pub fn zeros_from(data: &[u8], pos: u64) -> bool {
    usize::try_from(pos)
        .ok()
        .and_then(|p| data.get(p..))
        .is_some_and(|rest| rest.iter().all(|&b| b == 0))
}

/// The base offset in a segment file name (`00000000000000000042.log`,
/// `.index`, `.timeindex`), by the library's file protocol.
pub fn base_offset_of(path: &Path) -> Option<i64> {
    let name = path.file_name()?.to_str()?;
    match files::parse_file_name(name)? {
        FileKind::Log(base) | FileKind::Index(base) | FileKind::TimeIndex(base) => Some(base),
        _ => None,
    }
}

/// The `.log` files in `dir` named by a base offset, with it, in offset
/// order.
pub fn log_files(dir: &Path) -> std::io::Result<Vec<(i64, PathBuf)>> {
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let kind = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(files::parse_file_name);
        if let Some(FileKind::Log(base)) = kind {
            logs.push((base, path));
        }
    }
    logs.sort_unstable();
    Ok(logs)
}

/// The file next to `path` with another extension.
pub fn sibling(path: &Path, ext: &str) -> PathBuf {
    path.with_extension(ext)
}

/// Reads a whole file.
pub fn read(path: &Path) -> Result<Bytes, String> {
    std::fs::read(path)
        .map(Bytes::from)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Scans `data` (a `.log` whose first offset is `base`) as recovery does:
/// header, size, CRC, and offsets following one another, stopping at the
/// first bad batch.
pub fn scan(data: &[u8], base: i64) -> Scan {
    let mut walk = BatchScan::new(data, 0).offsets(OffsetOrder::Increasing, base);
    let batches = walk
        .by_ref()
        .map(|b| Found {
            position: b.position,
            header: b.header,
        })
        .collect();
    let error = walk
        .end()
        .and_then(|end| Some((end.position()?, end.error()?.to_string())));
    let zero_tail = error
        .as_ref()
        .is_some_and(|(pos, _)| zeros_from(data, *pos));
    Scan {
        batches,
        valid_size: walk.end_position(),
        size: data.len() as u64,
        error,
        next_offset: walk.next_offset(),
        zero_tail,
    }
}

/// Entries of an index file: the meaningful ones, and how many all-zero
/// entries follow them (the preallocated tail of an index that is open or
/// was not closed cleanly).
pub struct Entries<T> {
    /// The entries before the zero tail.
    pub entries: Vec<T>,
    /// All-zero entries at the end.
    pub zero_tail: usize,
    /// Problems with the file's shape.
    pub problems: Vec<String>,
}

fn split_entries<T>(
    data: &[u8],
    size: usize,
    parse: impl Fn(&[u8]) -> T,
    what: &str,
) -> Entries<T> {
    let mut out = Entries {
        entries: Vec::new(),
        zero_tail: 0,
        problems: Vec::new(),
    };
    if !data.len().is_multiple_of(size) {
        out.problems.push(format!(
            "{what} size {} is not a multiple of {size}",
            data.len()
        ));
    }
    let chunks: Vec<&[u8]> = data.chunks_exact(size).collect();
    let tail_start = chunks
        .iter()
        .position(|c| c.iter().all(|&b| b == 0))
        .unwrap_or(chunks.len());
    for c in &chunks[..tail_start] {
        out.entries.push(parse(c));
    }
    out.zero_tail = chunks.len() - tail_start;
    if let Some(i) = chunks[tail_start..]
        .iter()
        .position(|c| c.iter().any(|&b| b != 0))
    {
        out.problems.push(format!(
            "{what} entry {} follows zero entries",
            tail_start + i
        ));
    }
    out
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(a)
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// `.index` entries: (relative offset, position).
pub fn offset_entries(data: &[u8]) -> Entries<(u32, u32)> {
    split_entries(data, 8, |c| (be_u32(c, 0), be_u32(c, 4)), ".index")
}

/// `.timeindex` entries: (timestamp, relative offset).
pub fn time_entries(data: &[u8]) -> Entries<(i64, u32)> {
    split_entries(data, 12, |c| (be_i64(c, 0), be_u32(c, 8)), ".timeindex")
}

/// The batch holding `offset`, by binary search.
fn batch_holding(batches: &[Found], offset: i64) -> Option<&Found> {
    let i = batches.partition_point(|b| b.header.last_offset() < offset);
    batches.get(i).filter(|b| b.header.base_offset <= offset)
}

/// Checks `.index` entries against the log's batches: each position must be
/// a batch start whose batch holds the entry's offset, both increasing.
pub fn check_offset_index(entries: &[(u32, u32)], base: i64, batches: &[Found]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut prev: Option<(u32, u32)> = None;
    for (i, &(rel, pos)) in entries.iter().enumerate() {
        let offset = base + i64::from(rel);
        if let Some((prel, ppos)) = prev {
            if rel <= prel || pos <= ppos {
                problems.push(format!(
                    ".index entry {i} (offset {offset}, position {pos}) does not increase"
                ));
            }
        }
        prev = Some((rel, pos));
        let i_batch = batches.partition_point(|b| b.position < u64::from(pos));
        match batches.get(i_batch) {
            Some(b) if b.position == u64::from(pos) => {
                if offset < b.header.base_offset || offset > b.header.last_offset() {
                    problems.push(format!(
                        ".index entry {i}: offset {offset} is not in the batch at position {pos} (offsets {}..={})",
                        b.header.base_offset,
                        b.header.last_offset()
                    ));
                }
            }
            _ => problems.push(format!(
                ".index entry {i}: position {pos} (offset {offset}) is not the start of a valid batch"
            )),
        }
    }
    problems
}

/// Checks `.timeindex` entries: timestamps and offsets never decrease, and
/// each names a batch of the log whose max timestamp is the entry's.
pub fn check_time_index(entries: &[(i64, u32)], base: i64, batches: &[Found]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut prev: Option<(i64, u32)> = None;
    for (i, &(ts, rel)) in entries.iter().enumerate() {
        let offset = base + i64::from(rel);
        if let Some((pts, prel)) = prev {
            if ts < pts || rel < prel {
                problems.push(format!(
                    ".timeindex entry {i} (timestamp {ts}, offset {offset}) goes backwards"
                ));
            }
        }
        prev = Some((ts, rel));
        match batch_holding(batches, offset) {
            Some(b) if b.header.max_timestamp == ts => {}
            Some(b) => problems.push(format!(
                ".timeindex entry {i}: timestamp {ts} is not the max timestamp {} of the batch holding offset {offset}",
                b.header.max_timestamp
            )),
            None => problems.push(format!(
                ".timeindex entry {i}: offset {offset} is not in the log"
            )),
        }
    }
    problems
}
