//! `Store`: a directory of topics, owned by one process at a time.

mod groups;
mod retention;

pub use groups::{GroupDescription, GroupPartitionOffset, ResetTo};
pub use retention::{PartitionCleaning, RetentionReport};

use crate::config::{StoreOptions, TopicConfig};
use crate::error::{Corruption, Error, Result};
use crate::group::{GroupCoordinator, OffsetStore};
use crate::io::{exists, fsync_dir, FileSystem};
use crate::log::{AppendInfo, Durability, LogRead, Notifier, PartitionLog};
use crate::record::Record;
use crate::topic::{self, partition_dir, validate_topic_name, Topic, TopicMeta};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const LOCK_FILE: &str = ".lock";
const DELETED_SUFFIX: &str = ".deleted";
/// How often partition checkpoints are written (Kafka's
/// `log.flush.offset.checkpoint.interval.ms` default).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

/// One partition of a topic, as [`Store::describe_topic`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PartitionDescription {
    /// The partition number.
    pub partition: u32,
    /// First readable offset.
    pub log_start_offset: i64,
    /// Next offset to be written.
    pub log_end_offset: i64,
    /// Readers see offsets below this.
    pub high_watermark: i64,
    /// Bytes of all segments.
    pub size: u64,
    /// Number of segments.
    pub segments: usize,
}

/// A topic, as [`Store::describe_topic`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TopicDescription {
    /// The topic name.
    pub name: String,
    /// Its configuration.
    pub config: TopicConfig,
    /// Its partitions, in order.
    pub partitions: Vec<PartitionDescription>,
}

pub(crate) struct Inner {
    root: PathBuf,
    options: StoreOptions,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Serialises topic creation, deletion and alteration (and so the
    /// metadata file).
    meta: Mutex<()>,
    offsets: OffsetStore,
    groups: GroupCoordinator,
    notifier: Arc<Notifier>,
    closed: AtomicBool,
    shutdown: Arc<Shutdown>,
    background: Mutex<Option<JoinHandle<()>>>,
    read_only: bool,
    /// The store's directory lock: held until a successful close (or the
    /// drop of the last handle, producers' and consumers' included).
    lock: Mutex<Option<File>>,
}

/// A kafkalite store: a directory of topics and their partition logs.
///
/// `Store` is a cheap handle (`Clone`), `Send` and `Sync`: share it across
/// threads. The store shuts down cleanly when [`close`](Store::close) is
/// called or the last handle (including producers') is dropped.
///
/// ```
/// use kafkalite::{Durability, Record, Store, StoreOptions, TopicConfig};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), StoreOptions::default())?;
/// store.create_topic("events", 3, TopicConfig::default())?;
/// let info = store.append("events", 1, &[Record::new("hello")], Durability::Written)?;
/// let read = store.fetch("events", 1, info.base_offset, 1 << 20)?;
/// let first = read.records().next().unwrap()?;
/// assert_eq!(first.value.as_deref(), Some(&b"hello"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.inner.root)
            .field("topics", &self.inner.topics.read().len())
            .finish()
    }
}

