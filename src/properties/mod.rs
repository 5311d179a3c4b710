//! Kafka-style `.properties` files: the parser, and the mapping of Kafka's
//! broker, topic, producer and consumer settings onto kafkalite's configs.
//!
//! A service moving from Kafka keeps its `server.properties`,
//! `producer.properties` and `consumer.properties`:
//!
//! ```
//! use kafkalite::{Durability, ProducerConfig};
//! let (config, ignored) = ProducerConfig::from_properties(
//!     "bootstrap.servers=localhost:9092\nacks=all\nlinger.ms=20\n",
//! )?;
//! assert_eq!(config.durability, Durability::Fsync);
//! assert_eq!(ignored[0].key, "bootstrap.servers");
//! # Ok::<(), kafkalite::Error>(())
//! ```
//!
//! Each `from_properties` starts from the defaults and applies the file's
//! settings (a key given twice: the last value wins, as in Java). Settings
//! that only mean something with a network, replicas or a JVM
//! (`bootstrap.servers`, serializers, `retries`, `zookeeper.*`, replication
//! factors, ...) are accepted and returned as [`IgnoredKey`]s with the
//! reason. Any other key is [`Error::UnknownConfig`]; a bad value is
//! [`Error::InvalidConfig`] naming the key; a malformed file (a bad `\u`
//! escape) is [`Error::PropertiesSyntax`].
//!
//! Inside: the syntax ([`parse`]), the value parsers every mapping shares,
//! the tables of ignored keys, and one key mapping per config (topic, store
//! / broker, producer, consumer).
//!
//! [`Error::UnknownConfig`]: crate::Error::UnknownConfig
//! [`Error::InvalidConfig`]: crate::Error::InvalidConfig
//! [`Error::PropertiesSyntax`]: crate::Error::PropertiesSyntax

mod consumer;
mod ignored;
mod producer;
mod store;
mod syntax;
mod topic;
pub(crate) mod value;

pub(crate) use syntax::entries;
pub use syntax::parse;
pub use topic::TOPIC_KEYS;

/// A setting a `.properties` file gave that kafkalite accepts and does not
/// use, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredKey {
    /// The key as written.
    pub key: String,
    /// Its value as parsed.
    pub value: String,
    /// Why it has no effect here.
    pub reason: &'static str,
}

impl IgnoredKey {
    pub(crate) fn new(key: &str, value: &str, reason: &'static str) -> IgnoredKey {
        IgnoredKey {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        }
    }
}
