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

use crate::config::{StoreOptions, TopicConfig};
use crate::consumer::{ConsumerConfig, IsolationLevel, OffsetReset};
use crate::error::{Error, Result};
use crate::group::{Assignor, RangeAssignor, RoundRobinAssignor};
use crate::log::Durability;
use crate::producer::ProducerConfig;
use crate::record::Compression;
use std::sync::Arc;
use std::time::Duration;

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

/// Parses Java `.properties` text into `(key, value)` pairs in file order
/// (duplicates included).
///
/// The common subset of `java.util.Properties::load`: `key=value`,
/// `key: value` and `key value`; `#` and `!` comment lines; blank lines;
/// whitespace around keys and values is dropped; a line ending in an odd
/// number of backslashes continues on the next one (its leading whitespace
/// dropped); escapes `\t \n \r \f \\ \uXXXX` (surrogate pairs combine), and a
/// backslash before any other character keeps the character (`\=`, `\:`,
/// `\ `, `\#`). One deviation: unescaped trailing whitespace of a value is
/// dropped (Java keeps it; Kafka trims values when it parses them).
///
/// # Errors
/// [`Error::PropertiesSyntax`] with the 1-based line for a malformed
/// `\uXXXX` escape or an unpaired surrogate.
pub fn parse(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((index, first)) = lines.next() {
        let line_no = index + 1;
        let trimmed = first.trim_start_matches(is_ws);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines into one logical line.
        let mut logical = String::from(trimmed);
        while ends_with_odd_backslashes(&logical) {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start_matches(is_ws)),
                None => break,
            }
        }
        out.push(split_entry(&logical, line_no)?);
    }
    Ok(out)
}

/// Java's whitespace in `.properties`: space, tab, form feed.
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// Splits a logical line (leading whitespace already gone) into key and value.
fn split_entry(line: &str, line_no: usize) -> Result<(String, String)> {
    let bytes = line.as_bytes();
    let mut i = 0;
    let mut escaped = false;
    // The key ends at the first unescaped '=', ':' or whitespace.
    while i < bytes.len() {
        let b = bytes[i];
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'=' || b == b':' || b == b' ' || b == b'\t' || b == b'\x0c' {
            break;
        }
        i += 1;
    }
    let raw_key = &line[..i];
    let mut rest = line[i..].trim_start_matches(is_ws);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(is_ws);
    }
    Ok((unescape(raw_key, line_no)?, unescape(rest, line_no)?))
}

/// Resolves escapes and drops unescaped trailing whitespace.
fn unescape(raw: &str, line_no: usize) -> Result<String> {
    let syntax = |reason| Error::PropertiesSyntax {
        line: line_no,
        reason,
    };
    let mut out = String::with_capacity(raw.len());
    // Length of `out` up to its last character that is not unescaped
    // whitespace.
    let mut keep = 0;
    let mut chars = raw.chars();
    let mut pending_high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if pending_high.is_some() {
                return Err(syntax("unpaired surrogate in \\u escape"));
            }
            out.push(c);
            if !is_ws(c) {
                keep = out.len();
            }
            continue;
        }
        let Some(e) = chars.next() else {
            // A lone trailing backslash (the end of the file cut a
            // continuation): Java drops it.
            break;
        };
        let decoded = match e {
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                    return Err(syntax("malformed \\uXXXX escape"));
                }
                let unit = u32::from_str_radix(&hex, 16)
                    .map_err(|_| syntax("malformed \\uXXXX escape"))?;
                match (pending_high.take(), unit) {
                    (None, 0xD800..=0xDBFF) => {
                        pending_high = Some(unit);
                        continue;
                    }
                    (Some(high), 0xDC00..=0xDFFF) => {
                        let cp = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00);
                        char::from_u32(cp).ok_or_else(|| syntax("invalid \\u escape"))?
                    }
                    (None, _) => char::from_u32(unit)
                        .ok_or_else(|| syntax("unpaired surrogate in \\u escape"))?,
                    (Some(_), _) => return Err(syntax("unpaired surrogate in \\u escape")),
                }
            }
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\x0c',
            other => other,
        };
        if pending_high.is_some() {
            return Err(syntax("unpaired surrogate in \\u escape"));
        }
        out.push(decoded);
        keep = out.len();
    }
    if pending_high.is_some() {
        return Err(syntax("unpaired surrogate in \\u escape"));
    }
    out.truncate(keep);
    Ok(out)
}

