//! Producer settings (`producer.properties`): the mapping of their Kafka
//! keys onto [`ProducerConfig`].

use super::value::{
    invalid, parse_bool, parse_compression, parse_level, parse_ms, parse_positive_usize,
};
use super::{entries, ignored, IgnoredKey};
use crate::error::{Error, Result};
use crate::log::Durability;
use crate::producer::ProducerConfig;
use crate::record::Compression;

impl ProducerConfig {
    /// A producer config from a Kafka `producer.properties`, starting from
    /// the defaults: `batch.size`, `linger.ms`, `buffer.memory`,
    /// `max.block.ms`, `compression.type` (`none`, `gzip`, `snappy`, `lz4`,
    /// `zstd`), `compression.gzip.level`, `compression.zstd.level`, `acks`
    /// (`0` → [`Durability::None`], `1` → [`Durability::Written`], `all` or
    /// `-1` → [`Durability::Fsync`]), `partitioner.ignore.keys`, and
    /// `partitioner.class` when it names Kafka's default partitioner.
    /// Network, retry and serializer settings, `client.id`,
    /// `enable.idempotence`, `max.in.flight.requests.per.connection`,
    /// `delivery.timeout.ms` and `max.request.size` are returned as ignored.
    ///
    /// # Errors
    /// [`Error::UnknownConfig`]; [`Error::InvalidConfig`] naming the key for
    /// a bad value (a codec left out of the build, a level outside the
    /// codec's range), a custom
    /// `partitioner.class` (set [`ProducerConfig::partitioner`] in code) or a
    /// `transactional.id` (no transactions); [`Error::PropertiesSyntax`].
    pub fn from_properties(text: &str) -> Result<(ProducerConfig, Vec<IgnoredKey>)> {
        let mut c = ProducerConfig::default();
        let mut skipped = Vec::new();
        let (mut gzip_level, mut zstd_level) = (None, None);
        for (key, value) in entries(text)? {
            let v = value.as_str();
            match key.as_str() {
                "batch.size" => c.batch_size = parse_positive_usize("batch.size", v)?,
                "linger.ms" => c.linger = parse_ms("linger.ms", v)?,
                "buffer.memory" => c.buffer_memory = parse_positive_usize("buffer.memory", v)?,
                "max.block.ms" => c.max_block = parse_ms("max.block.ms", v)?,
                "compression.type" => c.compression = parse_compression("compression.type", v)?,
                "compression.gzip.level" => {
                    gzip_level = Some(parse_level("compression.gzip.level", v)?)
                }
                "compression.zstd.level" => {
                    zstd_level = Some(parse_level("compression.zstd.level", v)?)
                }
                "compression.lz4.level" => {
                    let level = parse_level("compression.lz4.level", v)?;
                    if !(1..=17).contains(&level) {
                        return Err(invalid("compression.lz4.level", "expected 1 to 17"));
                    }
                    skipped.push(IgnoredKey::new(
                        &key,
                        v,
                        "lz4 batches are written with lz4's one fast level",
                    ))
                }
                "acks" => {
                    c.durability = match v.trim() {
                        "0" => Durability::None,
                        "1" => Durability::Written,
                        "all" | "-1" => Durability::Fsync,
                        _ => return Err(invalid("acks", "expected 0, 1, all or -1")),
                    }
                }
                "partitioner.ignore.keys" => {
                    c.partitioner_ignore_keys = parse_bool("partitioner.ignore.keys", v)?
                }
                "partitioner.class" => match v.trim() {
                    "" | "org.apache.kafka.clients.producer.internals.DefaultPartitioner" => {
                        skipped.push(IgnoredKey::new(
                            &key,
                            v,
                            "Kafka's default partitioner is the built-in one",
                        ))
                    }
                    _ => {
                        return Err(invalid(
                            "partitioner.class",
                            "a custom partitioner is set in code (ProducerConfig::partitioner)",
                        ))
                    }
                },
                "transactional.id" => {
                    return Err(invalid(
                        "transactional.id",
                        "transactions are not supported",
                    ))
                }
                k => match ignored::producer(k) {
                    Some(reason) => skipped.push(IgnoredKey::new(k, v, reason)),
                    None => return Err(Error::UnknownConfig { key }),
                },
            }
        }
        // Kafka's gzip default -1 means zlib's default level.
        let gzip_level = gzip_level.filter(|&l| l != -1);
        for (codec, level) in [
            (Compression::Gzip, gzip_level),
            (Compression::Zstd, zstd_level),
        ] {
            crate::record::check_compression(codec, level).or_else(|e| match e {
                Error::InvalidConfig {
                    key: "compression.type",
                    ..
                } => Ok(()),
                e => Err(e),
            })?;
            if c.compression == codec {
                c.compression_level = level;
            }
        }
        Ok((c, skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_last_duplicate_wins() {
        let (c, _) = ProducerConfig::from_properties("linger.ms=1\nlinger.ms=7\n").unwrap();
        assert_eq!(c.linger, Duration::from_millis(7));
    }

    #[test]
    fn a_time_beyond_kafkas_long_range_is_refused_naming_the_key() {
        for key in ["linger.ms", "max.block.ms"] {
            let text = format!("{key}=9223372036854775808\n");
            assert!(
                matches!(
                    ProducerConfig::from_properties(&text),
                    Err(Error::InvalidConfig { key: k, .. }) if k == key
                ),
                "{key}"
            );
        }
    }
}
