//! Topics: names, their partitions' logs, and the store's topic metadata file.
//!
//! `topics.meta` at the store root lists every topic, its partition count
//! and its config, guarded by a CRC-32 and written atomically:
//!
//! ```text
//! kafkalite-topics 1
//! topic orders 8
//! config orders retention.ms=604800000
//! ...
//! crc32 1a2b3c4d
//! ```

use crate::config::{StoreOptions, TopicConfig};
use crate::error::{Corruption, Error, Result};
use crate::io::{read_sealed, write_sealed, FileSystem};
use crate::log::PartitionLog;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub(crate) const META_FILE: &str = "topics.meta";
const META_HEADER: &str = "kafkalite-topics 1";

/// Kafka's internal topics (`Topic.java`): the offset store lives in
/// `__consumer_offsets-0`, so a user topic of that name would replace it.
const INTERNAL_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

/// Checks Kafka's topic name rule: 1–249 characters of `[a-zA-Z0-9._-]`,
/// and not `.` or `..`, so a name can never escape the store directory; and
/// not one of Kafka's internal topics (`__consumer_offsets`,
/// `__transaction_state`), which users cannot create.
///
/// # Errors
/// [`Error::InvalidTopicName`] saying what is wrong.
pub fn validate_topic_name(name: &str) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidTopicName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > 249 {
        return bad("longer than 249 characters");
    }
    if name == "." || name == ".." {
        return bad("'.' and '..' are not allowed");
    }
    if INTERNAL_TOPICS.contains(&name) {
        return bad("reserved for an internal topic");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return bad("only ASCII letters, digits, '.', '_' and '-' are allowed");
    }
    Ok(())
}

/// The directory of one partition: `<root>/<topic>-<partition>`.
pub(crate) fn partition_dir(root: &Path, topic: &str, partition: u32) -> PathBuf {
    root.join(format!("{topic}-{partition}"))
}

/// A topic in an open store.
pub(crate) struct Topic {
    pub(crate) name: String,
    pub(crate) config: RwLock<TopicConfig>,
    pub(crate) partitions: RwLock<Vec<Arc<PartitionLog>>>,
    /// `partitions.len()`, for readers on the send path: a load, where the
    /// lock's read would be a write to a line every sending thread shares.
    /// Set under the `partitions` write lock, after each change to it.
    pub(crate) count: AtomicU32,
}

