//! serde helpers (feature `serde`): durations as integers with their unit
//! in the field name, as Kafka's settings write them (`retention_ms`), so
//! the JSON of a config or a metrics snapshot reads without a schema.
//!
//! The derives themselves sit on the types (`cfg_attr(feature = "serde")`).
//! What they produce: structs as maps with the Rust field names (configs
//! use Kafka's names in snake case), enums as lowercase strings
//! (`"compact,delete"` as Kafka spells it), `Arc<str>` as a string.
//! A config's `Duration` field has no unit in its Rust name (`retention`,
//! `segment_max_age`); its serde name is the Kafka key's (`retention_ms`,
//! `segment_ms`), with the unit. The [`LogSettings`](crate::LogSettings) of
//! a `TopicConfig` or `LogConfig` are flattened: their fields sit beside the
//! others, so the JSON of a topic config is one flat map of its settings.
//! The file-system handle of `StoreOptions` and `LogConfig` is skipped
//! (a deserialized config gets the operating system's).
//! Deserializing checks types and rejects unknown fields of configs; the
//! values' ranges are checked where a config is used (`create_topic`,
//! `Producer::new`), as for a config built in code.

/// A [`Duration`](std::time::Duration) as whole milliseconds (`u64`;
/// sub-millisecond parts are dropped, larger values saturate).
pub(crate) mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// An `Option<Duration>` as milliseconds or `null`.
pub(crate) mod option_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_ms::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|o| o.map(Duration::from_millis))
    }
}

/// A [`Duration`](std::time::Duration) as whole nanoseconds (`u64`,
/// saturating: 584 years).
pub(crate) mod duration_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}