/// The pairs with duplicates removed (the last value wins, at the place of
/// the key's first occurrence), as `java.util.Properties` holds them.
fn entries(text: &str) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in parse(text)? {
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => out.push((k, v)),
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Value parsers. Keys are `&'static str` so errors can name them.

fn invalid(key: &'static str, reason: &'static str) -> Error {
    Error::InvalidConfig { key, reason }
}

fn parse_u64(key: &'static str, v: &str) -> Result<u64> {
    v.trim()
        .parse()
        .map_err(|_| invalid(key, "expected a non-negative integer"))
}

fn parse_usize(key: &'static str, v: &str) -> Result<usize> {
    v.trim()
        .parse()
        .map_err(|_| invalid(key, "expected a non-negative integer"))
}

fn parse_positive_usize(key: &'static str, v: &str) -> Result<usize> {
    match parse_usize(key, v)? {
        0 => Err(invalid(key, "must be positive")),
        n => Ok(n),
    }
}

fn parse_ms(key: &'static str, v: &str) -> Result<Duration> {
    parse_u64(key, v).map(Duration::from_millis)
}

fn parse_bool(key: &'static str, v: &str) -> Result<bool> {
    // Kafka's ConfigDef compares case-insensitively.
    let v = v.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(key, "expected true or false"))
    }
}

/// A retention-style time in `unit` milliseconds: −1 (any negative, as
/// Kafka) is unlimited.
fn parse_retention(key: &'static str, v: &str, unit_ms: u64) -> Result<Option<Duration>> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| invalid(key, "expected an integer (-1 for unlimited)"))?;
    if n < 0 {
        return Ok(None);
    }
    (n as u64)
        .checked_mul(unit_ms)
        .map(|ms| Some(Duration::from_millis(ms)))
        .ok_or_else(|| invalid(key, "too large"))
}

/// `compression.type` for producers and brokers.
fn parse_compression(key: &'static str, v: &str) -> Result<Compression> {
    let c = match v.trim() {
        "uncompressed" => Compression::None,
        name => name
            .parse::<Compression>()
            .map_err(|_| invalid(key, "expected none, gzip, snappy, lz4 or zstd"))?,
    };
    crate::record::check_compression(c, None).map_err(|_| {
        invalid(
            key,
            "this codec was left out of the build (kafkalite's gzip, snappy or zstd feature)",
        )
    })?;
    Ok(c)
}

/// `compression.gzip.level`, `compression.zstd.level` or
/// `compression.lz4.level`: an integer, checked against the codec's range
/// once `compression.type` is known.
fn parse_level(key: &'static str, v: &str) -> Result<i32> {
    v.trim()
        .parse::<i32>()
        .map_err(|_| invalid(key, "expected an integer"))
}

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

// ---------------------------------------------------------------------------
// Ignored keys. Reasons are shared so the tables stay short.

const NO_NETWORK: &str = "no network: the store is a library in this process";
const NO_REPLICAS: &str = "no replicas: durability is chosen per append (Durability)";
const NO_ZOOKEEPER: &str = "no ZooKeeper or KRaft controller: one process owns the store";
const NO_SERDE: &str = "keys and values are bytes (anything Into<Bytes>); serialize in your code";
const NO_RETRIES: &str = "appends are local calls that succeed or fail at once; nothing to retry";
const NO_TRANSACTIONS: &str = "no transactions";
const NO_BROKER_ID: &str = "no cluster: the store has no broker or node identity";

/// Ignored keys every client config shares (exact names).
fn client_ignored(key: &str) -> Option<&'static str> {
    Some(match key {
        "bootstrap.servers"
        | "client.dns.lookup"
        | "send.buffer.bytes"
        | "receive.buffer.bytes"
        | "request.timeout.ms"
        | "connections.max.idle.ms"
        | "metadata.max.age.ms"
        | "reconnect.backoff.ms"
        | "reconnect.backoff.max.ms"
        | "socket.connection.setup.timeout.ms"
        | "socket.connection.setup.timeout.max.ms"
        | "security.protocol"
        | "client.rack"
        | "metric.reporters"
        | "metrics.num.samples"
        | "metrics.sample.window.ms"
        | "metrics.recording.level"
        | "auto.include.jmx.reporter"
        | "enable.metrics.push" => NO_NETWORK,
        "retries" | "retry.backoff.ms" | "retry.backoff.max.ms" => NO_RETRIES,
        _ if key.starts_with("ssl.") || key.starts_with("sasl.") => NO_NETWORK,
        _ => return None,
    })
}

fn ignored(key: &str, value: &str, reason: &'static str) -> IgnoredKey {
    IgnoredKey {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

// ---------------------------------------------------------------------------

impl TopicConfig {
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
            if let Some(reason) = topic_ignored(&key) {
                skipped.push(ignored(&key, &value, reason));
            } else {
                config.set(&key, &value)?;
            }
        }
        config.validate()?;
        Ok((config, skipped))
    }
}