impl Topic {
    /// Opens (creating if needed) the logs of partitions `0..count`.
    pub(crate) fn open(
        root: &Path,
        name: &str,
        count: u32,
        config: TopicConfig,
        options: &StoreOptions,
        read_only: bool,
    ) -> Result<Topic> {
        let log_config = config.log_config(options);
        let partitions = (0..count)
            .map(|p| {
                let dir = partition_dir(root, name, p);
                if read_only {
                    PartitionLog::open_read_only(dir, log_config.clone()).map(Arc::new)
                } else {
                    PartitionLog::open(dir, log_config.clone()).map(Arc::new)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Topic {
            name: name.to_owned(),
            config: RwLock::new(config),
            count: AtomicU32::new(partitions.len() as u32),
            partitions: RwLock::new(partitions),
        })
    }

    /// Makes every partition notify `n` when data arrives.
    pub(crate) fn set_listener(&self, n: &Arc<crate::log::Notifier>) {
        for log in self.partitions.read().iter() {
            log.set_listener(Arc::clone(n));
        }
    }

    pub(crate) fn partition_count(&self) -> u32 {
        self.count.load(Ordering::Acquire)
    }

    pub(crate) fn partition(&self, p: u32) -> Result<Arc<PartitionLog>> {
        let parts = self.partitions.read();
        parts
            .get(p as usize)
            .cloned()
            .ok_or_else(|| Error::UnknownPartition {
                topic: self.name.clone(),
                partition: p,
                partitions: parts.len() as u32,
            })
    }
}

/// One topic's entry in `topics.meta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TopicMeta {
    pub(crate) partitions: u32,
    pub(crate) config: TopicConfig,
}

/// Writes the metadata of every topic.
/// Writes the metadata of every topic. Every name and config is checked
/// first (as [`read_meta`] checks them again), so nothing written here can
/// add a line or name a path outside the store.
pub(crate) fn write_meta(
    fs: &dyn FileSystem,
    root: &Path,
    topics: &BTreeMap<String, TopicMeta>,
) -> Result<()> {
    let mut body = format!("{META_HEADER}\n");
    let defaults = TopicConfig::default().to_properties();
    for (name, t) in topics {
        validate_topic_name(name)?;
        t.config.validate()?;
        body.push_str(&format!("topic {name} {}\n", t.partitions));
        for (k, v) in t.config.to_properties() {
            if v.chars().any(char::is_control) {
                return Err(Error::InvalidConfig {
                    key: k,
                    reason: "holds a control character",
                });
            }
            if !defaults.contains(&(k, v.clone())) {
                body.push_str(&format!("config {name} {k}={v}\n"));
            }
        }
    }
    write_sealed(fs, &root.join(META_FILE), &body)
}

/// A directory under `root` (other than the offset store's) holding a
/// non-empty `.log` file, if any.
fn partition_dir_with_records(fs: &dyn FileSystem, root: &Path) -> Result<Option<PathBuf>> {
    let list = |dir: &Path| {
        fs.read_dir(dir)
            .map_err(|e| Error::io("list directory", dir, e))
    };
    for dir in list(root)? {
        if dir.file_name() == Some(crate::group::OFFSETS_DIR.as_ref())
            || !fs
                .metadata(&dir)
                .map_err(|e| Error::io("stat", &dir, e))?
                .is_dir()
        {
            continue;
        }
        for f in list(&dir)? {
            if f.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let len = fs.metadata(&f).map_err(|e| Error::io("stat", &f, e))?.len();
            if len > 0 {
                return Ok(Some(dir));
            }
        }
    }
    Ok(None)
}

/// Reads `topics.meta`; an empty map when there is none. A damaged file is
/// an error naming it: topics are never silently forgotten.
pub(crate) fn read_meta(fs: &dyn FileSystem, root: &Path) -> Result<BTreeMap<String, TopicMeta>> {
    let path = root.join(META_FILE);
    let Some(body) = read_sealed(fs, &path, META_HEADER)? else {
        // A crash while the first topic was created can leave empty
        // partition logs without metadata; records without it mean the
        // file was lost.
        if partition_dir_with_records(fs, root)?.is_some() {
            let what = "topic metadata file, while partition logs hold records";
            return Err(Error::corrupt(&path, 0, Corruption::Missing { what }));
        }
        return Ok(BTreeMap::new());
    };
    // Names and values read back are checked as strictly as a user's: a
    // crafted or damaged file must not name a path outside the store, nor
    // hold a config the store would refuse.
    let damaged_by = |position: usize, e| {
        Error::corrupt(&path, position as u64, Corruption::Invalid(Box::new(e)))
    };
    let damaged = |position: usize, what| {
        Error::corrupt(&path, position as u64, Corruption::Malformed { what })
    };
    let mut topics: BTreeMap<String, TopicMeta> = BTreeMap::new();
    let mut position = 0;
    for line in body.split_inclusive('\n') {
        let at = position;
        position += line.len();
        if at == 0 {
            continue; // the header, checked by read_sealed
        }
        let line = line.strip_suffix('\n').unwrap_or(line);
        let mut parts = line.splitn(3, ' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("topic"), Some(name), Some(n)) => {
                validate_topic_name(name).map_err(|e| damaged_by(at, e))?;
                let partitions: u32 = n
                    .parse()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| damaged(at, "topic partition count"))?;
                if topics.contains_key(name) {
                    return Err(damaged(at, "topic listed twice"));
                }
                topics.insert(
                    name.to_owned(),
                    TopicMeta {
                        partitions,
                        config: TopicConfig::default(),
                    },
                );
            }
            (Some("config"), Some(name), Some(kv)) => {
                let t = topics
                    .get_mut(name)
                    .ok_or_else(|| damaged(at, "config for an unlisted topic"))?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| damaged(at, "topic config line"))?;
                t.config.set(k, v).map_err(|e| damaged_by(at, e))?;
            }
            _ => return Err(damaged(at, "topic metadata line")),
        }
    }
    for t in topics.values() {
        t.config.validate().map_err(|e| damaged_by(0, e))?;
    }
    Ok(topics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::OsFileSystem;

    #[test]
    fn kafkas_topic_name_rule_is_enforced() {
        for ok in ["a", "orders", "my.topic_v2-x", &"x".repeat(249)] {
            validate_topic_name(ok).unwrap();
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../etc",
            "a b",
            "naïve",
            &"x".repeat(250),
            "a\0b",
        ] {
            assert!(
                matches!(
                    validate_topic_name(bad),
                    Err(Error::InvalidTopicName { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn metadata_round_trips_and_detects_damage() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_meta(&OsFileSystem, d.path()).unwrap().is_empty());
        let config = TopicConfig {
            retention_bytes: Some(12345),
            ..TopicConfig::default()
        };
        let mut topics = BTreeMap::new();
        topics.insert(
            "orders".to_owned(),
            TopicMeta {
                partitions: 8,
                config,
            },
        );
        topics.insert(
            "b".to_owned(),
            TopicMeta {
                partitions: 1,
                config: TopicConfig::default(),
            },
        );
        write_meta(&OsFileSystem, d.path(), &topics).unwrap();
        assert_eq!(read_meta(&OsFileSystem, d.path()).unwrap(), topics);
        let p = d.path().join(META_FILE);
        let t = std::fs::read_to_string(&p)
            .unwrap()
            .replace("orders 8", "orders 9");
        std::fs::write(&p, t).unwrap();
        assert!(matches!(
            read_meta(&OsFileSystem, d.path()),
            Err(Error::Corrupt { .. })
        ));
    }
}
