//! The file protocol of a partition directory (Kafka's `LogFileUtils`): the
//! one owner of file names, suffixes and the crash-safe ways files come and
//! go. Nothing else in the crate (nor the CLI) spells a suffix or parses a
//! segment name.
//!
//! ```text
//! 00000000000000004096.log          a segment: record batches, back to back
//! 00000000000000004096.index        its offset index
//! 00000000000000004096.timeindex    its time index
//! 00000000000000004096.log.cleaned  compaction's copy, not yet committed
//! 00000000000000004096.log.swap     compaction's committed copy, to rename over .log
//! <any>.deleted                     being deleted (renamed first, then unlinked)
//! <any>.tmp                         an atomic write in progress
//! partition.checkpoint              recovery point and log start (CRC-guarded)
//! .kafka_cleanshutdown              present only while closed cleanly
//! .lock                             held while a writer has the directory open
//! ```
//!
//! Base offsets are written as 20 zero-padded decimal digits, so names sort
//! as offsets do.

use crate::error::{Error, Result};
use crate::io::{fsync_dir, with_suffix, FileSystem, OpenMode};
use std::path::{Path, PathBuf};

/// A segment's record batches.
pub const LOG: &str = ".log";
/// A segment's offset index.
pub const INDEX: &str = ".index";
/// A segment's time index.
pub const TIME_INDEX: &str = ".timeindex";
/// Appended to a `.log` name: compaction's cleaned copy, written and
/// fsynced but not committed (removed at open).
pub const CLEANED: &str = ".cleaned";
/// Appended to a `.log` name: compaction's committed copy (an open finishes
/// the swap).
pub const SWAP: &str = ".swap";
/// Appended to any name: a file (or a topic's directory) being deleted.
pub const DELETED: &str = ".deleted";
/// Appended to any name: an atomic write in progress (removed at open).
pub const TMP: &str = ".tmp";
/// Kafka's clean-shutdown marker.
pub const CLEAN_SHUTDOWN: &str = ".kafka_cleanshutdown";
/// The lock file of a directory with a writer.
pub const LOCK: &str = ".lock";
/// The partition checkpoint (recovery point, log start, segment list).
pub const CHECKPOINT: &str = "partition.checkpoint";

/// What a file in a partition directory is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// `<base>.log`.
    Log(i64),
    /// `<base>.index`.
    Index(i64),
    /// `<base>.timeindex`.
    TimeIndex(i64),
    /// `<base>.log.swap`: a compaction's committed copy.
    Swap(i64),
    /// A `.deleted`, `.cleaned` or `.tmp` leftover of an interrupted
    /// operation.
    Leftover,
}

/// Kafka's file name for a base offset: 20 digits, zero-padded, then
/// `suffix` (one of [`LOG`], [`INDEX`], [`TIME_INDEX`]).
pub fn file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

/// What the file called `name` is; `None` for names of no kind above
/// (the checkpoint, the markers, anything foreign).
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    if [DELETED, CLEANED, TMP].iter().any(|s| name.ends_with(s)) {
        return Some(FileKind::Leftover);
    }
    let (stem, ext) = name.split_once('.')?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let base = stem.parse::<i64>().ok()?;
    match ext {
        "log" => Some(FileKind::Log(base)),
        "index" => Some(FileKind::Index(base)),
        "timeindex" => Some(FileKind::TimeIndex(base)),
        "log.swap" => Some(FileKind::Swap(base)),
        _ => None,
    }
}

/// The three files of the segment at `base_offset` in `dir`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SegmentPaths {
    pub(crate) log: PathBuf,
    pub(crate) index: PathBuf,
    pub(crate) time_index: PathBuf,
}

impl SegmentPaths {
    pub(crate) fn new(dir: &Path, base_offset: i64) -> SegmentPaths {
        SegmentPaths {
            log: dir.join(file_name(base_offset, LOG)),
            index: dir.join(file_name(base_offset, INDEX)),
            time_index: dir.join(file_name(base_offset, TIME_INDEX)),
        }
    }

    /// The three paths, `.log` first.
    pub(crate) fn all(&self) -> [&Path; 3] {
        [&self.log, &self.index, &self.time_index]
    }
}

/// Removes whichever of the segment's three files exist (no rename first:
/// for files that were never part of the log, or that recovery drops).
/// Tries all three; returns the first failure.
pub(crate) fn remove_segment_files(
    fs: &dyn FileSystem,
    dir: &Path,
    base_offset: i64,
) -> Result<()> {
    let mut first_error = Ok(());
    for path in SegmentPaths::new(dir, base_offset).all() {
        if let Err(e) = remove_if_exists(fs, path, "remove segment file") {
            if first_error.is_ok() {
                first_error = Err(e);
            }
        }
    }
    first_error
}

fn remove_if_exists(fs: &dyn FileSystem, path: &Path, op: &'static str) -> Result<()> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(op, path, e)),
    }
}

/// Deletes a segment's files crash-safely: rename each to `.deleted`, fsync
/// the directory, unlink, fsync again. A crash in between leaves only
/// `.deleted` files, which open removes. Open maps and descriptors stay
/// valid, so readers holding the segment's bytes are unaffected.
pub(crate) fn delete_segment(fs: &dyn FileSystem, paths: &SegmentPaths) -> Result<()> {
    let dir = crate::io::parent(&paths.log);
    let mut renamed = Vec::new();
    for p in paths.all() {
        let gone = with_suffix(p, DELETED);
        match fs.rename(p, &gone) {
            Ok(()) => renamed.push(gone),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("rename", p, e)),
        }
    }
    fsync_dir(fs, dir)?;
    for p in renamed {
        fs.remove_file(&p).map_err(|e| Error::io("delete", &p, e))?;
    }
    fsync_dir(fs, dir)
}

