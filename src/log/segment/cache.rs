//! The open-segment cache: how many segments of one store may hold open
//! files and maps at once (`kafkalite.max.open.segments`), with
//! second-chance (clock) eviction.
//!
//! A segment's files live in its [`Slot`]; the cache lists slots, not
//! segments, and an evicted slot drops its descriptors and maps while bytes
//! already handed to readers keep their own mapping alive. Each store has
//! its own cache ([`SegmentCache`], carried by every
//! [`LogConfig`](crate::LogConfig) the store builds); a log opened on its
//! own gets one of its own, of the default size.

use super::Files;
use crate::io::FsHandle;
use parking_lot::{Mutex, RwLock};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// How many segments may be open at once by default. A sealed one holds one
/// descriptor (its `.log`) and up to three maps, an active one three
/// descriptors and three maps.
pub(crate) const OPEN_SEGMENTS_DEFAULT: usize = 128;

/// The evictable part of a segment, shared with the open-segment cache.
pub(super) struct Slot {
    pub(super) files: RwLock<Option<Arc<Files>>>,
    /// Serialises opening the files.
    pub(super) opening: Mutex<()>,
    /// Used since the cache hand last passed (second chance).
    pub(super) referenced: AtomicBool,
    /// Never evicted (the active segment of a read-only handle, or one
    /// whose eviction sync failed).
    pub(super) pinned: AtomicBool,
    /// Listed in the cache.
    cached: AtomicBool,
    /// For the fdatasync before an active segment is evicted.
    fs: FsHandle,
    log_path: PathBuf,
    /// Appends written to the `.log`, and how many of them an fdatasync
    /// covered: an evicted segment first syncs what it has not.
    pub(super) written: AtomicU64,
    pub(super) synced: AtomicU64,
    /// An fdatasync at eviction (or of a rolled segment) failed (errno):
    /// reported by the next sync, never retried, and the segment is no
    /// longer evicted.
    pub(super) sync_error: Mutex<Option<i32>>,
}

impl Slot {
    pub(super) fn new(fs: FsHandle, log_path: PathBuf, files: Option<Files>, pinned: bool) -> Slot {
        Slot {
            files: RwLock::new(files.map(Arc::new)),
            opening: Mutex::new(()),
            referenced: AtomicBool::new(true),
            pinned: AtomicBool::new(pinned),
            cached: AtomicBool::new(false),
            fs,
            log_path,
            written: AtomicU64::new(0),
            synced: AtomicU64::new(0),
            sync_error: Mutex::new(None),
        }
    }

    /// Evicts the files if nobody else holds them: unsynced appends are
    /// fdatasynced first and writable indexes trimmed to their entries (what
    /// a reopen reads back). Returns false (files kept) when they are in
    /// use, or the sync or trim failed.
    fn evict(&self) -> bool {
        let _opening = self.opening.lock();
        let mut slot = self.files.write();
        let Some(files) = slot.take() else {
            return true;
        };
        let mut files = match Arc::try_unwrap(files) {
            Ok(f) => f,
            Err(shared) => {
                *slot = Some(shared);
                return false;
            }
        };
        let written = self.written.load(Ordering::Acquire);
        if written != self.synced.load(Ordering::Acquire) {
            if let Err(e) = self.fs.sync_data(&files.file, &self.log_path) {
                *self.sync_error.lock() = Some(e.raw_os_error().unwrap_or(libc::EIO));
                self.pinned.store(true, Ordering::Release);
                *slot = Some(Arc::new(files));
                return false;
            }
            self.synced.fetch_max(written, Ordering::AcqRel);
        }
        let trimmed = files
            .offset_index
            .get_mut()
            .file
            .close_writable()
            .and_then(|()| files.time_index.get_mut().file.close_writable());
        if trimmed.is_err() {
            *slot = Some(Arc::new(files));
            return false;
        }
        true
    }
}

/// A store's cache of opened segments (a clock over their slots). Cloning
/// shares it.
#[derive(Clone)]
pub(crate) struct SegmentCache {
    inner: Arc<Inner>,
}

struct Inner {
    limit: AtomicUsize,
    clock: Mutex<Clock>,
}

#[derive(Default)]
struct Clock {
    slots: Vec<Weak<Slot>>,
    hand: usize,
}

