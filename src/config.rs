//! Store and topic configuration, with Kafka's setting names and defaults.

use crate::error::{Error, Result};
use crate::io::FsHandle;
use crate::log::{LogConfig, ReadMode};
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
/// with its default. Build with [`TopicConfig::default`] and the setters, or
/// from Kafka-style `key=value` pairs with [`TopicConfig::set`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct TopicConfig {
    /// `segment.bytes`. Default: 1 GiB.
    pub segment_bytes: u32,
    /// `segment.ms`. Default: 7 days.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::duration_ms"))]
    pub segment_ms: Duration,
    /// `segment.index.bytes`. Default: 10 MiB.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`. Default: 4096.
    pub index_interval_bytes: u32,
    /// `retention.ms`: `None` keeps data forever (Kafka's −1). Default: 7 days.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::serde_impls::option_duration_ms")
    )]
    pub retention_ms: Option<Duration>,
    /// `retention.bytes` per partition: `None` is unlimited (Kafka's −1).
    /// Default: unlimited.
    pub retention_bytes: Option<u64>,
    /// `max.message.bytes`: the largest batch. Default: 1 MiB + 12.
    pub max_message_bytes: u32,
    /// `cleanup.policy`. Default: delete.
    pub cleanup_policy: CleanupPolicy,
    /// `compression.type` for batches the store encodes itself (the low-level
    /// append path); producers choose their own. Default: none.
    pub compression: Compression,
    /// `flush.messages`. Default: none.
    pub flush_messages: Option<u64>,
    /// `flush.ms`. Default: none.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::serde_impls::option_duration_ms")
    )]
    pub flush_ms: Option<Duration>,
    /// `delete.retention.ms`: how long tombstones survive compaction.
    /// Default: 1 day.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::duration_ms"))]
    pub delete_retention_ms: Duration,
    /// `min.cleanable.dirty.ratio`, in percent. Default: 50.
    pub min_cleanable_dirty_ratio_percent: u8,
    /// `kafkalite.retain.for.groups` (not in Kafka): time retention keeps
    /// every segment until all these consumer groups have committed past it,
    /// so unconsumed work is never dropped; `retention.bytes` still caps the
    /// size. Default: none.
    pub retain_for_groups: Vec<String>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        let log = LogConfig::default();
        TopicConfig {
            segment_bytes: log.segment_bytes,
            segment_ms: log.segment_ms,
            segment_index_bytes: log.segment_index_bytes,
            index_interval_bytes: log.index_interval_bytes,
            retention_ms: Some(Duration::from_secs(7 * 24 * 3600)),
            retention_bytes: None,
            max_message_bytes: log.max_message_bytes,
            cleanup_policy: CleanupPolicy::Delete,
            compression: Compression::None,
            flush_messages: None,
            flush_ms: None,
            delete_retention_ms: Duration::from_secs(24 * 3600),
            min_cleanable_dirty_ratio_percent: 50,
            retain_for_groups: Vec::new(),
        }
    }
}

fn parse_u64(key: &'static str, v: &str) -> Result<u64> {
    v.trim().parse().map_err(|_| Error::InvalidConfig {
        key,
        reason: "expected a non-negative integer",
    })
}

/// A Kafka `LONG` setting: non-negative, at most `i64::MAX`.
fn parse_long(key: &'static str, v: &str) -> Result<u64> {
    let n = parse_u64(key, v)?;
    if n > LONG_MAX {
        return Err(Error::InvalidConfig {
            key,
            reason: OUTSIDE_LONG,
        });
    }
    Ok(n)
}

/// A Kafka `INT` setting: non-negative, at most `i32::MAX`.
fn parse_u32(key: &'static str, v: &str) -> Result<u32> {
    v.trim()
        .parse()
        .ok()
        .filter(|&n| n <= INT_MAX)
        .ok_or(Error::InvalidConfig {
            key,
            reason: "expected a non-negative 32-bit integer",
        })
}

/// Kafka's −1 means "none"; other values must be non-negative `LONG`s.
fn parse_optional(key: &'static str, v: &str) -> Result<Option<u64>> {
    if v.trim() == "-1" {
        Ok(None)
    } else {
        parse_long(key, v).map(Some)
    }
}

/// The largest value of Kafka's `LONG` settings.
const LONG_MAX: u64 = i64::MAX as u64;
/// The largest value of Kafka's `INT` settings.
const INT_MAX: u32 = i32::MAX as u32;
const OUTSIDE_LONG: &str = "outside Kafka's LONG range (0 to 9223372036854775807)";

/// Checks a duration setting is a whole number of milliseconds within
/// Kafka's `LONG` range: what its text form (`key=<ms>`) can hold, so it
/// reads back unchanged.
pub(crate) fn check_millis(key: &'static str, d: Duration) -> Result<()> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(Error::InvalidConfig {
            key,
            reason: "must be a whole number of milliseconds",
        });
    }
    if d.as_millis() > u128::from(LONG_MAX) {
        return Err(Error::InvalidConfig {
            key,
            reason: OUTSIDE_LONG,
        });
    }
    Ok(())
}

