//! Settings of one partition log, with Kafka's names and defaults.

use crate::io::FsHandle;
use std::time::Duration;

/// How much an append has reached when it returns: the embedded analog of
/// Kafka's `acks`, since there are no replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Durability {
    /// Handed over (acks=0). For a direct log append this is the same as
    /// `Written`; a producer returns before the write happens.
    None,
    /// In the operating system's page cache when the append returns (acks=1):
    /// survives a process crash, not a power loss.
    #[default]
    Written,
    /// On disk (fdatasync) when the append returns (acks=all). Concurrent
    /// appenders share one fsync (group commit).
    Fsync,
}

/// How reads reach a segment's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum ReadMode {
    /// Zero-copy slices of a memory map of the segment (default).
    #[default]
    Mmap,
    /// `pread` into a fresh buffer: one copy, no memory maps of `.log` files.
    Pread,
}

/// Configuration of a partition log. Field names follow Kafka's topic
/// settings; each field's doc ends with its default.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LogConfig {
    /// `segment.bytes`: the active segment rolls before it would exceed this.
    /// At most 2 GiB (positions are 32-bit). Default: 1 GiB.
    pub segment_bytes: u32,
    /// `segment.ms`: the active segment rolls once its first batch is this
    /// old. Default: 7 days.
    #[cfg_attr(feature = "serde", serde(with = "crate::serde_impls::duration_ms"))]
    pub segment_ms: Duration,
    /// `segment.index.bytes`: the most each index file may hold (disk is
    /// reserved in small steps as entries are added); a full index rolls
    /// the segment. Default: 10 MiB.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: log bytes between offset-index entries.
    /// Default: 4096.
    pub index_interval_bytes: u32,
    /// `max.message.bytes`: the largest batch accepted. Default: 1 MiB + 12.
    pub max_message_bytes: u32,
    /// `flush.messages`: fsync after this many messages were appended since
    /// the last fsync. Default: none (durability is chosen per append).
    pub flush_messages: Option<u64>,
    /// `flush.ms`: fsync when data older than this is unsynced (checked by
    /// [`PartitionLog::flush_if_due`](crate::PartitionLog::flush_if_due)).
    /// Default: none.
    #[cfg_attr(
        feature = "serde",
        serde(with = "crate::serde_impls::option_duration_ms")
    )]
    pub flush_ms: Option<Duration>,
    /// How reads reach segment bytes. Default: [`ReadMode::Mmap`].
    pub read_mode: ReadMode,
    /// The file system every file operation goes through. Default: the
    /// operating system's ([`OsFileSystem`](crate::io::OsFileSystem)).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub file_system: FsHandle,
    /// The log belongs to a [`Store`](crate::Store), whose directory lock
    /// covers it: no lock file (and descriptor) of its own.
    pub(crate) store_locked: bool,
    /// The open-segment cache the log's segments are listed in: the store's
    /// (see `kafkalite.max.open.segments`), or one of the log's own.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) open_cache: super::segment::SegmentCache,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: Duration::from_secs(7 * 24 * 3600),
            segment_index_bytes: 10 << 20,
            index_interval_bytes: 4096,
            max_message_bytes: (1 << 20) + 12,
            flush_messages: None,
            flush_ms: None,
            read_mode: ReadMode::Mmap,
            file_system: FsHandle::default(),
            store_locked: false,
            open_cache: super::segment::SegmentCache::default(),
        }
    }
}

impl LogConfig {
    /// Checks the values are usable.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the setting.
    pub fn validate(&self) -> crate::Result<()> {
        use crate::Error::InvalidConfig;
        if self.segment_bytes < 128 || self.segment_bytes > i32::MAX as u32 {
            return Err(InvalidConfig {
                key: "segment.bytes",
                reason: "must be between 128 bytes and 2 GiB - 1",
            });
        }
        if self.segment_index_bytes < 24 {
            return Err(InvalidConfig {
                key: "segment.index.bytes",
                reason: "must hold at least two time index entries (24 bytes)",
            });
        }
        if self.max_message_bytes < 61 {
            return Err(InvalidConfig {
                key: "max.message.bytes",
                reason: "must hold at least a batch header (61 bytes)",
            });
        }
        if self.segment_ms.is_zero() {
            return Err(InvalidConfig {
                key: "segment.ms",
                reason: "must be positive",
            });
        }
        crate::config::check_millis("segment.ms", self.segment_ms)?;
        if self.flush_messages == Some(0) {
            return Err(InvalidConfig {
                key: "flush.messages",
                reason: "must be positive",
            });
        }
        // Kafka's Long.MAX_VALUE means "never", which is `None` here.
        if self.flush_messages.is_some_and(|n| n >= i64::MAX as u64) {
            return Err(InvalidConfig {
                key: "flush.messages",
                reason: "must be below 9223372036854775807 (none means never)",
            });
        }
        if let Some(d) = self.flush_ms {
            crate::config::check_millis("flush.ms", d)?;
            if d.as_millis() >= i64::MAX as u128 {
                return Err(InvalidConfig {
                    key: "flush.ms",
                    reason: "must be below 9223372036854775807 (none means never)",
                });
            }
        }
        for (key, n) in [
            ("segment.index.bytes", self.segment_index_bytes),
            ("index.interval.bytes", self.index_interval_bytes),
            ("max.message.bytes", self.max_message_bytes),
        ] {
            if n > i32::MAX as u32 {
                return Err(InvalidConfig {
                    key,
                    reason: "outside Kafka's INT range (at most 2147483647)",
                });
            }
        }
        Ok(())
    }
}
