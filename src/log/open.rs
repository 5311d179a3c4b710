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
use super::files::{self, list_segments};
use super::segment::{IndexCursor, Open, Segment};
use crate::error::{Corruption, Error, Result};
use crate::io::{exists, fsync_dir};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

pub(crate) struct Loaded {
    /// None for a log of a store (the store's lock covers it).
    pub(crate) lock: Option<File>,
    pub(crate) segments: Vec<Arc<Segment>>,
    pub(crate) log_start: i64,
    pub(crate) log_end: i64,
    /// Read-only opens: the index cursor of the last segment's scan.
    pub(crate) cursor: IndexCursor,
}

/// A segment the checkpoint lists but the directory lacks is damage: its
/// records would be skipped silently.
fn check_no_segment_missing(
    dir: &Path,
    checkpoint: Option<&Checkpoint>,
    bases: &[i64],
) -> Result<()> {
    if let Some(base) = checkpoint.and_then(|c| c.missing_segment(bases)) {
        let log = dir.join(files::file_name(base, files::LOG));
        let what = "segment listed in the partition checkpoint";
        return Err(Error::corrupt(log, 0, Corruption::Missing { what }));
    }
    Ok(())
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
        Some(crate::io::lock_exclusive(fs, &dir.join(files::LOCK))?)
    };
    let bases = list_segments(fs, dir, true)?;
    let marker = dir.join(files::CLEAN_SHUTDOWN);
    let clean = exists(fs, &marker)?;
    let checkpoint = Checkpoint::read_trusted(fs, dir)?;
    check_no_segment_missing(dir, checkpoint.as_ref(), &bases)?;
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
        // The sealed segment that ends at the recovery point: its durable
        // appends made the recovery point, but the cut of the zeros they
        // wrote ahead, at its roll, may not have reached the disk.
        let at_recovery_point = !clean && !is_last && next_base == Some(recovery_point);
        let opened = if !is_last && !recovering && !at_recovery_point {
            // A sealed segment below the recovery point: its files open on
            // first use, and indexes that fail their checks then are rebuilt
            // then. Missing or mis-sized ones are rebuilt now.
            let opened = Segment::open(dir, base, config, Open::Lazy { writable: true })?;
            if opened.deferred {
                log_end = bases.get(i + 1).copied().unwrap_or(base).max(base);
                segments.push(Arc::new(opened.segment));
                continue;
            }
            opened
        } else {
            Segment::open(dir, base, config, Open::Eager)?
        };
        let (seg, indexes_ok) = (opened.segment, opened.indexes_ok);
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
            let mut outcome = seg.recover(is_last)?;
            // Zeros to the end of the file are what durable appends wrote
            // ahead of themselves (a crash before the segment was sealed,
            // or before its seal reached the disk): the segment ends
            // where they start. Only where a crash may have left them, and
            // never where records the recovery point promises are missing
            // (that stays corruption). Whether batches are missing before
            // the next segment is still checked below.
            let zero_tail = outcome.zero_tail
                && (recovering || at_recovery_point)
                && outcome.next_offset >= recovery_point;
            if zero_tail {
                outcome.error = None;
            }
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
                    let (position, kind) = outcome.error.unwrap_or((
                        outcome.valid_size,
                        Corruption::SegmentEndsEarly {
                            end: outcome.next_offset,
                            next_base: next_base.unwrap_or(outcome.next_offset),
                        },
                    ));
                    return Err(Error::corrupt(seg.log_path(), position, kind));
                }
                crate::event!(
                    "recovery cut sealed segment {} at position {} and dropped {} later segments",
                    seg.log_path().display(),
                    outcome.valid_size,
                    bases.len() - i - 1
                );
                seg.truncate(outcome.valid_size)?;
                for &later in bases.iter().skip(i + 1) {
                    files::remove_segment_files(fs, dir, later)?;
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
            } else if zero_tail {
                cut_zeros(&seg, outcome.valid_size)?;
            }
            log_end = outcome.next_offset;
            if !is_last {
                seg.seal()?;
            }
        } else if let Some(end) = trusted_end {
            log_end = end;
        } else {
            // Not scanned, but its zeros' cut may not have reached the disk.
            if at_recovery_point {
                if let Some(end) = seg.zeros_after_batches()? {
                    cut_zeros(&seg, end)?;
                    seg.seal()?;
                }
            }
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
            let kind = Corruption::BelowRecoveryPoint {
                log_end,
                recovery_point: c.recovery_point,
            };
            return Err(Error::corrupt(seg.log_path(), seg.size(), kind));
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
            seg.make_active(capacity)?;
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
    let log_start = log_start_of(checkpoint.as_ref(), &segments, log_end);
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
        cursor: IndexCursor::default(),
    })
}

