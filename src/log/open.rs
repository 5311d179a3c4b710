//! Opening a partition directory: lock, list segments, recover.
//!
//! Recovery follows Kafka's `LogLoader`. A rolled segment is flushed in the
//! background (as Kafka's scheduler flushes it after the roll), and the
//! recovery point (in the checkpoint) only moves past it once that flush
//! succeeded. After an unclean shutdown the segment holding the recovery
//! point and every later one are scanned batch by batch (CRC, offsets) and
//! their indexes rebuilt. The first one that stops short, with a torn or
//! corrupt batch or with whole batches missing before the next segment's
//! base offset, lost a tail that was never synced: it is cut there and every
//! later segment is deleted (none of them was synced either). Damage that
//! lies below the recovery point is corruption instead, reported with file
//! and position, and nothing is cut; so is a bad sealed batch when there is
//! no trusted checkpoint (a short segment is then kept: compaction leaves
//! those). Indexes are rebuilt whenever they fail their checks, and always
//! for a recovered segment.
//!
//! A sealed segment wholly below the recovery point is not opened here: only
//! its `.log` size and its index files' sizes are checked (a missing or
//! mis-sized index is rebuilt now). Its files open on first use, when the
//! index contents are checked and rebuilt if they fail; damage in its
//! `.log` found then is corruption, as above.

use super::checkpoint::Checkpoint;
use super::config::LogConfig;
use super::segment::Segment;
use crate::error::{Error, Result};
use crate::io::{exists, fsync_dir, FileSystem, OpenMode};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// Kafka's clean-shutdown marker file name.
pub(crate) const CLEAN_SHUTDOWN: &str = ".kafka_cleanshutdown";
const LOCK: &str = ".lock";

pub(crate) struct Loaded {
    /// None for a log of a store (the store's lock covers it).
    pub(crate) lock: Option<File>,
    pub(crate) segments: Vec<Arc<Segment>>,
    pub(crate) log_start: i64,
    pub(crate) log_end: i64,
}

