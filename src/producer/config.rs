//! The producer's settings, with Kafka's names.

use super::Partitioner;
use crate::log::Durability;
use crate::record::Compression;
use std::sync::Arc;
use std::time::Duration;

/// Producer settings, with Kafka's names. Each field's doc ends with its
/// default.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProducerConfig {
    /// `batch.size`: a partition's batch is sealed once it holds this many
    /// (uncompressed) bytes. A full batch waits at most 1 ms (or `linger.ms`
    /// if shorter) for more full batches of its partition, and they are
    /// appended together with one vectored write once they hold 64 KiB or
    /// that millisecond is up: the kernel's cost of a write is mostly per
    /// page-cache folio, and larger writes get larger folios. Each is still
    /// its own Kafka batch. With the built-in partitioner, keyless records
    /// stick to a partition until its batch is full (or twice this many
    /// bytes went to it), then move on (a thread's first record to a topic
    /// takes a choice that moves after this many bytes). Default: 16 KiB.
    pub batch_size: usize,
    /// `linger.ms`: how long a batch waits for more records before it is
    /// appended. Default: 5 ms (Kafka 4.0's default). 0: every batch is
    /// appended at once, full or not, by the sending thread.
    pub linger: Duration,
    /// `buffer.memory`: bytes of records waiting to be appended; `send`
    /// blocks when it is used up. Default: 32 MiB. A partition takes it up
    /// to a batch's worth at a time (at most a 64th of it), as Kafka's
    /// producer takes a batch's buffer from its pool; what a partition took
    /// and has not used is given back before a send would wait for it.
    pub buffer_memory: usize,
    /// `max.block.ms`: how long `send` blocks on a full buffer before it
    /// fails with [`Error::BufferExhausted`](crate::Error::BufferExhausted). Default: 60 s.
    pub max_block: Duration,
    /// `compression.type`. Default: none.
    pub compression: Compression,
    /// The level for codecs that have one: `compression.gzip.level` (1 to
    /// 9) for gzip, `compression.zstd.level` (−131072 to 22) for zstd.
    /// Default: `None`, Kafka's default level (gzip 6, zstd 3).
    pub compression_level: Option<i32>,
    /// The `acks` analog: what a record has reached when its handle
    /// completes. Default: [`Durability::Written`](crate::Durability::Written).
    pub durability: Durability,
    /// `partitioner.ignore.keys`: keyed records are spread like keyless
    /// ones. Default: false.
    pub partitioner_ignore_keys: bool,
    /// A custom partitioner (`partitioner.class`). Default: Kafka's built-in
    /// murmur2 / uniform sticky partitioner.
    pub partitioner: Option<Arc<dyn Partitioner>>,
}

impl std::fmt::Debug for ProducerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerConfig")
            .field("batch_size", &self.batch_size)
            .field("linger", &self.linger)
            .field("buffer_memory", &self.buffer_memory)
            .field("max_block", &self.max_block)
            .field("compression", &self.compression)
            .field("compression_level", &self.compression_level)
            .field("durability", &self.durability)
            .field("partitioner_ignore_keys", &self.partitioner_ignore_keys)
            .field("custom_partitioner", &self.partitioner.is_some())
            .finish()
    }
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            batch_size: 16 * 1024,
            linger: Duration::from_millis(5),
            buffer_memory: 32 << 20,
            max_block: Duration::from_secs(60),
            compression: Compression::None,
            compression_level: None,
            durability: Durability::Written,
            partitioner_ignore_keys: false,
            partitioner: None,
        }
    }
}
