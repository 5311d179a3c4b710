//! Consumer settings (`consumer.properties`): the mapping of their Kafka
//! keys onto [`ConsumerConfig`].

use super::value::{invalid, parse_bool, parse_ms, parse_positive_ms, parse_positive_usize};
use super::{entries, ignored, IgnoredKey};
use crate::consumer::{ConsumerConfig, IsolationLevel, OffsetReset};
use crate::error::{Error, Result};
use crate::group::{Assignor, RangeAssignor, RoundRobinAssignor};
use std::sync::Arc;

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
                "enable.auto.commit" => c.enable_auto_commit = parse_bool("enable.auto.commit", v)?,
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
                "fetch.max.bytes" => {
                    c.fetch_max_bytes = parse_positive_usize("fetch.max.bytes", v)?
                }
                "max.partition.fetch.bytes" => {
                    c.max_partition_fetch_bytes =
                        parse_positive_usize("max.partition.fetch.bytes", v)?
                }
                "max.poll.interval.ms" => {
                    c.max_poll_interval = parse_positive_ms("max.poll.interval.ms", v)?
                }
                "partition.assignment.strategy" => c.assignor = parse_assignor(v)?,
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
                k => match ignored::consumer(k) {
                    Some(reason) => skipped.push(IgnoredKey::new(k, v, reason)),
                    None => return Err(Error::UnknownConfig { key }),
                },
            }
        }
        Ok((c, skipped))
    }
}