fn topic_ignored(key: &str) -> Option<&'static str> {
    Some(match key {
        "min.insync.replicas"
        | "unclean.leader.election.enable"
        | "leader.replication.throttled.replicas"
        | "follower.replication.throttled.replicas" => NO_REPLICAS,
        "message.format.version" | "message.downconversion.enable" => {
            "batches are always record batch v2 and are never converted"
        }
        "preallocate" => "index disk is reserved in small steps; .log files grow by appends",
        _ => return None,
    })
}

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

fn broker_ignored(key: &str) -> Option<&'static str> {
    Some(match key {
        "broker.id" | "node.id" | "broker.rack" => NO_BROKER_ID,
        "process.roles"
        | "controller.quorum.voters"
        | "controller.quorum.bootstrap.servers"
        | "controller.listener.names"
        | "metadata.log.dir" => NO_ZOOKEEPER,
        "listeners"
        | "advertised.listeners"
        | "listener.security.protocol.map"
        | "inter.broker.listener.name"
        | "security.inter.broker.protocol"
        | "num.network.threads"
        | "num.io.threads"
        | "queued.max.requests"
        | "socket.send.buffer.bytes"
        | "socket.receive.buffer.bytes"
        | "socket.request.max.bytes"
        | "connections.max.idle.ms"
        | "max.connections"
        | "max.connections.per.ip" => NO_NETWORK,
        "log.dirs" | "log.dir" => "the store's directory is the path given to Store::open",
        "num.recovery.threads.per.data.dir" => {
            "recovery runs in Store::open; only partitions without a clean shutdown are scanned"
        }
        "offsets.topic.replication.factor"
        | "transaction.state.log.replication.factor"
        | "share.coordinator.state.topic.replication.factor"
        | "default.replication.factor"
        | "min.insync.replicas"
        | "unclean.leader.election.enable"
        | "num.replica.fetchers"
        | "replica.lag.time.max.ms" => NO_REPLICAS,
        "transaction.state.log.min.isr"
        | "transaction.state.log.num.partitions"
        | "transaction.state.log.segment.bytes"
        | "share.coordinator.state.topic.min.isr" => NO_TRANSACTIONS,
        "offsets.topic.num.partitions" | "offsets.topic.segment.bytes" => {
            "the offset store (__consumer_offsets) has one partition"
        }
        "group.initial.rebalance.delay.ms" => {
            "the in-process coordinator rebalances as soon as a member joins or leaves"
        }
        "delete.topic.enable" => {
            "Store::delete_topic is always allowed; don't call it to forbid it"
        }
        "log.flush.scheduler.interval.ms" => {
            "flush.ms is checked every log.flush.offset.checkpoint.interval.ms"
        }
        _ if key.starts_with("zookeeper.") => NO_ZOOKEEPER,
        _ if key.starts_with("ssl.") || key.starts_with("sasl.") => NO_NETWORK,
        _ => return None,
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
                    o.retention_check_interval = positive_ms("log.retention.check.interval.ms", v)?
                }
                "log.flush.offset.checkpoint.interval.ms" => {
                    o.flush_check_interval =
                        positive_ms("log.flush.offset.checkpoint.interval.ms", v)?
                }
                k => {
                    if let Some(&(bk, tk)) = BROKER_TOPIC_KEYS.iter().find(|(bk, _)| *bk == k) {
                        set_topic_as(&mut o.default_topic, bk, tk, v)?;
                    } else if let Some(reason) = broker_ignored(k) {
                        skipped.push(ignored(k, v, reason));
                    } else {
                        return Err(Error::UnknownConfig { key });
                    }
                }
            }
        }
        if let Some(r) = ret_ms.or(ret_min).or(ret_h) {
            o.default_topic.retention_ms = r;
        }
        if let Some(r) = roll_ms.or(roll_h) {
            o.default_topic.segment_ms = r;
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

fn positive_ms(key: &'static str, v: &str) -> Result<Duration> {
    let d = parse_ms(key, v)?;
    if d.is_zero() {
        return Err(invalid(key, "must be positive"));
    }
    Ok(d)
}

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
                    skipped.push(ignored(
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
                        skipped.push(ignored(
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
                "key.serializer" | "value.serializer" => skipped.push(ignored(&key, v, NO_SERDE)),
                "client.id" => skipped.push(ignored(
                    &key,
                    v,
                    "names a client in broker logs and quotas; there is no broker",
                )),
                "enable.idempotence" => skipped.push(ignored(
                    &key,
                    v,
                    "appends are never retried, so never duplicated; order per partition is kept",
                )),
                "max.in.flight.requests.per.connection" | "delivery.timeout.ms" => {
                    skipped.push(ignored(&key, v, NO_NETWORK))
                }
                "max.request.size" => skipped.push(ignored(
                    &key,
                    v,
                    "no requests; the topic's max.message.bytes bounds a batch",
                )),
                k => match client_ignored(k) {
                    Some(reason) => skipped.push(ignored(k, v, reason)),
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

/// A `partition.assignment.strategy` entry.
enum Strategy {
    Range,
    RoundRobin,
    /// One of Kafka's assignors kafkalite does not implement.
    Unimplemented,
}

fn strategy(name: &str) -> Option<Strategy> {
    let short = name
        .strip_prefix("org.apache.kafka.clients.consumer.")
        .unwrap_or(name);
    Some(match short {
        "range" | "RangeAssignor" => Strategy::Range,
        "roundrobin" | "RoundRobinAssignor" => Strategy::RoundRobin,
        "sticky" | "StickyAssignor" | "cooperative-sticky" | "CooperativeStickyAssignor" => {
            Strategy::Unimplemented
        }
        _ => return None,
    })
}

/// Kafka takes the first strategy every member supports; all kafkalite
/// members support range and roundrobin, so the first entry decides. Later
/// entries must still be Kafka assignors (Kafka's own default lists
/// `RangeAssignor, CooperativeStickyAssignor`).
fn parse_assignor(v: &str) -> Result<Arc<dyn Assignor>> {
    const KEY: &str = "partition.assignment.strategy";
    let mut chosen: Option<Arc<dyn Assignor>> = None;
    let mut first = true;
    for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let s = strategy(name).ok_or_else(|| {
            invalid(
                KEY,
                "expected range or roundrobin (or Kafka's RangeAssignor / RoundRobinAssignor class)",
            )
        })?;
        if first {
            chosen = Some(match s {
                Strategy::Range => Arc::new(RangeAssignor),
                Strategy::RoundRobin => Arc::new(RoundRobinAssignor),
                Strategy::Unimplemented => {
                    return Err(invalid(
                        KEY,
                        "sticky assignors are not implemented; use range or roundrobin",
                    ))
                }
            });
            first = false;
        }
    }
    chosen.ok_or_else(|| invalid(KEY, "expected range or roundrobin"))
}

impl ConsumerConfig {
    /// A consumer config from a Kafka `consumer.properties`, starting from
    /// the defaults: `group.id`, `client.id`, `enable.auto.commit`,
    /// `auto.commit.interval.ms`, `auto.offset.reset`
    /// (`earliest`/`latest`/`none`), `max.poll.records`, `fetch.max.bytes`,
    /// `max.partition.fetch.bytes`, `max.poll.interval.ms`,
    /// `partition.assignment.strategy` (`range` / `roundrobin` or Kafka's
    /// class names; the first entry is used), `isolation.level`
    /// (`read_uncommitted` / `read_committed`). Network and deserializer
    /// settings, `session.timeout.ms`, `heartbeat.interval.ms`,
    /// `fetch.min.bytes`, `fetch.max.wait.ms` and `check.crcs` are returned
    /// as ignored.
    ///
    /// # Errors
    /// [`Error::UnknownConfig`], [`Error::InvalidConfig`] naming the key,
    /// [`Error::PropertiesSyntax`].
    pub fn from_properties(text: &str) -> Result<(ConsumerConfig, Vec<IgnoredKey>)> {
        let mut c = ConsumerConfig::default();
        let mut skipped = Vec::new();
        for (key, value) in entries(text)? {
            let v = value.as_str();
            match key.as_str() {
                "group.id" => {
                    let g = v.trim();
                    c.group_id = (!g.is_empty()).then(|| g.to_owned());
                }
                "client.id" => {
                    // Kafka generates an id for an empty one; keep the default.
                    if !v.trim().is_empty() {
                        c.client_id = v.trim().to_owned();
                    }
                }
                "enable.auto.commit" => {
                    c.enable_auto_commit = parse_bool("enable.auto.commit", v)?
                }
                "auto.commit.interval.ms" => {
                    c.auto_commit_interval = parse_ms("auto.commit.interval.ms", v)?
                }
                "auto.offset.reset" => {
                    c.auto_offset_reset = match v.trim() {
                        "earliest" => OffsetReset::Earliest,
                        "latest" => OffsetReset::Latest,
                        "none" => OffsetReset::None,
                        _ => {
                            return Err(invalid(
                                "auto.offset.reset",
                                "expected earliest, latest or none",
                            ))
                        }
                    }
                }
                "max.poll.records" => {
                    c.max_poll_records = parse_positive_usize("max.poll.records", v)?
                }
                "fetch.max.bytes" => c.fetch_max_bytes = parse_positive_usize("fetch.max.bytes", v)?,
                "max.partition.fetch.bytes" => {
                    c.max_partition_fetch_bytes =
                        parse_positive_usize("max.partition.fetch.bytes", v)?
                }
                "max.poll.interval.ms" => {
                    c.max_poll_interval = positive_ms("max.poll.interval.ms", v)?
                }
                "partition.assignment.strategy" => c.assignor = parse_assignor(v)?,
                "key.deserializer" | "value.deserializer" => {
                    skipped.push(ignored(&key, v, NO_SERDE))
                }
                "session.timeout.ms" | "heartbeat.interval.ms" => skipped.push(ignored(
                    &key,
                    v,
                    "no heartbeats: a member leaves on close or drop, or after max.poll.interval.ms",
                )),
                "fetch.min.bytes" | "fetch.max.wait.ms" => skipped.push(ignored(
                    &key,
                    v,
                    "no fetch requests: poll returns what is readable, waiting up to its timeout",
                )),
                "isolation.level" => {
                    c.isolation_level = match v.trim() {
                        "read_uncommitted" => IsolationLevel::ReadUncommitted,
                        "read_committed" => IsolationLevel::ReadCommitted,
                        _ => {
                            return Err(invalid(
                                "isolation.level",
                                "expected read_uncommitted or read_committed",
                            ))
                        }
                    }
                }
                "check.crcs" => skipped.push(ignored(&key, v, "batch CRCs are always checked")),
                k => match client_ignored(k) {
                    Some(reason) => skipped.push(ignored(k, v, reason)),
                    None => return Err(Error::UnknownConfig { key }),
                },
            }
        }
        Ok((c, skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn separators_comments_and_whitespace() {
        let text = "# comment\n! also a comment\n\n   \na=1\nb: 2\nc 3\n  d  =  4  \ne\nf=\n\
                    g = x = y\nh:=z\n";
        assert_eq!(
            pairs(text),
            vec![
                p("a", "1"),
                p("b", "2"),
                p("c", "3"),
                p("d", "4"),
                p("e", ""),
                p("f", ""),
                p("g", "x = y"),
                p("h", "=z"),
            ]
        );
    }

    #[test]
    fn continuations_and_crlf() {
        let text = "list = a,\\\n       b,\\\r\n   c\r\nnext=1\\\\\nlast=\\\n";
        assert_eq!(
            pairs(text),
            vec![p("list", "a,b,c"), p("next", "1\\"), p("last", "")]
        );
        // A comment does not continue.
        assert_eq!(pairs("# x \\\ny=1"), vec![p("y", "1")]);
    }

    #[test]
    fn escapes() {
        let text = "k\\=1\\ x = tab\\there\\nnl \\u00e9\\u4e2d \\uD83D\\uDE00\\\\ \\#\\ \n";
        assert_eq!(pairs(text), vec![p("k=1 x", "tab\there\nnl é中 😀\\ # ")]);
        assert!(matches!(
            parse("a=1\nb=\\u12G4\n"),
            Err(Error::PropertiesSyntax { line: 2, .. })
        ));
        assert!(matches!(
            parse("b=\\u12"),
            Err(Error::PropertiesSyntax { line: 1, .. })
        ));
        assert!(matches!(
            parse("b=\\uD83Dx"),
            Err(Error::PropertiesSyntax { line: 1, .. })
        ));
    }

    #[test]
    fn the_last_duplicate_wins() {
        let (c, _) = ProducerConfig::from_properties("linger.ms=1\nlinger.ms=7\n").unwrap();
        assert_eq!(c.linger, Duration::from_millis(7));
    }

    #[test]
    fn retention_units_have_kafkas_precedence() {
        let (o, _) = StoreOptions::from_properties(
            "log.retention.ms=1000\nlog.retention.hours=5\nlog.retention.minutes=2\n",
        )
        .unwrap();
        assert_eq!(o.default_topic.retention_ms, Some(Duration::from_secs(1)));
        let (o, _) =
            StoreOptions::from_properties("log.retention.hours=5\nlog.retention.minutes=2\n")
                .unwrap();
        assert_eq!(o.default_topic.retention_ms, Some(Duration::from_secs(120)));
        let (o, _) = StoreOptions::from_properties("log.retention.hours=-1\n").unwrap();
        assert_eq!(o.default_topic.retention_ms, None);
    }
}
