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
    /// `pread`: one copy, no memory maps of `.log` files. A thread reads
    /// into the buffer of one of its last two reads again once nothing holds
    /// that read's bytes (two buffers of at most 4 MiB a thread), else into a
    /// new one.
    Pread,
}

/// The settings of a partition log that a topic config also holds: Kafka's
/// segment, index, batch-size and flush settings, each defined, defaulted
/// and validated here once. [`TopicConfig::log`](crate::TopicConfig::log)
/// holds them for a topic, [`LogConfig::settings`] for one log. Each
/// field's doc names the Kafka setting and ends with its default.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LogSettings {
    /// `segment.bytes`: the active segment rolls before it would exceed this.
    /// At least 128 bytes, at most 2 GiB − 1 (positions are 32-bit).
    /// Default: 1 GiB.
    pub segment_bytes: u32,
    /// `segment.ms`: the active segment rolls once its first batch is this
    /// old. Positive, whole milliseconds. Default: 7 days.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "segment_ms", with = "crate::serde_impls::duration_ms")
    )]
    pub segment_max_age: Duration,
    /// `segment.index.bytes`: the most each index file may hold (disk is
    /// reserved in small steps as entries are added); a full index rolls
    /// the segment. At least 24 bytes. Default: 10 MiB.
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: log bytes between offset-index entries.
    /// Default: 4096.
    pub index_interval_bytes: u32,
    /// `max.message.bytes`: the largest batch accepted. At least 61 bytes
    /// (a batch header). Default: 1 MiB + 12.
    pub max_message_bytes: u32,
    /// `flush.messages`: fsync after this many messages were appended since
    /// the last fsync. Default: none (durability is chosen per append;
    /// Kafka's `Long.MAX_VALUE`).
    pub flush_messages: Option<u64>,
    /// `flush.ms`: fsync when unsynced data is older than this (checked by
    /// [`PartitionLog::flush_if_due`](crate::PartitionLog::flush_if_due),
    /// which a store's background thread calls). Whole milliseconds.
    /// Default: none (Kafka's `Long.MAX_VALUE`).
    #[cfg_attr(
        feature = "serde",
        serde(rename = "flush_ms", with = "crate::serde_impls::option_duration_ms")
    )]
    pub flush_max_age: Option<Duration>,
}

impl Default for LogSettings {
    fn default() -> Self {
        LogSettings {
            segment_bytes: 1 << 30,
            segment_max_age: Duration::from_secs(7 * 24 * 3600),
            segment_index_bytes: 10 << 20,
            index_interval_bytes: 4096,
            max_message_bytes: (1 << 20) + 12,
            flush_messages: None,
            flush_max_age: None,
        }
    }
}

impl LogSettings {
    /// Checks the values are usable. Everything it accepts reads back
    /// unchanged from its text form (the `key=value` pairs of
    /// [`TopicConfig::to_properties`](crate::TopicConfig::to_properties)):
    /// durations are whole milliseconds and, like every number, within
    /// Kafka's range for the setting (`LONG` or `INT`).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the setting.
    pub fn validate(&self) -> crate::Result<()> {
        use super::limits::{check_millis, INT_MAX, LONG_MAX};
        use crate::Error::InvalidConfig;
        if self.segment_bytes < 128 || self.segment_bytes > INT_MAX {
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
        if self.segment_max_age.is_zero() {
            return Err(InvalidConfig {
                key: "segment.ms",
                reason: "must be positive",
            });
        }
        check_millis("segment.ms", self.segment_max_age)?;
        if self.flush_messages == Some(0) {
            return Err(InvalidConfig {
                key: "flush.messages",
                reason: "must be positive",
            });
        }
        // Kafka's Long.MAX_VALUE means "never", which is `None` here.
        if self.flush_messages.is_some_and(|n| n >= LONG_MAX) {
            return Err(InvalidConfig {
                key: "flush.messages",
                reason: "must be below 9223372036854775807 (none means never)",
            });
        }
        if let Some(d) = self.flush_max_age {
            check_millis("flush.ms", d)?;
            if d.as_millis() >= u128::from(LONG_MAX) {
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
            if n > INT_MAX {
                return Err(InvalidConfig {
                    key,
                    reason: "outside Kafka's INT range (at most 2147483647)",
                });
            }
        }
        Ok(())
    }
}

/// Configuration of a partition log: its [`LogSettings`] and how the log
/// reaches its files.
///
/// ```
/// use kafkalite::{LogConfig, LogSettings, ReadMode};
/// let mut config = LogConfig::from(LogSettings::default());
/// config.settings.segment_bytes = 64 << 20;
/// config.read_mode = ReadMode::Pread;
/// config.validate()?;
/// # Ok::<(), kafkalite::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct LogConfig {
    /// The segment, index, batch-size and flush settings (in JSON, their
    /// fields sit beside `read_mode`). Default: Kafka's.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub settings: LogSettings,
    /// How reads reach segment bytes. Default: [`ReadMode::Mmap`].
    pub read_mode: ReadMode,
    /// The file system every file operation goes through. Default: the
    /// operating system's ([`OsFileSystem`](crate::io::OsFileSystem)).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub file_system: FsHandle,
    /// Write-behind (not a Kafka setting; RocksDB's `bytes_per_sync`):
    /// every time a segment's appends cross another
    /// multiple of this many bytes, the disk writes of the bytes before it
    /// are started in the background
    /// ([`FileSystem::start_writeback`](crate::io::FileSystem::start_writeback)),
    /// so a later flush or fsync waits for the rest only, instead of for
    /// everything buffered since the last one. The process's write-behind
    /// thread runs where a core is free (Linux `SCHED_IDLE`): while every
    /// core is busy appending, the disk writes wait, up to a budget of half
    /// the kernel's background-writeback threshold (at most 1 GiB), past
    /// which a second thread at normal priority starts them; a flush then
    /// waits for what waited. A hint: what is durable when is unchanged. 0
    /// turns it off. Default: 1 MiB.
    pub writeback_bytes: u64,
    /// The log belongs to a [`Store`](crate::Store), whose directory lock
    /// covers it: no lock file (and descriptor) of its own.
    pub(crate) store_locked: bool,
    /// The open-segment cache the log's segments are listed in: the store's
    /// (see `kafkalite.max.open.segments`), or one of the log's own.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) open_cache: super::segment::SegmentCache,
}

/// The default of [`LogConfig::writeback_bytes`] and
/// [`StoreOptions::writeback_bytes`](crate::StoreOptions::writeback_bytes).
pub(crate) const WRITEBACK_DEFAULT: u64 = 1 << 20;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            settings: LogSettings::default(),
            read_mode: ReadMode::default(),
            file_system: FsHandle::default(),
            writeback_bytes: WRITEBACK_DEFAULT,
            store_locked: false,
            open_cache: super::segment::SegmentCache::default(),
        }
    }
}

impl From<LogSettings> for LogConfig {
    /// These settings, with the default read mode and file system.
    fn from(settings: LogSettings) -> Self {
        LogConfig {
            settings,
            ..LogConfig::default()
        }
    }
}

impl LogConfig {
    /// Checks the values are usable: [`LogSettings::validate`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the setting.
    pub fn validate(&self) -> crate::Result<()> {
        self.settings.validate()
    }
}
