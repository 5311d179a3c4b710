//! The crate's one error type.
//!
//! Every fallible function returns [`Result`]. Variants are structured so a
//! caller can match on what went wrong without parsing messages; `Display`
//! messages are short and lowercase.

use crate::record::DecodeError;
use std::io;
use std::path::PathBuf;

/// The result type of every fallible kafkalite function.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in kafkalite.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("i/o error during {op} on {}", path.display())]
    Io {
        /// What was being done (`"write"`, `"fsync"`, `"open"`, ...).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The device has no space left. Nothing was appended; appends work again
    /// once space is freed.
    #[error("no space left on device during {op} on {}", path.display())]
    DiskFull {
        /// What was being done (`"write"`, `"reserve index"`, ...).
        op: &'static str,
        /// The file being written.
        path: PathBuf,
        /// The operating system's error (`ENOSPC`).
        #[source]
        source: io::Error,
    },

    /// Bytes that claim to be record batches are malformed (see
    /// [`DecodeError`] for each kind).
    #[error(transparent)]
    Decode(#[from] DecodeError),

    /// A field holds a value the format does not allow.
    #[error("invalid {what}: {value}")]
    InvalidField {
        /// Which field.
        what: &'static str,
        /// The value found.
        value: i64,
    },

    /// A file is damaged: a batch where it cannot be a torn tail (before the
    /// recovery point, or in a sealed segment), an index, or a metadata file.
    #[error("corrupt data in {} at position {position}: {kind}", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// Byte position of the damage in that file.
        position: u64,
        /// What is wrong there.
        kind: Corruption,
    },

    /// A requested offset is outside the log's readable range.
    #[error("offset {requested} out of range (log holds {start}..{end})")]
    OffsetOutOfRange {
        /// The offset asked for.
        requested: i64,
        /// The log start offset.
        start: i64,
        /// The next offset to be written (exclusive end).
        end: i64,
    },

    /// A batch is larger than the log accepts (`max.message.bytes`).
    #[error("batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge {
        /// The batch size in bytes.
        size: usize,
        /// The configured limit.
        max: usize,
    },

    /// A batch cannot be appended: empty, or malformed for appending.
    #[error("invalid batch for append: {reason}")]
    InvalidBatch {
        /// Why the batch was refused.
        reason: &'static str,
    },

    /// An earlier write or fsync failed; the log refuses writes until reopened.
    #[error("log at {} is poisoned by an earlier i/o failure; reopen it", path.display())]
    Poisoned {
        /// The partition directory.
        path: PathBuf,
    },

    /// Another handle or process holds the directory's lock.
    #[error("{} is locked by another handle or process", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },

    /// A configuration value is invalid.
    #[error("invalid configuration {key}: {reason}")]
    InvalidConfig {
        /// The setting's name, Kafka-style.
        key: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },

    /// A configuration key is not one kafkalite knows.
    #[error("unknown configuration key {key}")]
    UnknownConfig {
        /// The key as given.
        key: String,
    },

    /// A `.properties` text is malformed (see [`properties::parse`](crate::properties::parse)).
    #[error("malformed properties at line {line}: {reason}")]
    PropertiesSyntax {
        /// The 1-based line where the bad entry starts.
        line: usize,
        /// What is wrong there.
        reason: &'static str,
    },

    /// A topic name breaks Kafka's rule: 1–249 characters of
    /// `[a-zA-Z0-9._-]`, not `.` or `..`.
    #[error("invalid topic name {name:?}: {reason}")]
    InvalidTopicName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A consumer group id is empty, longer than the offset record's 16-bit
    /// length allows (32,767 bytes), or holds a control character (or, in
    /// `kafkalite.retain.for.groups`, the list separator `,`).
    #[error("invalid group id {group:?}: {reason}")]
    InvalidGroupId {
        /// The group id as given (cut to its first 64 characters).
        group: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A commit's metadata string is longer than `offset.metadata.max.bytes`
    /// (Kafka's `OFFSET_METADATA_TOO_LARGE`). Nothing was committed.
    #[error("offset metadata of {size} bytes exceeds offset.metadata.max.bytes {max}")]
    OffsetMetadataTooLarge {
        /// The metadata's size in bytes.
        size: usize,
        /// The limit.
        max: usize,
    },

    /// No topic of that name exists.
    #[error("unknown topic {topic}")]
    UnknownTopic {
        /// The topic asked for.
        topic: String,
    },

    /// A topic of that name already exists.
    #[error("topic {topic} already exists")]
    TopicExists {
        /// The topic.
        topic: String,
    },

    /// The topic has no such partition.
    #[error("topic {topic} has no partition {partition} (it has {partitions})")]
    UnknownPartition {
        /// The topic.
        topic: String,
        /// The partition asked for.
        partition: u32,
        /// How many partitions the topic has.
        partitions: u32,
    },

    /// A producer's buffer stayed full for `max.block.ms`.
    #[error("producer buffer full for {waited_ms} ms (buffer.memory {buffer_memory} bytes)")]
    BufferExhausted {
        /// How long `send` waited.
        waited_ms: u64,
        /// The configured `buffer.memory`.
        buffer_memory: usize,
    },

    /// Appending the batch that held this record failed; every record of the
    /// batch gets the same error.
    #[error("send failed")]
    SendFailed {
        /// Why the batch's append failed.
        #[source]
        source: std::sync::Arc<Error>,
    },

    /// A commit came from a generation of the group that is over (the
    /// member missed a rebalance), or from a member the group removed.
    #[error(
        "commit refused: generation {generation} of group {group} is stale (current {current})"
    )]
    IllegalGeneration {
        /// The group.
        group: String,
        /// The generation the commit carried.
        generation: i32,
        /// The group's current generation.
        current: i32,
    },

    /// `auto.offset.reset=none` and the partition has no committed offset.
    #[error("no committed offset for {topic}-{partition} and auto.offset.reset is none")]
    NoOffsetForPartition {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
    },

    /// The operation needs a group without active members.
    #[error("group {group} has active members")]
    GroupNotEmpty {
        /// The group.
        group: String,
    },

    /// The consumer is not assigned that partition.
    #[error("{topic}-{partition} is not assigned to this consumer")]
    NotAssigned {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
    },

    /// The store or log was opened read-only.
    #[error("opened read-only")]
    ReadOnly,

    /// The log, store or producer has been closed.
    #[error("closed")]
    Closed,
}