impl SegmentCache {
    /// A cache holding at most `limit` open segments (at least 1).
    pub(crate) fn new(limit: usize) -> SegmentCache {
        SegmentCache {
            inner: Arc::new(Inner {
                limit: AtomicUsize::new(limit.max(1)),
                clock: Mutex::new(Clock::default()),
            }),
        }
    }

    /// The most segments it keeps open.
    pub(crate) fn limit(&self) -> usize {
        self.inner.limit.load(Ordering::Acquire)
    }

    /// How many segments it lists now (open, or in use past the bound).
    #[cfg(test)]
    pub(crate) fn listed(&self) -> usize {
        let c = self.inner.clock.lock();
        c.slots.iter().filter(|s| s.strong_count() > 0).count()
    }

    /// Lists an opened, unpinned slot, evicting others beyond the bound.
    pub(super) fn register(&self, slot: &Arc<Slot>) {
        if slot.pinned.load(Ordering::Acquire) || slot.cached.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut c = self.inner.clock.lock();
        c.slots.push(Arc::downgrade(slot));
        let limit = self.limit();
        // Slots in use are passed over; after two rounds without finding a
        // victim the cache stays over its bound until the next register.
        let mut looked = 0;
        while c.slots.len() > limit && looked < 2 * c.slots.len() + 2 {
            looked += 1;
            if c.hand >= c.slots.len() {
                c.hand = 0;
            }
            let hand = c.hand;
            let Some(s) = c.slots.get(hand).and_then(Weak::upgrade) else {
                c.slots.swap_remove(hand);
                continue;
            };
            if s.pinned.load(Ordering::Acquire) {
                s.cached.store(false, Ordering::Release);
                c.slots.swap_remove(hand);
                continue;
            }
            if s.referenced.swap(false, Ordering::AcqRel) {
                c.hand += 1;
                continue;
            }
            if !s.evict() {
                // In use (or its sync failed: pinned, dropped next round).
                c.hand += 1;
                continue;
            }
            s.cached.store(false, Ordering::Release);
            c.slots.swap_remove(hand);
        }
    }
}

impl Default for SegmentCache {
    /// A cache of its own, of [`OPEN_SEGMENTS_DEFAULT`] segments.
    fn default() -> Self {
        SegmentCache::new(OPEN_SEGMENTS_DEFAULT)
    }
}

impl std::fmt::Debug for SegmentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentCache")
            .field("limit", &self.limit())
            .finish_non_exhaustive()
    }
}

impl PartialEq for SegmentCache {
    /// Configurations compare by setting: two caches of one size are alike.
    fn eq(&self, other: &Self) -> bool {
        self.limit() == other.limit()
    }
}

impl Eq for SegmentCache {}

#[cfg(test)]
mod tests {
    use super::SegmentCache;
    use crate::log::config::LogConfig;
    use crate::log::segment::Segment;

    fn open_files(segs: &[Segment]) -> usize {
        segs.iter()
            .filter(|s| s.slot.files.read().is_some())
            .count()
    }

    /// A cache holds at most its limit of open segments, and each store's
    /// cache is its own: filling one evicts nothing from another.
    #[test]
    fn each_cache_holds_its_bound_and_no_other_cache_s_segments() {
        let d = tempfile::tempdir().unwrap();
        let make = |cache: &SegmentCache, dir: &str| {
            let dir = d.path().join(dir);
            std::fs::create_dir_all(&dir).unwrap();
            let config = LogConfig {
                open_cache: cache.clone(),
                ..LogConfig::default()
            };
            (0..6)
                .map(|i| {
                    let seg = Segment::create(&dir, i * 100, &config, 4096).unwrap();
                    seg.unpin();
                    seg
                })
                .collect::<Vec<_>>()
        };
        let first = SegmentCache::new(2);
        let a = make(&first, "a");
        assert_eq!(first.limit(), 2);
        assert!(first.listed() <= 2, "{} listed", first.listed());
        assert!(open_files(&a) <= 2, "{} open", open_files(&a));
        let kept = open_files(&a);

        let second = SegmentCache::new(3);
        let b = make(&second, "b");
        assert!(open_files(&b) <= 3, "{} open", open_files(&b));
        assert_eq!(open_files(&a), kept, "the other store's cache lost nothing");

        // An evicted segment reopens its files on use, within the bound.
        for seg in &a {
            assert_eq!(seg.file_len().unwrap(), 0);
            assert!(open_files(&a) <= 2);
        }
    }
}
