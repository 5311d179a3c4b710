//! Broker settings (`server.properties`): the mapping of their Kafka keys
//! onto [`StoreOptions`] and its default topic config.

use super::value::{invalid, parse_bool, parse_ms, parse_positive_ms, parse_retention, parse_u64};
use super::{entries, ignored, IgnoredKey};
use crate::config::{StoreOptions, TopicConfig};
use crate::error::{Error, Result};
use std::time::Duration;

/// Broker keys that set a default topic setting: `(broker key, topic key)`.
/// The retention and roll times are handled apart (their units have a
/// precedence).
const BROKER_TOPIC_KEYS: &[(&str, &str)] = &[
    ("log.retention.bytes", "retention.bytes"),
    ("log.segment.bytes", "segment.bytes"),
    ("log.index.size.max.bytes", "segment.index.bytes"),
    ("log.index.interval.bytes", "index.interval.bytes"),
    ("message.max.bytes", "max.message.bytes"),
    ("log.cleanup.policy", "cleanup.policy"),
    ("compression.type", "compression.type"),
    ("log.flush.interval.messages", "flush.messages"),
    ("log.flush.interval.ms", "flush.ms"),
    ("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    (
        "log.cleaner.min.cleanable.ratio",
        "min.cleanable.dirty.ratio",
    ),
];

/// Sets a topic setting under another name (a broker's `log.*` default),
/// naming that name in errors.
fn set_topic_as(
    topic: &mut TopicConfig,
    key: &'static str,
    topic_key: &str,
    v: &str,
) -> Result<()> {
    topic.set(topic_key, v).map_err(|e| match e {
        Error::InvalidConfig { reason, .. } => Error::InvalidConfig { key, reason },
        other => other,
    })
}

impl StoreOptions {
    /// Store options from a broker's `server.properties`: the store-wide
    /// settings (`auto.create.topics.enable`, `num.partitions`,
    /// `log.retention.check.interval.ms`,
    /// `log.flush.offset.checkpoint.interval.ms`) and the broker's `log.*`
    /// topic defaults, which become [`default_topic`](Self::default_topic):
    /// `log.retention.{ms,minutes,hours}` (`ms` wins over `minutes` over
    /// `hours`, as in Kafka), `log.roll.{ms,hours}`, `log.retention.bytes`,
    /// `log.segment.bytes`, `log.index.size.max.bytes`,
    /// `log.index.interval.bytes`, `message.max.bytes`, `log.cleanup.policy`,
    /// `compression.type`, `log.flush.interval.{messages,ms}`,
    /// `log.cleaner.delete.retention.ms`, `log.cleaner.min.cleanable.ratio`.
    /// Cluster, network, ZooKeeper/KRaft and replication settings are
    /// returned as ignored.
    ///
    /// The default topic config is what auto-created topics get; pass
    /// `options.default_topic.clone()` to [`Store::create_topic`](crate::Store::create_topic)
    /// to give it to explicitly created ones.
    ///
    /// # Errors
    /// [`Error::UnknownConfig`], [`Error::InvalidConfig`] naming the key,
    /// [`Error::PropertiesSyntax`].
    pub fn from_properties(text: &str) -> Result<(StoreOptions, Vec<IgnoredKey>)> {
        let mut o = StoreOptions::default();
        let mut skipped = Vec::new();
        let (mut ret_ms, mut ret_min, mut ret_h) = (None, None, None);
        let (mut roll_ms, mut roll_h) = (None, None);
        for (key, value) in entries(text)? {
            let v = value.as_str();
            match key.as_str() {
                "log.retention.ms" => ret_ms = Some(parse_retention("log.retention.ms", v, 1)?),
                "log.retention.minutes" => {
                    ret_min = Some(parse_retention("log.retention.minutes", v, 60_000)?)
                }
                "log.retention.hours" => {
                    ret_h = Some(parse_retention("log.retention.hours", v, 3_600_000)?)
                }
                "log.roll.ms" => roll_ms = Some(parse_ms("log.roll.ms", v)?),
                "log.roll.hours" => {
                    roll_h = Some(
                        parse_u64("log.roll.hours", v)?
                            .checked_mul(3600)
                            .map(Duration::from_secs)
                            .ok_or_else(|| invalid("log.roll.hours", "too large"))?,
                    )
                }
                "auto.create.topics.enable" => {
                    o.auto_create_topics = parse_bool("auto.create.topics.enable", v)?
                }
                "num.partitions" => {
                    let n = parse_u64("num.partitions", v)?;
                    o.default_partitions = u32::try_from(n)
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| invalid("num.partitions", "must be between 1 and 2^32-1"))?;
                }
                "log.retention.check.interval.ms" => {
                    o.retention_check_interval =
                        parse_positive_ms("log.retention.check.interval.ms", v)?
                }
                "log.flush.offset.checkpoint.interval.ms" => {
                    o.flush_check_interval =
                        parse_positive_ms("log.flush.offset.checkpoint.interval.ms", v)?
                }
                k => {
                    if let Some(&(bk, tk)) = BROKER_TOPIC_KEYS.iter().find(|(bk, _)| *bk == k) {
                        set_topic_as(&mut o.default_topic, bk, tk, v)?;
                    } else if let Some(reason) = ignored::broker(k) {
                        skipped.push(IgnoredKey::new(k, v, reason));
                    } else {
                        return Err(Error::UnknownConfig { key });
                    }
                }
            }
        }
        if let Some(r) = ret_ms.or(ret_min).or(ret_h) {
            o.default_topic.retention = r;
        }
        if let Some(r) = roll_ms.or(roll_h) {
            o.default_topic.log.segment_max_age = r;
        }
        // Name the broker key in errors, as the user wrote it.
        o.default_topic.validate().map_err(|e| match e {
            Error::InvalidConfig { key, reason } => Error::InvalidConfig {
                key: BROKER_TOPIC_KEYS
                    .iter()
                    .chain(&[("log.roll.ms", "segment.ms")])
                    .find(|(_, tk)| *tk == key)
                    .map_or(key, |(bk, _)| bk),
                reason,
            },
            other => other,
        })?;
        Ok((o, skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_units_have_kafkas_precedence() {
        let (o, _) = StoreOptions::from_properties(
            "log.retention.ms=1000\nlog.retention.hours=5\nlog.retention.minutes=2\n",
        )
        .unwrap();
        assert_eq!(o.default_topic.retention, Some(Duration::from_secs(1)));
        let (o, _) =
            StoreOptions::from_properties("log.retention.hours=5\nlog.retention.minutes=2\n")
                .unwrap();
        assert_eq!(o.default_topic.retention, Some(Duration::from_secs(120)));
        let (o, _) = StoreOptions::from_properties("log.retention.hours=-1\n").unwrap();
        assert_eq!(o.default_topic.retention, None);
    }
}
