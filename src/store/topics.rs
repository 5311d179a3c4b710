//! Topic administration: creating, deleting, growing, describing and
//! reconfiguring topics, each change written to `topics.meta` first.

use super::open::remove_dir_if_exists;
use super::Store;
use crate::config::TopicConfig;
use crate::error::{Error, Result};
use crate::io::fsync_dir;
use crate::log::files::DELETED as DELETED_SUFFIX;
use crate::log::PartitionLog;
use crate::topic::{self, partition_dir, validate_topic_name, Topic, TopicMeta};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

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

impl Store {
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
        let parts: Vec<Arc<PartitionLog>> = {
            let mut all = topic.partitions.write();
            topic.count.store(0, Ordering::Release);
            all.drain(..).collect()
        };
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
        {
            let mut all = t.partitions.write();
            all.extend(new);
            t.count.store(all.len() as u32, Ordering::Release);
        }
        Ok(())
    }

    /// Replaces a topic's config. Retention, compaction and
    /// `compression.type` apply at once; the log settings
    /// ([`TopicConfig::log`]: segment, index, batch-size and flush settings)
    /// apply where a partition log is opened: in partitions added later,
    /// and in every partition at the next open of the store.
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
}