impl Store {
    /// Opens the store in `dir`, creating the directory if needed, taking its
    /// lock, and opening (recovering where needed) every partition log.
    ///
    /// # Errors
    /// [`Error::Locked`] when another handle or process has the store open;
    /// [`Error::Corrupt`] for a damaged metadata file or log; I/O errors.
    pub fn open(dir: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        let root = dir.as_ref().to_owned();
        if options.max_open_segments == 0 {
            return Err(Error::InvalidConfig {
                key: "kafkalite.max.open.segments",
                reason: "must be positive",
            });
        }
        let mut options = options;
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

    /// Whether the store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.inner.read_only {
            Err(Error::ReadOnly)
        } else {
            Ok(())
        }
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.inner.root
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    pub(crate) fn topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.check_open()?;
        if let Some(t) = self.inner.topics.read().get(name) {
            return Ok(Arc::clone(t));
        }
        if self.inner.options.auto_create_topics {
            validate_topic_name(name)?;
            let o = &self.inner.options;
            match self.create_topic(name, o.default_partitions, o.default_topic.clone()) {
                Ok(()) | Err(Error::TopicExists { .. }) => {}
                Err(e) => return Err(e),
            }
            if let Some(t) = self.inner.topics.read().get(name) {
                return Ok(Arc::clone(t));
            }
        }
        Err(Error::UnknownTopic {
            topic: name.to_owned(),
        })
    }

    /// A topic that exists, never auto-created: for callers that hold the
    /// metadata lock, which auto-creation takes.
    fn existing_topic(&self, name: &str) -> Result<Arc<Topic>> {
        self.check_open()?;
        self.inner
            .topics
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownTopic {
                topic: name.to_owned(),
            })
    }

    /// The partition count of an existing topic (never auto-created):
    /// `None` when there is no such topic or the store is closed.
    pub(crate) fn existing_partition_count(&self, name: &str) -> Option<u32> {
        self.existing_topic(name).ok().map(|t| t.partition_count())
    }

    fn meta_snapshot(&self) -> BTreeMap<String, TopicMeta> {
        self.inner
            .topics
            .read()
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    TopicMeta {
                        partitions: t.partition_count(),
                        config: t.config.read().clone(),
                    },
                )
            })
            .collect()
    }

    /// Creates a topic with `partitions` partitions.
    ///
    /// # Errors
    /// [`Error::InvalidTopicName`], [`Error::TopicExists`],
    /// [`Error::InvalidConfig`] (also for 0 partitions), I/O errors (nothing
    /// is left behind then).
    pub fn create_topic(&self, name: &str, partitions: u32, config: TopicConfig) -> Result<()> {
        self.check_writable()?;
        validate_topic_name(name)?;
        config.validate()?;
        if partitions == 0 {
            return Err(Error::InvalidConfig {
                key: "num.partitions",
                reason: "a topic needs at least one partition",
            });
        }
        let _g = self.inner.meta.lock();
        self.check_open()?;
        if self.inner.topics.read().contains_key(name) {
            return Err(Error::TopicExists {
                topic: name.to_owned(),
            });
        }
        let root = &self.inner.root;
        let fs = &*self.inner.options.file_system;
        // Offsets of an earlier topic of this name (a crash after its
        // deletion left them) must not apply to the new one.
        self.inner.offsets.delete_topic(name)?;
        // Leftover directories of a topic that is not in the metadata (a
        // crash between creating them and writing the metadata) are stale.
        for p in 0..partitions {
            remove_dir_if_exists(fs, &partition_dir(root, name, p))?;
        }
        let topic = match Topic::open(root, name, partitions, config, &self.inner.options, false) {
            Ok(t) => t,
            Err(e) => {
                // Best effort: the next open removes what is left.
                for p in 0..partitions {
                    let _ = remove_dir_if_exists(fs, &partition_dir(root, name, p));
                }
                return Err(e);
            }
        };
        topic.set_listener(&self.inner.notifier);
        let mut meta = self.meta_snapshot();
        meta.insert(
            name.to_owned(),
            TopicMeta {
                partitions,
                config: topic.config.read().clone(),
            },
        );
        if let Err(e) = topic::write_meta(fs, root, &meta) {
            drop(topic);
            for p in 0..partitions {
                let _ = remove_dir_if_exists(fs, &partition_dir(root, name, p));
            }
            return Err(e);
        }
        self.inner
            .topics
            .write()
            .insert(name.to_owned(), Arc::new(topic));
        Ok(())
    }

    /// Deletes a topic, all its data and every group's committed offsets on
    /// it.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`]; I/O errors (the topic is gone from the
    /// metadata first, and leftover directories are removed at the next open).
    pub fn delete_topic(&self, name: &str) -> Result<()> {
        self.check_writable()?;
        let _g = self.inner.meta.lock();
        let topic = self.existing_topic(name)?;
        let mut meta = self.meta_snapshot();
        meta.remove(name);
        topic::write_meta(&*self.inner.options.file_system, &self.inner.root, &meta)?;
        self.inner.topics.write().remove(name);
        // Kafka drops a deleted topic's committed offsets; a failure here
        // leaves them to the next create_topic of this name, which drops
        // them first.
        let offsets = self.inner.offsets.delete_topic(name);
        let root = &self.inner.root;
        let parts: Vec<Arc<PartitionLog>> = topic.partitions.write().drain(..).collect();
        for (p, log) in parts.into_iter().enumerate() {
            // Refuse further appends through handles others still hold.
            let _ = log.close();
            drop(log);
            let dir = partition_dir(root, name, p as u32);
            let gone = crate::io::with_suffix(&dir, DELETED_SUFFIX);
            let fs = &*self.inner.options.file_system;
            fs.rename(&dir, &gone)
                .map_err(|e| Error::io("rename", &dir, e))?;
            fsync_dir(fs, root)?;
            fs.remove_dir_all(&gone)
                .map_err(|e| Error::io("delete", &gone, e))?;
        }
        fsync_dir(&*self.inner.options.file_system, root)?;
        offsets.map(|_| ())
    }

    /// Topic names, sorted.
    pub fn list_topics(&self) -> Vec<String> {
        self.inner.topics.read().keys().cloned().collect()
    }

    /// A topic's config and per-partition offsets and sizes.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`].
    pub fn describe_topic(&self, name: &str) -> Result<TopicDescription> {
        let t = self.topic(name)?;
        let partitions = t
            .partitions
            .read()
            .iter()
            .enumerate()
            .map(|(p, log)| PartitionDescription {
                partition: p as u32,
                log_start_offset: log.log_start_offset(),
                log_end_offset: log.log_end_offset(),
                high_watermark: log.high_watermark(),
                size: log.size(),
                segments: log.segment_count(),
            })
            .collect();
        let config = t.config.read().clone();
        Ok(TopicDescription {
            name: name.to_owned(),
            config,
            partitions,
        })
    }

    /// Number of partitions of a topic.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`].
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        Ok(self.topic(topic)?.partition_count())
    }

    /// Grows a topic to `total` partitions (partitions are never removed,
    /// as in Kafka).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::InvalidConfig`] when `total` is not
    /// larger than the current count, I/O errors.
    pub fn add_partitions(&self, name: &str, total: u32) -> Result<()> {
        self.check_writable()?;
        let _g = self.inner.meta.lock();
        let t = self.existing_topic(name)?;
        let current = t.partition_count();
        if total <= current {
            return Err(Error::InvalidConfig {
                key: "num.partitions",
                reason: "partitions can only be added",
            });
        }
        let log_config = t.config.read().log_config(&self.inner.options);
        let root = &self.inner.root;
        let fs = &*self.inner.options.file_system;
        let mut new = Vec::new();
        let opened = (current..total).try_for_each(|p| {
            let dir = partition_dir(root, name, p);
            remove_dir_if_exists(fs, &dir)?;
            let log = PartitionLog::open(dir, log_config.clone())?;
            log.set_listener(Arc::clone(&self.inner.notifier));
            new.push(Arc::new(log));
            Ok(())
        });
        let written = opened.and_then(|()| {
            let mut meta = self.meta_snapshot();
            if let Some(m) = meta.get_mut(name) {
                m.partitions = total;
            }
            topic::write_meta(fs, root, &meta)
        });
        if let Err(e) = written {
            // Nothing is left behind (best effort: the next open removes
            // what is left).
            drop(new);
            for p in current..total {
                let _ = remove_dir_if_exists(fs, &partition_dir(root, name, p));
            }
            return Err(e);
        }
        t.partitions.write().extend(new);
        Ok(())
    }

    /// Replaces a topic's config. Retention and flush settings apply at once;
    /// segment and index settings apply to partition logs opened after the
    /// next reopen of the store.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::InvalidConfig`], I/O errors.
    pub fn alter_topic_config(&self, name: &str, config: TopicConfig) -> Result<()> {
        self.check_writable()?;
        config.validate()?;
        let _g = self.inner.meta.lock();
        let t = self.existing_topic(name)?;
        let mut meta = self.meta_snapshot();
        if let Some(m) = meta.get_mut(name) {
            m.config = config.clone();
        }
        topic::write_meta(&*self.inner.options.file_system, &self.inner.root, &meta)?;
        *t.config.write() = config;
        Ok(())
    }

    /// The log of one partition, for direct access.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`].
    pub fn partition(&self, topic: &str, partition: u32) -> Result<Arc<PartitionLog>> {
        self.topic(topic)?.partition(partition)
    }

    /// Appends `records` as one batch (compressed with the topic's
    /// `compression.type`) to an explicit partition.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`], and
    /// [`PartitionLog::append`]'s errors.
    pub fn append(
        &self,
        topic: &str,
        partition: u32,
        records: &[Record],
        durability: Durability,
    ) -> Result<AppendInfo> {
        let t = self.topic(topic)?;
        let compression = t.config.read().compression;
        t.partition(partition)?
            .append_records(records, compression, durability)
    }

    /// Reads whole batches of one partition from `offset` (the low-level
    /// API: the caller keeps its own offsets).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`],
    /// [`Error::OffsetOutOfRange`], [`Error::Corrupt`].
    pub fn fetch(
        &self,
        topic: &str,
        partition: u32,
        offset: i64,
        max_bytes: usize,
    ) -> Result<LogRead> {
        self.partition(topic, partition)?.read(offset, max_bytes)
    }

    /// fsyncs every partition.
    ///
    /// # Errors
    /// The first fsync error (that partition is then poisoned).
    pub fn flush(&self) -> Result<()> {
        for log in self.all_logs() {
            log.flush()?;
        }
        Ok(())
    }

    pub(crate) fn all_logs(&self) -> Vec<Arc<PartitionLog>> {
        self.inner.all_logs()
    }

    pub(crate) fn offsets(&self) -> &OffsetStore {
        &self.inner.offsets
    }

    pub(crate) fn groups(&self) -> &GroupCoordinator {
        &self.inner.groups
    }

    pub(crate) fn notifier(&self) -> &Notifier {
        &self.inner.notifier
    }

    /// Shuts down cleanly: stops the background thread, closes every
    /// partition log (fsync, trimmed indexes, checkpoints, clean-shutdown
    /// markers) and releases the directory's locks, so the store can be
    /// opened again at once, even while producers, consumers or partition
    /// handles made from this one live. Later calls on any handle fail with
    /// [`Error::Closed`] (reads through a partition handle keep working).
    ///
    /// # Errors
    /// The first error closing a log; the others are still closed, and the
    /// next open recovers whatever was not.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

