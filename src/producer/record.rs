//! What a producer sends (`ProducerRecord`) and what it hands back for it
//! (`RecordMetadata`).

use crate::record::Header;
use bytes::Bytes;
use std::sync::Arc;

/// A record to send: a topic, an optional partition, and the record.
///
/// The topic is shared (`Arc<str>`, as a Java `ProducerRecord` shares its
/// topic `String`): a sender that keeps one `Arc<str>` per topic and clones
/// it into each record allocates nothing per record for the name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: Arc<str>,
    /// An explicit partition; `None` lets the partitioner choose.
    pub partition: Option<u32>,
    /// Milliseconds since the epoch; `None` uses the current time.
    pub timestamp: Option<i64>,
    /// The key; `None` is null.
    pub key: Option<Bytes>,
    /// The value; `None` is null (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl ProducerRecord {
    /// A record with a value for `topic` (a `&str` or `String` is copied
    /// into a new `Arc<str>`; an `Arc<str>` is shared).
    pub fn new(topic: impl Into<Arc<str>>, value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            topic: topic.into(),
            partition: None,
            timestamp: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
        }
    }

    /// Sets the key.
    #[must_use]
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets an explicit partition.
    #[must_use]
    pub fn partition(mut self, partition: u32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Sets the timestamp.
    #[must_use]
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// Appends a header.
    #[must_use]
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }

    /// Encoded size of the record in a batch, an upper bound.
    pub(super) fn encoded_size(&self) -> usize {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        crate::record::estimated_size(len(&self.key), len(&self.value), &self.headers)
    }
}

/// Where a sent record landed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: u32,
    /// The record's offset; −1 under [`Durability::None`](crate::Durability::None), whose handles
    /// complete before the append (Kafka's `acks=0`).
    pub offset: i64,
    /// The record's timestamp.
    pub timestamp: i64,
}