impl Error {
    /// Wraps an I/O error, mapping `ENOSPC` to [`Error::DiskFull`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if source.raw_os_error() == Some(libc::ENOSPC)
            || source.kind() == io::ErrorKind::StorageFull
        {
            Error::DiskFull { op, path, source }
        } else {
            Error::Io { op, path, source }
        }
    }

    /// Damage of `kind` found in `path` at `position`.
    pub(crate) fn corrupt(
        path: impl Into<PathBuf>,
        position: u64,
        kind: impl Into<Corruption>,
    ) -> Self {
        let path = path.into();
        let kind = kind.into();
        crate::warn_event!(
            "refusing corrupt data in {} at position {position}: {kind}",
            path.display()
        );
        Error::Corrupt {
            path,
            position,
            kind,
        }
    }
}

/// What is wrong with a damaged file ([`Error::Corrupt`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// A record batch does not decode (or fails its CRC).
    #[error(transparent)]
    Batch(#[from] DecodeError),

    /// A batch's offsets break the log's order: the base offset (outside
    /// the CRC) is not above the previous batch's last offset, lies outside
    /// its segment, or does not continue the log where it must.
    #[error("batch offsets {base_offset}..={last_offset} {rule}")]
    BatchOffsets {
        /// The batch's base offset.
        base_offset: i64,
        /// The batch's last offset.
        last_offset: i64,
        /// The rule they break.
        rule: &'static str,
    },

    /// A sealed segment's size changed while the log had it open.
    #[error("sealed segment size changed from {expected} to {found} bytes")]
    SizeChanged {
        /// The size the log knew.
        expected: u64,
        /// The size found.
        found: u64,
    },

    /// A `.log` is larger than a Kafka segment can be (positions are 32-bit).
    #[error("segment of {size} bytes is over 2 GiB")]
    SegmentTooLarge {
        /// The file's size.
        size: u64,
    },

    /// A segment's batches need more index entries than
    /// `segment.index.bytes` holds (a roll would have happened first).
    #[error("batch at offset {offset} needs index entries beyond segment.index.bytes")]
    IndexOverflow {
        /// The base offset of the batch that does not fit.
        offset: i64,
    },

    /// A file or directory the store's metadata lists is missing (a
    /// segment the partition checkpoint lists, a partition directory
    /// `topics.meta` lists, `topics.meta` itself while logs hold records):
    /// records would be skipped or forgotten silently.
    #[error("missing: {what}")]
    Missing {
        /// What is missing.
        what: &'static str,
    },

    /// A sealed segment below the recovery point ends before the next
    /// segment's base offset: synced records are gone.
    #[error("sealed segment ends at offset {end}, before the next segment's base {next_base}")]
    SegmentEndsEarly {
        /// The offset after its last batch.
        end: i64,
        /// The next segment's base offset.
        next_base: i64,
    },

    /// The log ends before the checkpoint's recovery point: synced records
    /// are gone (a cut or deleted file).
    #[error("log ends at {log_end}, below the checkpoint's recovery point {recovery_point}")]
    BelowRecoveryPoint {
        /// The offset after the last batch found.
        log_end: i64,
        /// The recovery point the checkpoint holds.
        recovery_point: i64,
    },

    /// A metadata file's CRC-32 does not match its contents.
    #[error("file crc32 mismatch: stored {expected:#010x}, computed {actual:#010x}")]
    FileChecksum {
        /// The CRC stored in the file.
        expected: u32,
        /// The CRC computed over it.
        actual: u32,
    },

    /// A metadata file (checkpoint, topic metadata, offsets) holds
    /// something its format does not allow.
    #[error("malformed {what}")]
    Malformed {
        /// What is malformed.
        what: &'static str,
    },

    /// A value read back fails the validation it passed when written (a
    /// topic name, a config value, an offset record's group or topic): the
    /// error that validation gives.
    #[error("invalid value: {0}")]
    Invalid(Box<Error>),
}
