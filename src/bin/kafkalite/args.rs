//! The command line's definition (clap derive): subcommands and arguments.

use crate::perf;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// `--output`'s formats.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// Text for people.
    #[default]
    Text,
    /// JSON (serde_json) for programs.
    Json,
}

/// `--output text|json`, with `--json` kept as its alias.
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub output: OutputFormat,
    /// The same as `--output json`.
    #[arg(long)]
    pub json: bool,
}

impl OutputArgs {
    /// Whether JSON was asked for.
    pub fn json(self) -> bool {
        self.json || self.output == OutputFormat::Json
    }
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create, list, describe, alter and delete topics.
    #[command(subcommand)]
    Topics(TopicsCmd),
    /// Send one record per line of standard input.
    Produce(ProduceArgs),
    /// Print records, one per line.
    Consume(ConsumeArgs),
    /// List, describe, reset and delete consumer groups.
    #[command(subcommand)]
    Groups(GroupsCmd),
    /// Print the batches and records of segment files (kafka-dump-log.sh);
    /// does not open a store.
    Dump(DumpArgs),
    /// Check every segment and index of a store without opening it for
    /// writing, and report what recovery would do.
    Verify {
        /// Output format.
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Apply retention (retention.ms, retention.bytes) and compaction now,
    /// to one topic or all.
    Clean {
        /// The topic (all topics when absent).
        topic: Option<String>,
    },
    /// Make records below an offset unreadable and delete the segments
    /// wholly below it (kafka-delete-records.sh).
    DeleteRecords {
        /// The topic.
        topic: String,
        /// The partition.
        #[arg(long)]
        partition: u32,
        /// The new log start offset: records below it are deleted.
        #[arg(long, value_name = "OFFSET")]
        before: i64,
    },
    /// Producer and consumer performance tests.
    #[command(subcommand)]
    Perf(PerfCmd),
    /// Copy topics and committed group offsets to a Kafka cluster, through
    /// the Kafka protocol, resumably (an offset map in the store).
    #[cfg(feature = "migrate")]
    Migrate(crate::migrate::MigrateArgs),
    /// Bring a topic from a Kafka cluster into this store, batches as fetched.
    #[cfg(feature = "migrate")]
    Import(crate::import::ImportArgs),
}

/// `topics …`.
#[derive(Subcommand, Debug)]
pub enum TopicsCmd {
    /// Create a topic.
    Create {
        /// The topic name.
        name: String,
        /// Number of partitions.
        #[arg(long, default_value_t = 1)]
        partitions: u32,
        /// A topic setting by its Kafka name, e.g. retention.ms=3600000 (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// List the topics.
    List,
    /// Describe one topic, or all: config and per partition offsets, size, segments.
    Describe {
        /// The topic (all topics when absent).
        name: Option<String>,
        /// Output format (JSON: an array of topic descriptions).
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Delete a topic and its data.
    Delete {
        /// The topic name.
        name: String,
    },
    /// Add partitions or change settings.
    #[command(group = clap::ArgGroup::new("change").required(true).multiple(true))]
    Alter {
        /// The topic name.
        name: String,
        /// The new total number of partitions (partitions are only added).
        #[arg(long, group = "change")]
        partitions: Option<u32>,
        /// A setting to change, e.g. retention.ms=3600000 (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE", group = "change")]
        configs: Vec<String>,
    },
}

/// Kafka's `compression.type`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum CompressionArg {
    /// No compression.
    None,
    /// gzip (codec 1).
    Gzip,
    /// Snappy in xerial framing, as Kafka's Java client writes it (codec 2).
    Snappy,
    /// LZ4 frames, as Kafka writes them (codec 3).
    Lz4,
    /// Zstandard (codec 4).
    Zstd,
}

/// The acks analog.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum DurabilityArg {
    /// Handed to the producer (acks=0).
    None,
    /// In the page cache (acks=1).
    Written,
    /// On disk (acks=all).
    Fsync,
}

impl From<CompressionArg> for kafkalite::Compression {
    fn from(c: CompressionArg) -> Self {
        match c {
            CompressionArg::None => kafkalite::Compression::None,
            CompressionArg::Gzip => kafkalite::Compression::Gzip,
            CompressionArg::Snappy => kafkalite::Compression::Snappy,
            CompressionArg::Lz4 => kafkalite::Compression::Lz4,
            CompressionArg::Zstd => kafkalite::Compression::Zstd,
        }
    }
}

impl From<DurabilityArg> for kafkalite::Durability {
    fn from(d: DurabilityArg) -> Self {
        match d {
            DurabilityArg::None => kafkalite::Durability::None,
            DurabilityArg::Written => kafkalite::Durability::Written,
            DurabilityArg::Fsync => kafkalite::Durability::Fsync,
        }
    }
}

/// Producer settings shared by `produce` and `perf produce`.
#[derive(Args, Debug, Clone)]
pub struct ProducerArgs {
    /// compression.type of the batches.
    #[arg(long, value_enum, default_value = "none")]
    pub compression: CompressionArg,
    /// How far a record has gone when it counts as sent.
    #[arg(long, value_enum, default_value = "written")]
    pub durability: DurabilityArg,
    /// batch.size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    pub batch_size: usize,
    /// linger.ms.
    #[arg(long, value_name = "MS", default_value_t = 5)]
    pub linger_ms: u64,
}

/// `produce`'s arguments.
#[derive(Args, Debug)]
pub struct ProduceArgs {
    /// The topic.
    pub topic: String,
    /// Send every record to this partition (default: by key, else sticky).
    #[arg(long)]
    pub partition: Option<u32>,
    /// Text before the first SEP on a line is the key (lines without it have none).
    #[arg(long, value_name = "SEP")]
    pub key_separator: Option<String>,
    /// Producer settings.
    #[command(flatten)]
    pub producer: ProducerArgs,
    /// Print `PARTITION OFFSET` for each record once its durability level is
    /// reached (offset -1 under --durability none).
    #[arg(long)]
    pub print_offsets: bool,
}

/// `consume`'s arguments.
#[derive(Args, Debug)]
pub struct ConsumeArgs {
    /// The topic.
    pub topic: String,
    /// Consume as this group, committing as records are written.
    #[arg(long)]
    pub group: Option<String>,
    /// Start at the log start when there is no committed offset (default: the end).
    #[arg(long)]
    pub from_beginning: bool,
    /// Read only this partition.
    #[arg(long)]
    pub partition: Option<u32>,
    /// Start at this offset (needs --partition).
    #[arg(long, requires = "partition", allow_negative_numbers = true)]
    pub offset: Option<i64>,
    /// Stop after this many records.
    #[arg(long, value_name = "N")]
    pub max_records: Option<u64>,
    /// Stop when no record arrives for this long.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub timeout_ms: u64,
    /// Print the key before the value, tab-separated.
    #[arg(long)]
    pub print_key: bool,
    /// Print `Partition:P<TAB>Offset:O<TAB>` before each record.
    #[arg(long)]
    pub print_offset: bool,
    /// `isolation.level`: `read_committed` skips the records of aborted
    /// transactions (in segments Kafka's transactional producers wrote).
    #[arg(long, value_enum, default_value = "read-uncommitted")]
    pub isolation_level: IsolationArg,
}

/// Kafka's `isolation.level`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum IsolationArg {
    /// Every record (Kafka's default).
    ReadUncommitted,
    /// No records of aborted transactions; stop at an open one.
    ReadCommitted,
}

