//! `Store`: a directory of topics, owned by one process at a time.
//!
//! The store's jobs, one file each: opening (the directory lock, recovery
//! of what a crash left, the background thread's start) in `open`, the
//! background thread in `background`, topic administration in `topics`,
//! the append / fetch facade in `records`, retention in `retention`, and
//! consumer-group administration in `groups`. This file holds the handle,
//! its shared state and closing.

mod background;
mod groups;
mod open;
mod records;
mod retention;
mod topics;

pub use groups::{GroupDescription, GroupPartitionOffset, ResetTo};
pub use retention::{PartitionCleaning, RetentionReport};
pub use topics::{PartitionDescription, TopicDescription};

use crate::config::StoreOptions;
use crate::error::{Error, Result};
use crate::group::{GroupCoordinator, OffsetStore};
use crate::log::{Notifier, PartitionLog};
use crate::topic::{validate_topic_name, Topic};
use background::Shutdown;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

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