/// Base offsets of the `.log` files in `dir`, sorted. With `tidy`, stray
/// temporary files from interrupted operations are removed, interrupted
/// swaps finished, and index files whose `.log` is gone removed; without it
/// (read-only access) nothing is touched.
pub(crate) fn list_segments(fs: &dyn FileSystem, dir: &Path, tidy: bool) -> Result<Vec<i64>> {
    let mut bases = Vec::new();
    let mut orphans = Vec::new();
    // Index files, checked against the `.log` files once all are listed.
    let mut indexes = Vec::new();
    let entries = fs
        .read_dir(dir)
        .map_err(|e| Error::io("list directory", dir, e))?;
    for path in entries {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.ends_with(".deleted") || name.ends_with(".cleaned") || name.ends_with(".tmp") {
            if tidy {
                orphans.push(path.clone());
            }
            continue;
        }
        let Some((stem, ext)) = name.split_once('.') else {
            continue;
        };
        if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(base) = stem.parse::<i64>() else {
            continue;
        };
        if !tidy {
            if ext == "log" {
                bases.push(base);
            }
            continue;
        }
        if ext == "log.swap" {
            // A compaction committed its cleaned copy but crashed before
            // putting it in place: finish the swap.
            let log = dir.join(super::segment::file_name(base, ".log"));
            super::cleaner::finish_swap(
                fs,
                &path,
                &log,
                &dir.join(super::segment::file_name(base, ".index")),
                &dir.join(super::segment::file_name(base, ".timeindex")),
            )?;
            fsync_dir(fs, dir)?;
            bases.push(base);
            continue;
        }
        match ext {
            "log" => bases.push(base),
            "index" | "timeindex" => indexes.push((base, path.clone())),
            _ => {}
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
    bases.sort_unstable();
    bases.dedup();
    Ok(bases)
}

/// A segment the checkpoint lists but the directory lacks is damage: its
/// records would be skipped silently.
fn check_no_segment_missing(
    dir: &Path,
    checkpoint: Option<&Checkpoint>,
    bases: &[i64],
) -> Result<()> {
    if let Some(base) = checkpoint.and_then(|c| c.missing_segment(bases)) {
        return Err(Error::corrupt(
            dir.join(super::segment::file_name(base, ".log")),
            0,
            Error::InvalidField {
                what: "segment listed in the partition checkpoint is missing",
                value: base,
            },
        ));
    }
    Ok(())
}

pub(crate) fn write_clean_shutdown_marker(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let p = dir.join(CLEAN_SHUTDOWN);
    fs.open(&p, OpenMode::Truncate)
        .and_then(|f| fs.sync_all(&f, &p))
        .map_err(|e| Error::io("create", &p, e))?;
    fsync_dir(fs, dir)
}

pub(crate) fn load(dir: &Path, config: &LogConfig) -> Result<Loaded> {
    let fs = &*config.file_system;
    if !exists(fs, dir)? {
        fs.create_dir_all(dir)
            .map_err(|e| Error::io("create directory", dir, e))?;
        fsync_dir(fs, crate::io::parent(dir))?;
    }
    let lock = if config.store_locked {
        None
    } else {
        Some(crate::io::lock_exclusive(fs, &dir.join(LOCK))?)
    };
    let bases = list_segments(fs, dir, true)?;
    let marker = dir.join(CLEAN_SHUTDOWN);
    let clean = exists(fs, &marker)?;
    let checkpoint = Checkpoint::read_trusted(fs, dir)?;
    check_no_segment_missing(dir, checkpoint.as_ref(), &bases)?;
    let interval = u64::from(config.settings.index_interval_bytes);
    let index_bytes = config.settings.segment_index_bytes;
    let capacity =
        config.settings.segment_bytes as usize + config.settings.max_message_bytes as usize;

    let mut segments = Vec::with_capacity(bases.len().max(1));
    let mut log_end = checkpoint.as_ref().map_or(0, |c| c.log_start_offset.max(0));
    let recovery_point = match (clean, &checkpoint) {
        (true, _) => i64::MAX,
        (false, Some(c)) => c.recovery_point,
        (false, None) => i64::MIN,
    };
    let last = bases.len().saturating_sub(1);
    for (i, &base) in bases.iter().enumerate() {
        let is_last = i == last;
        let next_base = bases.get(i + 1).copied();
        // The segment holding the recovery point and every later one: rolled
        // segments are flushed in the background, so any of them may have
        // lost a tail that was never synced.
        let recovering = !clean && next_base.is_none_or(|n| n > recovery_point);
        if !is_last && !recovering {
            // A sealed segment below the recovery point: its files open on
            // first use, and indexes that fail their checks then are rebuilt
            // then. Missing or mis-sized ones are rebuilt now.
            if let Some(seg) = Segment::open_lazy(dir, base, config, true)? {
                log_end = bases.get(i + 1).copied().unwrap_or(base).max(base);
                segments.push(Arc::new(seg));
                continue;
            }
        }
        let (seg, indexes_ok) = Segment::open(dir, base, config)?;
        let mut must_scan = !indexes_ok || recovering;
        let mut trusted_end = None;
        if !must_scan && is_last {
            match seg.next_offset_from_index() {
                Ok(end) => trusted_end = Some(end),
                // The index leads nowhere: rebuild it from the log. After a
                // clean shutdown any damage the scan finds is corruption.
                Err(_) => must_scan = true,
            }
        }
        if must_scan {
            let outcome = seg.recover(interval, index_bytes, is_last)?;
            // A sealed segment above the recovery point that stops short (a
            // bad batch, or whole batches missing before the next segment's
            // base) lost a tail that was never synced: every later segment
            // was written after it, so none of them was synced either. Cut
            // here and drop them, as Kafka's recovery does. Below the
            // recovery point the same damage is corruption. Without a
            // trusted checkpoint nothing is cut: a short segment may be a
            // compacted one, and a bad batch in a sealed segment is reported.
            let short = next_base.is_some_and(|n| outcome.next_offset < n);
            let cuttable = checkpoint.is_some() && (outcome.error.is_some() || short);
            if !is_last && recovering && cuttable {
                if outcome.next_offset < recovery_point {
                    let (position, reason) = outcome.error.unwrap_or((
                        outcome.valid_size,
                        Error::InvalidField {
                            what: "sealed segment ends before the next segment's base offset",
                            value: outcome.next_offset,
                        },
                    ));
                    return Err(Error::corrupt(seg.log_path(), position, reason));
                }
                crate::event!(
                    "recovery cut sealed segment {} at position {} and dropped {} later segments",
                    seg.log_path().display(),
                    outcome.valid_size,
                    bases.len() - i - 1
                );
                seg.truncate(outcome.valid_size)?;
                for &later in bases.get(i + 1..).unwrap_or_default() {
                    super::segment::remove_files(fs, dir, later)?;
                }
                fsync_dir(fs, dir)?;
                log_end = outcome.next_offset.max(base);
                segments.push(Arc::new(seg));
                break;
            }
            if let Some((position, reason)) = outcome.error {
                // Below the recovery point, or in a sealed segment: corruption.
                if !is_last || outcome.next_offset < recovery_point {
                    return Err(Error::corrupt(seg.log_path(), position, reason));
                }
                crate::event!(
                    "recovery cut {} at position {} ({} bytes of torn tail): {reason}",
                    seg.log_path().display(),
                    outcome.valid_size,
                    seg.size() - outcome.valid_size
                );
                seg.truncate(outcome.valid_size)?;
            }
            log_end = outcome.next_offset;
            if !is_last {
                seg.seal()?;
            }
        } else if let Some(end) = trusted_end {
            log_end = end;
        } else {
            log_end = bases.get(i + 1).copied().unwrap_or(base);
        }
        if log_end < base {
            log_end = base;
        }
        if !is_last {
            seg.unpin();
        }
        segments.push(Arc::new(seg));
    }
    // Records below the recovery point were synced: a log that now ends
    // before it lost acknowledged data (a cut or deleted file).
    if let (Some(c), Some(seg)) = (&checkpoint, segments.last()) {
        if log_end < c.recovery_point {
            return Err(Error::corrupt(
                seg.log_path(),
                seg.size(),
                Error::InvalidField {
                    what: "log end below the checkpoint's recovery point",
                    value: log_end,
                },
            ));
        }
    }
    // A power loss took unsynced records that `delete_records` had already
    // deleted: the log start is durable and never goes back, so the log
    // restarts there (Kafka's LogLoader), leaving the old segments to
    // retention.
    if let (Some(c), Some(seg)) = (&checkpoint, segments.last()) {
        if log_end < c.log_start_offset {
            seg.seal()?;
            seg.unpin();
            log_end = c.log_start_offset;
            let fresh = Segment::create(dir, log_end, config, capacity)?;
            segments.push(Arc::new(fresh));
            fsync_dir(fs, dir)?;
        }
    }
    match segments.last() {
        Some(seg) => {
            seg.make_active(index_bytes, capacity)?;
            // Recovered bytes may only be in the page cache: make them durable
            // so the recovery point can move to the log end.
            if !clean {
                seg.sync()?;
            }
        }
        None => {
            let seg = Segment::create(dir, log_end, config, capacity)?;
            segments.push(Arc::new(seg));
            fsync_dir(fs, dir)?;
        }
    }
    let first_base = segments.first().map_or(0, |s| s.base_offset());
    let log_start = checkpoint
        .as_ref()
        .map_or(first_base, |c| c.log_start_offset)
        .max(first_base)
        .min(log_end);
    if clean {
        fs.remove_file(&marker)
            .map_err(|e| Error::io("remove", &marker, e))?;
        fsync_dir(fs, dir)?;
    }
    Checkpoint {
        recovery_point: log_end,
        log_start_offset: log_start,
        segments: Some(segments.iter().map(|s| s.base_offset()).collect()),
    }
    .write(fs, dir)?;
    Ok(Loaded {
        lock,
        segments,
        log_start,
        log_end,
    })
}

/// Opens a partition directory for reading only, while another process may
/// be writing it: no lock, no recovery writes, no file created or removed.
/// Every segment's end is found by scanning (the writer's active index is
/// preallocated and cannot be trusted); untrusted indexes are rebuilt in
/// memory. Returns the segments and the log start and end offsets.
pub(crate) fn load_read_only(
    dir: &Path,
    config: &LogConfig,
) -> Result<(Vec<Arc<Segment>>, i64, i64, super::segment::IndexCursor)> {
    let fs = &*config.file_system;
    // Listed before the checkpoint is read: a writer's retention rewrites
    // the checkpoint before it deletes, so a segment listed there but not
    // here is damage, never a race.
    let bases = list_segments(fs, dir, false)?;
    let checkpoint = Checkpoint::read_trusted(fs, dir)?;
    check_no_segment_missing(dir, checkpoint.as_ref(), &bases)?;
    let interval = u64::from(config.settings.index_interval_bytes);
    let mut segments = Vec::with_capacity(bases.len());
    let mut log_end = 0;
    let mut cursor = super::segment::IndexCursor::default();
    let last = bases.len().saturating_sub(1);
    for (i, &base) in bases.iter().enumerate() {
        if i != last {
            // Opened on first use; untrusted indexes are rebuilt in memory then.
            if let Some(seg) = Segment::open_lazy(dir, base, config, false)? {
                log_end = bases.get(i + 1).copied().unwrap_or(base);
                segments.push(Arc::new(seg));
                continue;
            }
        }
        let (seg, indexes_ok) = Segment::open_with(dir, base, config, false)?;
        if i == last || !indexes_ok {
            cursor = super::segment::IndexCursor::default();
            let outcome = seg.scan_all_read_only(interval, &mut cursor, i == last)?;
            log_end = outcome.next_offset.max(base);
        } else {
            log_end = bases.get(i + 1).copied().unwrap_or(base);
        }
        if i != last {
            seg.unpin();
        }
        segments.push(Arc::new(seg));
    }
    if segments.is_empty() {
        return Err(Error::InvalidConfig {
            key: "dir",
            reason: "no segments: not a partition directory, or not created yet",
        });
    }
    let first_base = segments.first().map_or(0, |s| s.base_offset());
    let log_start = checkpoint
        .as_ref()
        .map_or(first_base, |c| c.log_start_offset)
        .max(first_base)
        .min(log_end);
    Ok((segments, log_start, log_end, cursor))
}
