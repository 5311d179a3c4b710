//! Store and topic configuration, with Kafka's setting names and defaults.
//! The settings' text form (`key=value`, `.properties`) is mapped in
//! [`crate::properties`].

use crate::error::{Error, Result};
use crate::io::FsHandle;
use crate::log::{CompactionPolicy, LogConfig, LogSettings, ReadMode};
use crate::properties::value::{check_millis, LONG_MAX, OUTSIDE_LONG};
use crate::record::Compression;
use std::time::Duration;

/// What a topic does with old data (`cleanup.policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum CleanupPolicy {
    /// Delete whole segments by time and size (`delete`).
    #[default]
    Delete,
    /// Keep the latest record per key (`compact`).
    Compact,
    /// Both (`compact,delete`).
    #[cfg_attr(feature = "serde", serde(rename = "compact,delete"))]
    CompactDelete,
}

impl CleanupPolicy {
    /// Kafka's spelling.
    pub fn name(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// Whether segments are deleted by retention.
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }

    /// Whether the topic is compacted.
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }
}

/// A topic's settings. Each field's doc names the Kafka setting and ends
/// with its default. Build with [`TopicConfig::default`] and the fields, or
/// from Kafka-style `key=value` pairs with [`TopicConfig::set`].
///
/// ```
/// use kafkalite::TopicConfig;
/// use std::time::Duration;
/// let mut config = TopicConfig::default();
/// config.retention = Some(Duration::from_secs(3600)); // retention.ms=3600000
/// config.log.segment_bytes = 64 << 20; // segment.bytes=67108864
/// config.set("cleanup.policy", "compact")?;
/// config.validate()?;
/// # Ok::<(), kafkalite::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct TopicConfig {
    /// The settings each partition log of the topic is opened with
    /// (`segment.bytes`, `segment.ms`, `segment.index.bytes`,
    /// `index.interval.bytes`, `max.message.bytes`, `flush.messages`,
    /// `flush.ms`). In JSON their fields sit beside the others. Default:
    /// Kafka's.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub log: LogSettings,
    /// `retention.ms`: delete segments whose newest record is older than
    /// this; `None` keeps data forever (Kafka's −1). Whole milliseconds.
    /// Default: 7 days.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "retention_ms",
            with = "crate::serde_impls::option_duration_ms"
        )
    )]
    pub retention: Option<Duration>,
    /// `retention.bytes` per partition: `None` is unlimited (Kafka's −1).
    /// Default: unlimited.
    pub retention_bytes: Option<u64>,
    /// `cleanup.policy`. Default: delete.
    pub cleanup_policy: CleanupPolicy,
    /// `compression.type` for batches the store encodes itself (the low-level
    /// append path); producers choose their own. Default: none.
    pub compression: Compression,
    /// `delete.retention.ms`: how long tombstones survive compaction.
    /// Whole milliseconds. Default: 1 day.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "delete_retention_ms",
            with = "crate::serde_impls::duration_ms"
        )
    )]
    pub delete_retention: Duration,
    /// `min.cleanable.dirty.ratio`, in percent (0 to 100): compact only
    /// when at least this share of the sealed bytes was written since the
    /// last compaction. Default: 50.
    #[cfg_attr(feature = "serde", serde(alias = "min_cleanable_dirty_ratio_percent"))]
    pub min_dirty_percent: u8,
    /// `kafkalite.retain.for.groups` (not in Kafka): time retention keeps
    /// every segment until all these consumer groups have committed past it,
    /// so unconsumed work is never dropped; `retention.bytes` still caps the
    /// size. Default: none.
    pub retain_for_groups: Vec<String>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        // The compaction settings' defaults are the log's own.
        let compaction = CompactionPolicy::default();
        TopicConfig {
            log: LogSettings::default(),
            retention: Some(Duration::from_secs(7 * 24 * 3600)),
            retention_bytes: None,
            cleanup_policy: CleanupPolicy::Delete,
            compression: Compression::None,
            delete_retention: compaction.delete_retention,
            min_dirty_percent: compaction.min_dirty_percent,
            retain_for_groups: Vec::new(),
        }
    }
}

/// Checks the groups of `kafkalite.retain.for.groups`: each a group id as
/// `validate_group_id` accepts it (not empty, at most 32,767 bytes, no
/// control characters), and, since the setting is a `,`-separated list whose
/// items are trimmed, without `,` or surrounding white space, so the list
/// reads back as it was written.
pub(crate) fn validate_retained_groups(groups: &[String]) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidConfig {
            key: "kafkalite.retain.for.groups",
            reason,
        })
    };
    for g in groups {
        if g.is_empty() {
            return bad("a group id is empty");
        }
        if g.len() > i16::MAX as usize {
            return bad("a group id is longer than 32767 bytes");
        }
        if g.chars().any(char::is_control) {
            return bad("a group id holds a control character");
        }
        if g.contains(',') {
            return bad("a group id holds the list separator ','");
        }
        if g.trim() != g {
            return bad("a group id starts or ends with white space");
        }
    }
    Ok(())
}

