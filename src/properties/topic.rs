//! Topic-level settings (`kafka-topics.sh --config`, `topics.meta`): the
//! mapping of their Kafka keys onto [`TopicConfig`] and back.

use super::value::{invalid, parse_int, parse_long, parse_ms, parse_optional_long, LONG_MAX};
use super::{entries, ignored, IgnoredKey};
use crate::config::{validate_retained_groups, CleanupPolicy, TopicConfig};
use crate::error::{Error, Result};
use crate::record::Compression;
use std::time::Duration;

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
        let log = &mut self.log;
        match key {
            "segment.bytes" => log.segment_bytes = parse_int("segment.bytes", value)?,
            "segment.ms" => log.segment_max_age = parse_ms("segment.ms", value)?,
            "segment.index.bytes" => {
                log.segment_index_bytes = parse_int("segment.index.bytes", value)?
            }
            "index.interval.bytes" => {
                log.index_interval_bytes = parse_int("index.interval.bytes", value)?
            }
            "retention.ms" => {
                self.retention =
                    parse_optional_long("retention.ms", value)?.map(Duration::from_millis)
            }
            "retention.bytes" => {
                self.retention_bytes = parse_optional_long("retention.bytes", value)?
            }
            "max.message.bytes" => log.max_message_bytes = parse_int("max.message.bytes", value)?,
            "cleanup.policy" => self.cleanup_policy = parse_cleanup_policy(value)?,
            "compression.type" => self.compression = parse_topic_compression(value)?,
            "flush.messages" => {
                // Kafka's default is Long.MAX_VALUE, meaning never.
                let v = parse_long("flush.messages", value)?;
                log.flush_messages = (v != LONG_MAX).then_some(v);
            }
            "flush.ms" => {
                let v = parse_long("flush.ms", value)?;
                log.flush_max_age = (v != LONG_MAX).then_some(Duration::from_millis(v));
            }
            "delete.retention.ms" => {
                self.delete_retention = parse_ms("delete.retention.ms", value)?
            }
            "min.cleanable.dirty.ratio" => {
                let r: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| {
                        invalid(
                            "min.cleanable.dirty.ratio",
                            "expected a number between 0 and 1",
                        )
                    })?;
                self.min_dirty_percent = (r * 100.0).round() as u8;
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

    /// Every setting as Kafka-style `(key, value)` text pairs, in the order
    /// of [`TOPIC_KEYS`].
    pub fn to_properties(&self) -> Vec<(&'static str, String)> {
        let log = &self.log;
        let ms = |d: Duration| d.as_millis().to_string();
        // Kafka's −1 is "none" for retention, its Long.MAX_VALUE for flushes.
        let or_minus_one = |v: Option<String>| v.unwrap_or_else(|| "-1".to_owned());
        let or_never = |v: Option<String>| v.unwrap_or_else(|| LONG_MAX.to_string());
        vec![
            ("segment.bytes", log.segment_bytes.to_string()),
            ("segment.ms", ms(log.segment_max_age)),
            ("segment.index.bytes", log.segment_index_bytes.to_string()),
            ("index.interval.bytes", log.index_interval_bytes.to_string()),
            ("retention.ms", or_minus_one(self.retention.map(ms))),
            (
                "retention.bytes",
                or_minus_one(self.retention_bytes.map(|b| b.to_string())),
            ),
            ("max.message.bytes", log.max_message_bytes.to_string()),
            ("cleanup.policy", self.cleanup_policy.name().to_owned()),
            ("compression.type", self.compression.name().to_owned()),
            (
                "flush.messages",
                or_never(log.flush_messages.map(|n| n.to_string())),
            ),
            ("flush.ms", or_never(log.flush_max_age.map(ms))),
            ("delete.retention.ms", ms(self.delete_retention)),
            (
                "min.cleanable.dirty.ratio",
                format!("{:.2}", f64::from(self.min_dirty_percent) / 100.0),
            ),
            (
                "kafkalite.retain.for.groups",
                self.retain_for_groups.join(","),
            ),
        ]
    }

    /// A topic config from topic-level settings in `.properties` form (the
    /// names of `kafka-topics.sh --config` and [`TOPIC_KEYS`](crate::TOPIC_KEYS)),
    /// starting from the defaults. Replication settings
    /// (`min.insync.replicas`, `unclean.leader.election.enable`, throttled
    /// replicas), `message.format.version`, `message.downconversion.enable`
    /// and `preallocate` are returned as ignored.
    ///
    /// # Errors
    /// [`Error::UnknownConfig`], [`Error::InvalidConfig`] naming the key,
    /// [`Error::PropertiesSyntax`]; the values are also validated as
    /// [`TopicConfig::validate`] does.
    pub fn from_properties(text: &str) -> Result<(TopicConfig, Vec<IgnoredKey>)> {
        let mut config = TopicConfig::default();
        let mut skipped = Vec::new();
        for (key, value) in entries(text)? {
            if let Some(reason) = ignored::topic(&key) {
                skipped.push(IgnoredKey::new(&key, &value, reason));
            } else {
                config.set(&key, &value)?;
            }
        }
        config.validate()?;
        Ok((config, skipped))
    }
}

/// `cleanup.policy`: `delete`, `compact`, or both in either order.
fn parse_cleanup_policy(value: &str) -> Result<CleanupPolicy> {
    let mut parts: Vec<&str> = value.split(',').map(str::trim).collect();
    parts.sort_unstable();
    parts.dedup();
    Ok(match parts.as_slice() {
        ["delete"] => CleanupPolicy::Delete,
        ["compact"] => CleanupPolicy::Compact,
        ["compact", "delete"] => CleanupPolicy::CompactDelete,
        _ => {
            return Err(invalid(
                "cleanup.policy",
                "expected delete, compact or compact,delete",
            ))
        }
    })
}

/// A topic's `compression.type`, which also takes Kafka's `producer` (keep
/// the producer's codec: the store's own appends then use none).
fn parse_topic_compression(value: &str) -> Result<Compression> {
    Ok(match value.trim() {
        "producer" | "uncompressed" => Compression::None,
        name => {
            let c = name.parse::<Compression>().map_err(|_| {
                invalid(
                    "compression.type",
                    "expected none, gzip, snappy, lz4, zstd, uncompressed or producer",
                )
            })?;
            crate::record::check_compression(c, None)?;
            c
        }
    })
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
        assert_eq!(d.retention, None);
        assert_eq!(d.cleanup_policy, CleanupPolicy::CompactDelete);
        let keys: Vec<&str> = c.to_properties().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, TOPIC_KEYS);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors_naming_the_key() {
        let mut c = TopicConfig::default();
        assert!(
            matches!(c.set("no.such.key", "1"), Err(Error::UnknownConfig { key }) if key == "no.such.key")
        );
        for (key, bad) in [
            ("segment.bytes", "lots"),
            ("cleanup.policy", "shred"),
            ("compression.type", "brotli"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("retention.ms", "-2"),
        ] {
            assert!(
                matches!(c.set(key, bad), Err(Error::InvalidConfig { key: k, .. }) if k == key),
                "{key}={bad}"
            );
        }
        assert_eq!(c, TopicConfig::default());
    }
}