/// The cleaned copy and the swap file of compaction for a segment's `.log`.
pub(crate) fn compaction_paths(log: &Path) -> (PathBuf, PathBuf) {
    (with_suffix(log, CLEANED), with_suffix(log, SWAP))
}

/// Completes a swap: the old indexes removed (they describe the old file),
/// then the swap file renamed over the `.log`. Compaction runs this after
/// its commit point; open runs it for a swap a crash interrupted.
pub(crate) fn finish_swap(fs: &dyn FileSystem, swap: &Path, paths: &SegmentPaths) -> Result<()> {
    for p in [&paths.index, &paths.time_index] {
        remove_if_exists(fs, p, "delete")?;
    }
    fsync_dir(fs, crate::io::parent(&paths.log))?;
    fs.rename(swap, &paths.log)
        .map_err(|e| Error::io("rename", swap, e))
}

/// Base offsets of the `.log` files in `dir`, sorted. With `tidy`, leftovers
/// of interrupted operations are removed, interrupted swaps finished, and
/// index files whose `.log` is gone removed; without it (read-only access)
/// nothing is touched.
pub(crate) fn list_segments(fs: &dyn FileSystem, dir: &Path, tidy: bool) -> Result<Vec<i64>> {
    let mut bases = Vec::new();
    let mut orphans = Vec::new();
    // Index files, checked against the `.log` files once all are listed.
    let mut indexes = Vec::new();
    let entries = fs
        .read_dir(dir)
        .map_err(|e| Error::io("list directory", dir, e))?;
    for path in entries {
        let Some(kind) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_file_name)
        else {
            continue;
        };
        match kind {
            FileKind::Log(base) => bases.push(base),
            _ if !tidy => {}
            FileKind::Leftover => orphans.push(path),
            FileKind::Index(base) | FileKind::TimeIndex(base) => indexes.push((base, path)),
            FileKind::Swap(base) => {
                // A compaction committed its cleaned copy but crashed before
                // putting it in place: finish the swap.
                finish_swap(fs, &path, &SegmentPaths::new(dir, base))?;
                fsync_dir(fs, dir)?;
                bases.push(base);
            }
        }
    }
    bases.sort_unstable();
    bases.dedup();
    for (base, path) in indexes {
        if bases.binary_search(&base).is_err() {
            orphans.push(path);
        }
    }
    for p in &orphans {
        fs.remove_file(p)
            .map_err(|e| Error::io("remove leftover", p, e))?;
    }
    if !orphans.is_empty() {
        fsync_dir(fs, dir)?;
    }
    Ok(bases)
}

/// Creates the clean-shutdown marker, durably.
pub(crate) fn write_clean_shutdown_marker(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let p = dir.join(CLEAN_SHUTDOWN);
    fs.open(&p, OpenMode::Truncate)
        .and_then(|f| fs.sync_all(&f, &p))
        .map_err(|e| Error::io("create", &p, e))?;
    fsync_dir(fs, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::OsFileSystem;

    #[test]
    fn names_parse_back_to_their_kind_and_base_offset() {
        for base in [0, 1, 4096, i64::MAX] {
            assert_eq!(
                parse_file_name(&file_name(base, LOG)),
                Some(FileKind::Log(base))
            );
            assert_eq!(
                parse_file_name(&file_name(base, INDEX)),
                Some(FileKind::Index(base))
            );
            assert_eq!(
                parse_file_name(&file_name(base, TIME_INDEX)),
                Some(FileKind::TimeIndex(base))
            );
            let swap = format!("{}{SWAP}", file_name(base, LOG));
            assert_eq!(parse_file_name(&swap), Some(FileKind::Swap(base)));
        }
        assert_eq!(file_name(42, LOG), "00000000000000000042.log");
        for leftover in ["00000000000000000000.log.deleted", "x.cleaned", "y.tmp"] {
            assert_eq!(parse_file_name(leftover), Some(FileKind::Leftover));
        }
        for foreign in [
            CHECKPOINT,
            CLEAN_SHUTDOWN,
            LOCK,
            "0000000000000000042.log",
            "0000000000000000004a.log",
            "00000000000000000042.txt",
            "99999999999999999999.log",
        ] {
            assert_eq!(parse_file_name(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn listing_tidies_leftovers_and_finishes_an_interrupted_swap() {
        let d = tempfile::tempdir().unwrap();
        let fs = OsFileSystem;
        let write = |name: &str, body: &[u8]| std::fs::write(d.path().join(name), body).unwrap();
        write(&file_name(0, LOG), b"old");
        write(&file_name(0, INDEX), b"");
        write(&format!("{}{SWAP}", file_name(0, LOG)), b"new");
        write(&format!("{}{CLEANED}", file_name(7, LOG)), b"");
        write(&format!("{}{DELETED}", file_name(3, LOG)), b"");
        write(&file_name(9, TIME_INDEX), b"");
        write(&file_name(12, LOG), b"");
        write(CHECKPOINT, b"kept");

        assert_eq!(list_segments(&fs, d.path(), false).unwrap(), vec![0, 12]);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 8, "untouched");

        assert_eq!(list_segments(&fs, d.path(), true).unwrap(), vec![0, 12]);
        let mut left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let expected = [
            "00000000000000000000.log",
            "00000000000000000012.log",
            CHECKPOINT,
        ];
        assert_eq!(left, expected);
        assert_eq!(
            std::fs::read(d.path().join(file_name(0, LOG))).unwrap(),
            b"new"
        );
    }

    #[test]
    fn a_deleted_segment_leaves_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let paths = SegmentPaths::new(d.path(), 5);
        for p in [&paths.log, &paths.index] {
            std::fs::write(p, b"x").unwrap();
        }
        delete_segment(&OsFileSystem, &paths).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