impl Inner {
    fn all_logs(&self) -> Vec<Arc<PartitionLog>> {
        self.topics
            .read()
            .values()
            .flat_map(|t| t.partitions.read().clone())
            .collect()
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Waits for a topic operation in progress (they check `closed`
        // again under this lock), and keeps new ones out.
        let _meta = self.meta.lock();
        *self.shutdown.stop.lock() = true;
        self.shutdown.wake.notify_all();
        if let Some(h) = self.background.lock().take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
        let mut first_err = None;
        self.notifier.notify();
        for log in self.all_logs() {
            if let Err(e) = log.close() {
                first_err.get_or_insert(e);
            }
        }
        if let Err(e) = self.offsets.log().close() {
            first_err.get_or_insert(e);
        }
        match first_err {
            // Every log is closed: the store can be opened again while
            // producers and consumers of this handle live (their calls
            // fail with `Closed`).
            None => {
                self.lock.lock().take();
                Ok(())
            }
            Some(e) => Err(e),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Stops the background thread; kept outside `Inner` so the thread can wait
/// on it without keeping the store alive.
#[derive(Default)]
struct Shutdown {
    stop: Mutex<bool>,
    wake: Condvar,
}

/// The store's background thread: `flush.ms` checks and periodic
/// checkpoints. Holds the store only while working, so dropping the last
/// `Store` handle shuts the store down.
fn background(weak: Weak<Inner>, shutdown: &Shutdown, interval: Duration) {
    let mut last_checkpoint = Instant::now();
    let mut last_retention = Instant::now();
    loop {
        {
            let mut stop = shutdown.stop.lock();
            if !*stop {
                shutdown.wake.wait_for(&mut stop, interval);
            }
            if *stop {
                return;
            }
        }
        let Some(inner) = weak.upgrade() else { return };
        let now = Instant::now();
        let logs = inner.all_logs();
        let checkpoint = now.duration_since(last_checkpoint) >= CHECKPOINT_INTERVAL;
        if checkpoint {
            last_checkpoint = now;
        }
        if now.duration_since(last_retention) >= inner.options.retention_check_interval {
            last_retention = now;
            // Errors surface to the next caller of the affected log.
            let store = Store {
                inner: Arc::clone(&inner),
            };
            let _ = store.apply_retention_at(None, crate::group::now_ms(), false);
        }
        drop(inner);
        for log in logs {
            // Errors poison the log, which reports them to its next caller.
            let _ = log.flush_if_due(now);
            if checkpoint {
                let _ = log.checkpoint();
            }
        }
    }
}

fn remove_dir_if_exists(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
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
