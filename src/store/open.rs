//! Opening a store: the directory and its lock, what a crash or an outside
//! deletion left behind, the topics of `topics.meta`, and the background
//! thread.

use super::background::{background, Shutdown};
use super::{Inner, Store};
use crate::config::StoreOptions;
use crate::error::{Corruption, Error, Result};
use crate::group::{GroupCoordinator, OffsetStore};
use crate::io::{exists, fsync_dir, FileSystem};
use crate::log::Notifier;
use crate::topic::{self, partition_dir, validate_topic_name, Topic, TopicMeta};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::log::files::{DELETED as DELETED_SUFFIX, LOCK as LOCK_FILE};

impl Store {
    /// Opens the store in `dir`, creating the directory if needed, taking its
    /// lock, and opening (recovering where needed) every partition log.
    ///
    /// # Errors
    /// [`Error::Locked`] when another handle or process has the store open;
    /// [`Error::Corrupt`] for a damaged metadata file or log; I/O errors.
    pub fn open(dir: impl AsRef<Path>, mut options: StoreOptions) -> Result<Store> {
        let root = dir.as_ref().to_owned();
        if options.max_open_segments == 0 {
            return Err(Error::InvalidConfig {
                key: "kafkalite.max.open.segments",
                reason: "must be positive",
            });
        }
        options.open_cache = crate::log::SegmentCache::new(options.max_open_segments);
        let fs = &*options.file_system;
        if !exists(fs, &root)? {
            fs.create_dir_all(&root)
                .map_err(|e| Error::io("create directory", &root, e))?;
            fsync_dir(fs, crate::io::parent(&root))?;
        }
        let lock = crate::io::lock_exclusive(fs, &root.join(LOCK_FILE))?;
        remove_deleted_leftovers(fs, &root)?;
        let store = Self::assemble(root, options, Some(lock))?;
        let inner = &store.inner;
        let weak = Arc::downgrade(inner);
        let shutdown = Arc::clone(&inner.shutdown);
        let interval = inner.options.flush_check_interval;
        let handle = std::thread::Builder::new()
            .name("kafkalite-store".into())
            .spawn(move || background(weak, &shutdown, interval))
            .map_err(|e| Error::io("spawn background thread", &inner.root, e))?;
        *inner.background.lock() = Some(handle);
        Ok(store)
    }

    /// Opens a store for reading only, while another process (or handle)
    /// may hold it open for writing: takes no lock, writes nothing, starts no
    /// thread. Reads and consumers catch up with the writer's appends as they
    /// go (tailing); committed offsets are those the writer committed.
    /// Everything that would write fails with [`Error::ReadOnly`].
    ///
    /// # Errors
    /// [`Error::Corrupt`] for a damaged metadata file; I/O errors (also when
    /// `dir` is not a store).
    pub fn open_read_only(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let root = dir.as_ref().to_owned();
        if !exists(&*options.file_system, &root.join(crate::group::OFFSETS_DIR))? {
            return Err(Error::io(
                "open store",
                &root,
                std::io::Error::new(std::io::ErrorKind::NotFound, "not a kafkalite store"),
            ));
        }
        Self::assemble(root, options, None)
    }

    fn assemble(root: PathBuf, options: StoreOptions, lock: Option<File>) -> Result<Store> {
        let read_only = lock.is_none();
        let meta = topic::read_meta(&*options.file_system, &root)?;
        if !read_only {
            remove_stray_partitions(&*options.file_system, &root, &meta)?;
        }
        let notifier = Arc::new(Notifier::new());
        let mut topics = BTreeMap::new();
        for (name, m) in &meta {
            // Every listed partition was created before the metadata that
            // lists it was written: a missing one was deleted from outside,
            // and re-creating it empty would hide the loss.
            for p in 0..m.partitions {
                let dir = partition_dir(&root, name, p);
                if !exists(&*options.file_system, &dir)? {
                    let what = "partition directory listed in topics.meta";
                    return Err(Error::corrupt(dir, 0, Corruption::Missing { what }));
                }
            }
        }
        for (name, m) in meta {
            let t = Topic::open(&root, &name, m.partitions, m.config, &options, read_only)?;
            t.set_listener(&notifier);
            topics.insert(name, Arc::new(t));
        }
        let offsets = OffsetStore::open(&root, &options, read_only)?;
        Ok(Store {
            inner: Arc::new(Inner {
                root,
                options,
                topics: RwLock::new(topics),
                meta: Mutex::new(()),
                offsets,
                groups: GroupCoordinator::new(Arc::clone(&notifier)),
                notifier,
                closed: AtomicBool::new(false),
                shutdown: Arc::new(Shutdown::default()),
                background: Mutex::new(None),
                read_only,
                lock: Mutex::new(lock),
            }),
        })
    }
}

/// Removes `dir` and everything in it, if it exists, and fsyncs its parent.
pub(super) fn remove_dir_if_exists(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    match fs.remove_dir_all(dir) {
        Ok(()) => fsync_dir(fs, crate::io::parent(dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove directory", dir, e)),
    }
}

/// Removes partition directories that `topics.meta` does not list: made by
/// a `create_topic` or `add_partitions` that crashed before its metadata
/// write (which is what acknowledges them), or left by a deletion after it.
/// Only names of the form `<valid topic name>-<partition>` are touched.
fn remove_stray_partitions(
    fs: &dyn FileSystem,
    root: &Path,
    meta: &BTreeMap<String, TopicMeta>,
) -> Result<()> {
    let entries = fs
        .read_dir(root)
        .map_err(|e| Error::io("list directory", root, e))?;
    for path in entries {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some((topic, p)) = name.rsplit_once('-') else {
            continue;
        };
        let Ok(partition) = p.parse::<u32>() else {
            continue;
        };
        if name == crate::group::OFFSETS_DIR
            || partition.to_string() != p
            || validate_topic_name(topic).is_err()
            || meta.get(topic).is_some_and(|m| partition < m.partitions)
            || !fs
                .metadata(&path)
                .map_err(|e| Error::io("stat", &path, e))?
                .is_dir()
        {
            continue;
        }
        crate::event!(
            "removing {}: a partition directory not in the topic metadata",
            path.display()
        );
        remove_dir_if_exists(fs, &path)?;
    }
    Ok(())
}

/// Removes directories a topic deletion renamed but did not finish removing.
fn remove_deleted_leftovers(fs: &dyn FileSystem, root: &Path) -> Result<()> {
    let entries = fs
        .read_dir(root)
        .map_err(|e| Error::io("list directory", root, e))?;
    for path in entries {
        // The name first: only a candidate is worth a stat.
        let deleted = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(DELETED_SUFFIX));
        if deleted
            && fs
                .metadata(&path)
                .map_err(|e| Error::io("stat", &path, e))?
                .is_dir()
        {
            remove_dir_if_exists(fs, &path)?;
        }
    }
    Ok(())
}