impl TopicConfig {
    /// Checks the values are usable: the [`log`](Self::log) settings as
    /// [`LogSettings::validate`] checks them, then the topic's own.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the setting.
    /// Everything it accepts reads back unchanged from its text form
    /// ([`to_properties`](Self::to_properties), as `topics.meta` stores it):
    /// durations are whole milliseconds and, like every number, within
    /// Kafka's range for the setting (`LONG` or `INT`).
    pub fn validate(&self) -> Result<()> {
        self.log.validate()?;
        if let Some(d) = self.retention {
            check_millis("retention.ms", d)?;
        }
        check_millis("delete.retention.ms", self.delete_retention)?;
        if self.retention_bytes.is_some_and(|b| b > LONG_MAX) {
            return Err(Error::InvalidConfig {
                key: "retention.bytes",
                reason: OUTSIDE_LONG,
            });
        }
        if self.min_dirty_percent > 100 {
            return Err(Error::InvalidConfig {
                key: "min.cleanable.dirty.ratio",
                reason: "expected a number between 0 and 1 (0 to 100 percent)",
            });
        }
        validate_retained_groups(&self.retain_for_groups)
    }

    /// The config of each partition log of this topic in a store with
    /// `options`: the topic's log settings with the store's read mode and
    /// file system.
    pub(crate) fn log_config(&self, options: &StoreOptions) -> LogConfig {
        LogConfig {
            settings: self.log.clone(),
            ..options.log_defaults()
        }
    }
}

/// Options of a [`Store`](crate::Store). Each field's doc ends with its default.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct StoreOptions {
    /// `auto.create.topics.enable`: producing to an unknown topic creates it
    /// with [`default_topic`](Self::default_topic) and
    /// [`default_partitions`](Self::default_partitions). Default: false.
    pub auto_create_topics: bool,
    /// `num.partitions` for auto-created topics. Default: 1.
    pub default_partitions: u32,
    /// The config auto-created topics get. Default: [`TopicConfig::default`].
    pub default_topic: TopicConfig,
    /// `log.retention.check.interval.ms`: how often the background thread
    /// applies retention. Default: 5 minutes.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "retention_check_interval_ms",
            with = "crate::serde_impls::duration_ms"
        )
    )]
    pub retention_check_interval: Duration,
    /// How often the background thread runs `flush.ms` checks and writes
    /// partition checkpoints (`log.flush.offset.checkpoint.interval.ms`).
    /// Default: 1 second.
    #[cfg_attr(
        feature = "serde",
        serde(
            rename = "flush_check_interval_ms",
            with = "crate::serde_impls::duration_ms"
        )
    )]
    pub flush_check_interval: Duration,
    /// How partition logs read segment bytes. Default: memory maps.
    pub read_mode: ReadMode,
    /// `kafkalite.max.open.segments` (not in Kafka): how many of the store's
    /// segments may have their files open at once (each store has its own
    /// cache of open segments). An open sealed segment holds one descriptor and up to three
    /// maps, an active one three of each; an idle partition holds none, so a
    /// store of any number of partitions fits a descriptor limit above
    /// about three times this. Default: 128.
    pub max_open_segments: usize,
    /// Every partition log's [`LogConfig::writeback_bytes`] (not a Kafka
    /// setting): disk writes started in the background every this many
    /// appended bytes; 0 off. Default: 1 MiB.
    pub writeback_bytes: u64,
    /// The file system every file operation goes through (tests swap in a
    /// simulation). Default: the operating system's.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub file_system: FsHandle,
    /// The store's open-segment cache, made by `Store::open` from
    /// `max_open_segments` and shared by all its partition logs.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) open_cache: crate::log::SegmentCache,
}

impl StoreOptions {
    /// Kafka's default log settings with this store's store-wide ones (read
    /// mode, file system): what every partition log of the store starts from.
    pub(crate) fn log_defaults(&self) -> LogConfig {
        LogConfig {
            read_mode: self.read_mode,
            file_system: self.file_system.clone(),
            writeback_bytes: self.writeback_bytes,
            open_cache: self.open_cache.clone(),
            store_locked: true,
            ..LogConfig::default()
        }
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            auto_create_topics: false,
            default_partitions: 1,
            default_topic: TopicConfig::default(),
            retention_check_interval: Duration::from_secs(300),
            flush_check_interval: Duration::from_secs(1),
            read_mode: ReadMode::Mmap,
            max_open_segments: crate::log::OPEN_SEGMENTS_DEFAULT,
            writeback_bytes: crate::log::WRITEBACK_DEFAULT,
            file_system: FsHandle::default(),
            open_cache: crate::log::SegmentCache::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_validates_its_log_settings_and_its_own() {
        TopicConfig::default().validate().unwrap();
        let mut c = TopicConfig::default();
        c.log.segment_bytes = 1;
        assert!(matches!(
            c.validate(),
            Err(Error::InvalidConfig {
                key: "segment.bytes",
                ..
            })
        ));
        let c = TopicConfig {
            min_dirty_percent: 101,
            ..TopicConfig::default()
        };
        assert!(matches!(
            c.validate(),
            Err(Error::InvalidConfig {
                key: "min.cleanable.dirty.ratio",
                ..
            })
        ));
    }

    #[test]
    fn a_topics_log_config_is_its_log_settings_in_the_store() {
        let mut topic = TopicConfig::default();
        topic.log.segment_bytes = 4096;
        let options = StoreOptions {
            read_mode: ReadMode::Pread,
            ..StoreOptions::default()
        };
        let log = topic.log_config(&options);
        assert_eq!(log.settings, topic.log);
        assert_eq!(log.read_mode, ReadMode::Pread);
        assert!(log.store_locked);
    }
}