/// Opens a partition directory for reading only, while another process may
/// be writing it: no lock, no recovery writes, no file created or removed.
/// Every segment's end is found by scanning (the writer's active index is
/// preallocated and cannot be trusted); untrusted indexes are rebuilt in
/// memory. Returns the segments and the log start and end offsets.
pub(crate) fn load_read_only(dir: &Path, config: &LogConfig) -> Result<Loaded> {
    let fs = &*config.file_system;
    // Listed before the checkpoint is read: a writer's retention rewrites
    // the checkpoint before it deletes, so a segment listed there but not
    // here is damage, never a race.
    let bases = list_settled(fs, dir)?;
    let checkpoint = Checkpoint::read_trusted(fs, dir)?;
    check_no_segment_missing(dir, checkpoint.as_ref(), &bases)?;
    let mut segments = Vec::with_capacity(bases.len());
    let mut log_end = 0;
    let mut cursor = IndexCursor::default();
    let last = bases.len().saturating_sub(1);
    for (i, &base) in bases.iter().enumerate() {
        // Sealed ones open on first use; untrusted indexes are rebuilt in
        // memory then.
        let mode = if i == last {
            Open::ReadOnly
        } else {
            Open::Lazy { writable: false }
        };
        let opened = Segment::open(dir, base, config, mode)?;
        if opened.deferred {
            log_end = bases.get(i + 1).copied().unwrap_or(base);
            segments.push(Arc::new(opened.segment));
            continue;
        }
        let (seg, indexes_ok) = (opened.segment, opened.indexes_ok);
        if i == last || !indexes_ok {
            cursor = IndexCursor::default();
            let outcome = seg.scan_all_read_only(&mut cursor, i == last)?;
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
    let log_start = log_start_of(checkpoint.as_ref(), &segments, log_end);
    Ok(Loaded {
        lock: None,
        segments,
        log_start,
        log_end,
        cursor,
    })
}

/// The segments of a directory another process is writing. A listing
/// taken while the writer rolls may miss a segment created during it yet
/// show one created after it (directory order is not creation order: ext4
/// lists in hash order), and a reader trusting it would skip the missing
/// segment's records. Segments are created in offset order, so each one
/// below the highest a first listing shows existed before a second listing
/// began, and that second listing shows it (unless retention deleted it
/// meanwhile). The second listing, cut at the first one's highest, is the
/// answer; later segments are found by name as the reader follows the
/// writer ([`PartitionLog::refresh`](super::PartitionLog::refresh)).
fn list_settled(fs: &dyn crate::io::FileSystem, dir: &Path) -> Result<Vec<i64>> {
    let mut first = list_segments(fs, dir, false)?;
    loop {
        let Some(&highest) = first.last() else {
            return Ok(first);
        };
        let second = list_segments(fs, dir, false)?;
        let cut: Vec<i64> = second.iter().copied().filter(|&b| b <= highest).collect();
        if !cut.is_empty() {
            return Ok(cut);
        }
        // Retention deleted everything the first listing showed: the store
        // turned over while it was listed. Go again from the newer listing.
        first = second;
    }
}

/// Recovery cuts the zeros durable appends wrote ahead of themselves from
/// `end` on (see `Segment::append`): not damage, nothing lost.
fn cut_zeros(seg: &Segment, end: u64) -> Result<()> {
    crate::event!(
        "recovery cut {} at position {end}: {} bytes of zeros written ahead of appends",
        seg.log_path().display(),
        seg.size() - end
    );
    seg.truncate(end)
}

/// The log start: the checkpoint's, never below the first segment's base
/// nor above the log end.
fn log_start_of(checkpoint: Option<&Checkpoint>, segments: &[Arc<Segment>], log_end: i64) -> i64 {
    let first_base = segments.first().map_or(0, |s| s.base_offset());
    checkpoint
        .map_or(first_base, |c| c.log_start_offset)
        .max(first_base)
        .min(log_end)
}
