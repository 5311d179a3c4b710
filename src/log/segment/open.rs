//! Creating and opening segments, and opening a lazily opened segment's
//! files on first use (checking, and where needed rebuilding, its
//! indexes).

use super::{check_log_size, Files, Open, Opened, Segment, UNKNOWN_TS};
use crate::error::{Corruption, Error, Result};
use crate::io::{FsHandle, OpenMode};
use crate::log::config::LogConfig;
use crate::log::files::SegmentPaths;
use crate::log::index::{IndexFile, OffsetIndex, TimeIndex};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Whether an index file exists with a whole number of entries (the checks
/// a lazy open makes without reading it).
fn index_plausible(fs: &FsHandle, path: &Path, entry: usize) -> bool {
    fs.metadata(path)
        .is_ok_and(|m| m.len() % entry as u64 == 0 && m.len() <= u64::from(u32::MAX))
}

impl Segment {
    /// Creates a new, empty, active segment. The caller fsyncs the directory.
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        map_capacity: usize,
    ) -> Result<Segment> {
        let paths = SegmentPaths::new(dir, base_offset);
        let index_bytes = config.settings.segment_index_bytes;
        let fs = &config.file_system;
        let file = fs
            .open(&paths.log, OpenMode::CreateNew)
            .map_err(|e| Error::io("create segment", &paths.log, e))?;
        let offset_index = OffsetIndex::new(
            IndexFile::create(fs, &paths.index, OffsetIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let time_index = TimeIndex::new(
            IndexFile::create(fs, &paths.time_index, TimeIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let files = Files::new(file, offset_index, time_index);
        let seg = Segment::with_files(base_offset, paths, config, (true, false), 0, Some(files));
        seg.remap(&*seg.files()?, map_capacity)?;
        seg.active_capacity
            .store(map_capacity as u64, Ordering::Release);
        seg.cache.register(&seg.slot);
        Ok(seg)
    }

    /// Opens the existing segment at `base_offset` in `dir` as `mode` says.
    pub(crate) fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        mode: Open,
    ) -> Result<Opened> {
        let paths = SegmentPaths::new(dir, base_offset);
        let fs = &config.file_system;
        let writable = match mode {
            Open::Eager | Open::Rebuilt => true,
            Open::ReadOnly => false,
            Open::Lazy { writable } => {
                if index_plausible(fs, &paths.index, OffsetIndex::ENTRY)
                    && index_plausible(fs, &paths.time_index, TimeIndex::ENTRY)
                {
                    let size = fs
                        .metadata(&paths.log)
                        .map_err(|e| Error::io("stat segment", &paths.log, e))?
                        .len();
                    check_log_size(&paths.log, size)?;
                    let seg = Segment::with_files(
                        base_offset,
                        paths,
                        config,
                        (writable, false),
                        size,
                        None,
                    );
                    seg.max_timestamp.store(UNKNOWN_TS, Ordering::Relaxed);
                    return Ok(Opened {
                        segment: seg,
                        indexes_ok: true,
                        deferred: true,
                    });
                }
                // Index files missing or mis-sized: opened now, so the
                // caller rebuilds them.
                writable
            }
        };
        let (files, size, indexes_ok) = Self::open_files(fs, &paths, base_offset, writable)?;
        let seg = Segment::with_files(
            base_offset,
            paths,
            config,
            (writable, true),
            size,
            Some(files),
        );
        seg.remap(&*seg.files()?, size as usize)?;
        seg.load_max_timestamp(&*seg.files()?);
        if mode == Open::Rebuilt {
            seg.rebuild_sealed()?;
        }
        Ok(Opened {
            segment: seg,
            indexes_ok,
            deferred: false,
        })
    }

    /// Opens the `.log` and both indexes; returns them, the `.log` size and
    /// whether the indexes passed their checks (untrusted ones come back
    /// empty and writable, or in memory when not `writable`).
    fn open_files(
        fs: &FsHandle,
        paths: &SegmentPaths,
        base_offset: i64,
        writable: bool,
    ) -> Result<(Files, u64, bool)> {
        let mode = if writable {
            OpenMode::ReadWrite
        } else {
            OpenMode::Read
        };
        let file = fs
            .open(&paths.log, mode)
            .map_err(|e| Error::io("open segment", &paths.log, e))?;
        let size = fs
            .len(&file, &paths.log)
            .map_err(|e| Error::io("stat segment", &paths.log, e))?;
        check_log_size(&paths.log, size)?;
        let mut indexes_ok = true;
        let mut open_index =
            |path: &Path, entry: usize| match IndexFile::open(fs, path, entry, writable) {
                Ok(f) => Ok(f),
                // Out of descriptors or the like: not a reason to rebuild.
                Err(e)
                    if matches!(&e, Error::Io { source, .. }
                        if source.kind() != std::io::ErrorKind::NotFound) =>
                {
                    Err(e)
                }
                Err(_) => {
                    indexes_ok = false;
                    if writable {
                        IndexFile::create(fs, path, entry, 0)
                    } else {
                        Ok(IndexFile::memory(fs, path, entry))
                    }
                }
            };
        let offset_index =
            OffsetIndex::new(open_index(&paths.index, OffsetIndex::ENTRY)?, base_offset);
        let time_index = TimeIndex::new(
            open_index(&paths.time_index, TimeIndex::ENTRY)?,
            base_offset,
        );
        if indexes_ok {
            indexes_ok = offset_index.sanity_check(size) && time_index.sanity_check();
        }
        Ok((Files::new(file, offset_index, time_index), size, indexes_ok))
    }

    pub(super) fn load_max_timestamp(&self, f: &Files) {
        match f.time_index.read().last() {
            Some(last) => {
                self.offset_of_max_timestamp
                    .store(last.offset, Ordering::Relaxed);
                self.max_timestamp.store(last.timestamp, Ordering::Release);
            }
            None => {
                if self.max_timestamp.load(Ordering::Acquire) == UNKNOWN_TS {
                    self.max_timestamp.store(-1, Ordering::Release);
                }
            }
        }
    }

    /// The segment's files, opening them (and listing them in the cache) if
    /// they are not open.
    pub(super) fn files(&self) -> Result<Arc<Files>> {
        self.slot.referenced.store(true, Ordering::Relaxed);
        if let Some(f) = self.slot.files.read().as_ref() {
            return Ok(Arc::clone(f));
        }
        self.load()
    }

    #[cold]
    fn load(&self) -> Result<Arc<Files>> {
        let files = {
            let _opening = self.slot.opening.lock();
            if let Some(f) = self.slot.files.read().as_ref() {
                return Ok(Arc::clone(f));
            }
            let (files, size, indexes_ok) =
                Self::open_files(&self.fs, &self.paths, self.base_offset, self.writable)?;
            // An evicted active segment may still end in the zeros its
            // durable appends wrote ahead (as far as `zeroed_end`, or
            // unknown if their write failed part-way).
            let zeroed = self.zeroed_end.load(Ordering::Relaxed);
            let zeros = match zeroed {
                0 => false,
                u64::MAX => size > self.size(),
                _ => size == zeroed,
            };
            if size != self.size() && !zeros {
                return Err(Error::corrupt(
                    &self.paths.log,
                    size,
                    Corruption::SizeChanged {
                        expected: self.size(),
                        found: size,
                    },
                ));
            }
            let files = Arc::new(files);
            let active = self.active_capacity.load(Ordering::Acquire);
            if active > 0 && self.writable {
                // An evicted active segment: writable again, as it was. Its
                // timestamps are kept in memory (the time index is sparse).
                if indexes_ok {
                    for index in [
                        &mut files.offset_index.write().file,
                        &mut files.time_index.write().file,
                    ] {
                        index.make_writable(self.index_bytes)?;
                    }
                } else {
                    self.recover_in(&files, false, true)?
                        .into_result(&self.paths.log)?;
                }
                self.remap(&files, (active as usize).max(size as usize))?;
                *self.slot.files.write() = Some(Arc::clone(&files));
                drop(_opening);
                self.cache.register(&self.slot);
                return Ok(files);
            }
            self.remap(&files, size as usize)?;
            if indexes_ok {
                self.load_max_timestamp(&files);
            } else {
                // Rebuild the untrusted indexes from the log (on disk when
                // writable, in memory otherwise). Sealed: damage is corruption.
                self.recover_in(&files, !self.writable, false)?
                    .into_result(&self.paths.log)?;
                if self.writable {
                    self.seal_in(&files)?;
                }
            }
            files.release_index_files();
            *self.slot.files.write() = Some(Arc::clone(&files));
            files
        };
        self.cache.register(&self.slot);
        Ok(files)
    }
}