/// `groups …`.
#[derive(Subcommand, Debug)]
pub enum GroupsCmd {
    /// List consumer groups.
    List,
    /// A group's members and, per partition, committed offset, log end and lag.
    Describe {
        /// The group.
        group: String,
        /// Output format.
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Move a group's committed offsets on every partition of a topic.
    #[command(group = clap::ArgGroup::new("to").required(true))]
    ResetOffsets {
        /// The group.
        group: String,
        /// The topic.
        #[arg(long)]
        topic: String,
        /// To the log start.
        #[arg(long, group = "to")]
        to_earliest: bool,
        /// To the log end.
        #[arg(long, group = "to")]
        to_latest: bool,
        /// To this offset (clamped to the readable range).
        #[arg(long, group = "to", value_name = "OFFSET")]
        to_offset: Option<i64>,
        /// To the first record at or after this time: 2024-01-01T00:00:00Z
        /// (UTC unless a zone is given) or milliseconds since the epoch.
        #[arg(long, group = "to", value_name = "TIME")]
        to_datetime: Option<String>,
    },
    /// Delete a group's committed offsets.
    Delete {
        /// The group.
        group: String,
    },
}

/// `dump`'s arguments.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Segment files: `.log`, `.index` or `.timeindex`.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format (JSON: one object per record or index entry, key,
    /// value and header values in base64).
    #[command(flatten)]
    pub out: OutputArgs,
    /// Check each `.index` and `.timeindex` entry against its `.log`.
    #[arg(long)]
    pub verify_index: bool,
}

/// `perf …`.
#[derive(Subcommand, Debug)]
pub enum PerfCmd {
    /// Producer performance test (kafka-producer-perf-test.sh).
    Produce(perf::ProduceArgs),
    /// Consumer performance test (kafka-consumer-perf-test.sh).
    Consume(perf::ConsumeArgs),
    /// The partition log's append against plain write() of the same bytes,
    /// in alternating rounds (scratch files in --dir, removed afterwards).
    Append(perf::append::AppendArgs),
}