/// Checks the groups of `kafkalite.retain.for.groups`: each a group id as
/// `validate_group_id` accepts it (not empty, at most 32,767 bytes, no
/// control characters), and, since the setting is a `,`-separated list whose
/// items are trimmed, without `,` or surrounding white space, so the list
/// reads back as it was written.
fn validate_retained_groups(groups: &[String]) -> Result<()> {
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

/// The topic-level setting names [`TopicConfig::set`] accepts.
pub const TOPIC_KEYS: &[&str] = &[
    "segment.bytes",
    "segment.ms",
    "segment.index.bytes",
    "index.interval.bytes",
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "cleanup.policy",
    "compression.type",
    "flush.messages",
    "flush.ms",
    "delete.retention.ms",
    "min.cleanable.dirty.ratio",
    "kafkalite.retain.for.groups",
];

impl TopicConfig {
    /// Sets one setting by its Kafka name from its text value, as in a
    /// `.properties` file or `kafka-topics.sh --config key=value`.
    ///
    /// # Errors
    /// [`Error::UnknownConfig`] for a key that is not a topic setting,
    /// [`Error::InvalidConfig`] for a bad value; the config is then unchanged.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let ms = |k, v: &str| parse_long(k, v).map(Duration::from_millis);
        match key {
            "segment.bytes" => self.segment_bytes = parse_u32("segment.bytes", value)?,
            "segment.ms" => self.segment_ms = ms("segment.ms", value)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = parse_u32("segment.index.bytes", value)?
            }
            "index.interval.bytes" => {
                self.index_interval_bytes = parse_u32("index.interval.bytes", value)?
            }
            "retention.ms" => {
                self.retention_ms =
                    parse_optional("retention.ms", value)?.map(Duration::from_millis)
            }
            "retention.bytes" => self.retention_bytes = parse_optional("retention.bytes", value)?,
            "max.message.bytes" => self.max_message_bytes = parse_u32("max.message.bytes", value)?,
            "cleanup.policy" => {
                let mut parts: Vec<&str> = value.split(',').map(str::trim).collect();
                parts.sort_unstable();
                parts.dedup();
                self.cleanup_policy = match parts.as_slice() {
                    ["delete"] => CleanupPolicy::Delete,
                    ["compact"] => CleanupPolicy::Compact,
                    ["compact", "delete"] => CleanupPolicy::CompactDelete,
                    _ => {
                        return Err(Error::InvalidConfig {
                            key: "cleanup.policy",
                            reason: "expected delete, compact or compact,delete",
                        })
                    }
                }
            }
            "compression.type" => {
                self.compression = match value.trim() {
                    // Kafka's topic default keeps the producer's codec; the
                    // store's own appends then use none.
                    "producer" | "uncompressed" => Compression::None,
                    name => {
                        let c = name.parse::<Compression>().map_err(|_| Error::InvalidConfig {
                            key: "compression.type",
                            reason: "expected none, gzip, snappy, lz4, zstd, uncompressed or producer",
                        })?;
                        crate::record::check_compression(c, None)?;
                        c
                    }
                }
            }
            "flush.messages" => {
                // Kafka's default is Long.MAX_VALUE, meaning never.
                let v = parse_long("flush.messages", value)?;
                self.flush_messages = (v != LONG_MAX).then_some(v);
            }
            "flush.ms" => {
                let v = parse_long("flush.ms", value)?;
                self.flush_ms = (v != LONG_MAX).then_some(Duration::from_millis(v));
            }
            "delete.retention.ms" => self.delete_retention_ms = ms("delete.retention.ms", value)?,
            "min.cleanable.dirty.ratio" => {
                let r: f64 = value.trim().parse().map_err(|_| Error::InvalidConfig {
                    key: "min.cleanable.dirty.ratio",
                    reason: "expected a number between 0 and 1",
                })?;
                if !(0.0..=1.0).contains(&r) {
                    return Err(Error::InvalidConfig {
                        key: "min.cleanable.dirty.ratio",
                        reason: "expected a number between 0 and 1",
                    });
                }
                self.min_cleanable_dirty_ratio_percent = (r * 100.0).round() as u8;
            }
            "kafkalite.retain.for.groups" => {
                let groups: Vec<String> = value
                    .split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect();
                validate_retained_groups(&groups)?;
                self.retain_for_groups = groups;
            }
            _ => {
                return Err(Error::UnknownConfig {
                    key: key.to_owned(),
                })
            }
        }
        Ok(())
    }

    /// Every setting as Kafka-style `(key, value)` text pairs.
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let opt = |v: Option<u64>| v.map_or("-1".to_owned(), |v| v.to_string());
        vec![
            ("segment.bytes", self.segment_bytes.to_string()),
            ("segment.ms", self.segment_ms.as_millis().to_string()),
            ("segment.index.bytes", self.segment_index_bytes.to_string()),
            (
                "index.interval.bytes",
                self.index_interval_bytes.to_string(),
            ),
            (
                "retention.ms",
                opt(self
                    .retention_ms
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
            ),
            ("retention.bytes", opt(self.retention_bytes)),
            ("max.message.bytes", self.max_message_bytes.to_string()),
            ("cleanup.policy", self.cleanup_policy.name().to_owned()),
            ("compression.type", self.compression.name().to_owned()),
            (
                "flush.messages",
                self.flush_messages
                    .map_or((i64::MAX as u64).to_string(), |v| v.to_string()),
            ),
            (
                "flush.ms",
                self.flush_ms
                    .map_or((i64::MAX as u64).to_string(), |d| d.as_millis().to_string()),
            ),
            (
                "delete.retention.ms",
                self.delete_retention_ms.as_millis().to_string(),
            ),
            (
                "min.cleanable.dirty.ratio",
                format!(
                    "{:.2}",
                    f64::from(self.min_cleanable_dirty_ratio_percent) / 100.0
                ),
            ),
            (
                "kafkalite.retain.for.groups",
                self.retain_for_groups.join(","),
            ),
        ]
    }

    /// Checks the values are usable.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the setting.
    /// Everything it accepts reads back unchanged from its text form
    /// ([`to_properties`](Self::to_properties), as `topics.meta` stores it):
    /// durations are whole milliseconds and, like every number, within
    /// Kafka's range for the setting (`LONG` or `INT`).
    pub fn validate(&self) -> Result<()> {
        self.log_config(&StoreOptions::default()).validate()?;
        if let Some(d) = self.retention_ms {
            check_millis("retention.ms", d)?;
        }
        check_millis("delete.retention.ms", self.delete_retention_ms)?;
        if self.retention_bytes.is_some_and(|b| b > LONG_MAX) {
            return Err(Error::InvalidConfig {
                key: "retention.bytes",
                reason: OUTSIDE_LONG,
            });
        }
        if self.min_cleanable_dirty_ratio_percent > 100 {
            return Err(Error::InvalidConfig {
                key: "min.cleanable.dirty.ratio",
                reason: "expected a number between 0 and 1 (0 to 100 percent)",
            });
        }
        validate_retained_groups(&self.retain_for_groups)
    }

    /// The partition-log settings this topic config implies in a store with
    /// `options`.
    pub(crate) fn log_config(&self, options: &StoreOptions) -> LogConfig {
        LogConfig {
            segment_bytes: self.segment_bytes,
            segment_ms: self.segment_ms,
            segment_index_bytes: self.segment_index_bytes,
            index_interval_bytes: self.index_interval_bytes,
            max_message_bytes: self.max_message_bytes,
            flush_messages: self.flush_messages,
            flush_ms: self.flush_ms,
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
            file_system: FsHandle::default(),
            open_cache: crate::log::SegmentCache::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_round_trips_through_its_text_form() {
        let mut c = TopicConfig::default();
        c.set("retention.bytes", "1048576").unwrap();
        c.set("retention.ms", "-1").unwrap();
        c.set("cleanup.policy", "delete,compact").unwrap();
        c.set("compression.type", "lz4").unwrap();
        c.set("flush.messages", "1000").unwrap();
        c.set("min.cleanable.dirty.ratio", "0.3").unwrap();
        c.set("kafkalite.retain.for.groups", "billing, audit")
            .unwrap();
        let mut d = TopicConfig::default();
        for (k, v) in c.to_properties() {
            d.set(k, &v).unwrap();
        }
        assert_eq!(c, d);
        assert_eq!(d.retention_bytes, Some(1 << 20));
        assert_eq!(d.retention_ms, None);
        assert_eq!(d.cleanup_policy, CleanupPolicy::CompactDelete);
        assert_eq!(c.to_properties().len(), TOPIC_KEYS.len());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors_naming_the_key() {
        let mut c = TopicConfig::default();
        assert!(
            matches!(c.set("no.such.key", "1"), Err(Error::UnknownConfig { key }) if key == "no.such.key")
        );
        assert!(matches!(
            c.set("segment.bytes", "lots"),
            Err(Error::InvalidConfig {
                key: "segment.bytes",
                ..
            })
        ));
        assert!(matches!(
            c.set("cleanup.policy", "shred"),
            Err(Error::InvalidConfig {
                key: "cleanup.policy",
                ..
            })
        ));
        assert!(matches!(
            c.set("compression.type", "brotli"),
            Err(Error::InvalidConfig {
                key: "compression.type",
                ..
            })
        ));
        assert_eq!(c, TopicConfig::default());
    }
}
