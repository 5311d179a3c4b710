//! `kafkalite`: the command-line tool of a kafkalite store.
//!
//! Kafka's admin and console tools for a local store directory: topics,
//! a line-oriented producer and consumer, consumer groups, a segment dumper
//! (`kafka-dump-log.sh`), a read-only verifier, and the producer and consumer
//! performance tests. Every command that opens the store closes it cleanly on
//! the way out, also after an error; errors print one line,
//! `kafkalite: <error>`, and exit with status 1.

mod admin;
mod client;
mod dump;
mod perf;
mod segment;
mod util;
mod verify;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use util::{CliError, CliResult};

/// kafkalite: Kafka's storage engine in a local directory.
#[derive(Parser, Debug)]
#[command(name = "kafkalite", version, about, propagate_version = true)]
struct Cli {
    /// The store directory.
    #[arg(long, global = true, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
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
    Verify,
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
}

#[derive(Subcommand, Debug)]
enum TopicsCmd {
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

/// `none` or `lz4`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum CompressionArg {
    /// No compression.
    None,
    /// LZ4 frames, as Kafka writes them.
    Lz4,
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
            CompressionArg::Lz4 => kafkalite::Compression::Lz4,
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
    #[arg(long, requires = "partition")]
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
}

#[derive(Subcommand, Debug)]
enum GroupsCmd {
    /// List consumer groups.
    List,
    /// A group's members and, per partition, committed offset, log end and lag.
    Describe {
        /// The group.
        group: String,
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
    /// One JSON object per record (key, value and header values in base64).
    #[arg(long)]
    pub json: bool,
    /// Check each `.index` and `.timeindex` entry against its `.log`.
    #[arg(long)]
    pub verify_index: bool,
}

#[derive(Subcommand, Debug)]
enum PerfCmd {
    /// Producer performance test (kafka-producer-perf-test.sh).
    Produce(perf::ProduceArgs),
    /// Consumer performance test (kafka-consumer-perf-test.sh).
    Consume(perf::ConsumeArgs),
}

fn dir(cli_dir: Option<PathBuf>) -> CliResult<PathBuf> {
    cli_dir.ok_or_else(|| CliError::msg("--dir DIR is required for this command"))
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Dump(args) => dump::run(&args),
        Command::Verify => dump::verify(&dir(cli.dir)?),
        Command::Topics(cmd) => {
            let d = dir(cli.dir)?;
            match cmd {
                TopicsCmd::Create {
                    name,
                    partitions,
                    configs,
                } => util::with_store(&d, true, |s| {
                    admin::create_topic(s, &name, partitions, &configs)
                }),
                TopicsCmd::List => util::with_store(&d, false, admin::list_topics),
                TopicsCmd::Describe { name } => {
                    util::with_store(&d, false, |s| admin::describe_topics(s, name.as_deref()))
                }
                TopicsCmd::Delete { name } => {
                    util::with_store(&d, false, |s| Ok(s.delete_topic(&name)?))
                }
                TopicsCmd::Alter {
                    name,
                    partitions,
                    configs,
                } => util::with_store(&d, false, |s| {
                    admin::alter_topic(s, &name, partitions, &configs)
                }),
            }
        }
        Command::Produce(args) => {
            util::with_store(&dir(cli.dir)?, false, |s| client::produce(s, &args))
        }
        Command::Consume(args) => {
            util::with_store(&dir(cli.dir)?, false, |s| client::consume(s, &args))
        }
        Command::Groups(cmd) => {
            let d = dir(cli.dir)?;
            util::with_store(&d, false, |s| match cmd {
                GroupsCmd::List => {
                    for g in s.list_groups() {
                        println!("{g}");
                    }
                    Ok(())
                }
                GroupsCmd::Describe { group } => admin::describe_group(s, &group),
                GroupsCmd::ResetOffsets {
                    group,
                    topic,
                    to_earliest: _,
                    to_latest,
                    to_offset,
                    to_datetime,
                } => {
                    let to = if to_latest {
                        kafkalite::ResetTo::Latest
                    } else if let Some(o) = to_offset {
                        kafkalite::ResetTo::Offset(o)
                    } else if let Some(t) = to_datetime {
                        kafkalite::ResetTo::Timestamp(util::parse_time_ms(&t)?)
                    } else {
                        kafkalite::ResetTo::Earliest
                    };
                    admin::reset_offsets(s, &group, &topic, to)
                }
                GroupsCmd::Delete { group } => {
                    let n = s.delete_group(&group)?;
                    println!("deleted group {group} ({n} committed offsets)");
                    Ok(())
                }
            })
        }
        Command::Clean { topic } => {
            util::with_store(&dir(cli.dir)?, false, |s| admin::clean(s, topic.as_deref()))
        }
        Command::DeleteRecords {
            topic,
            partition,
            before,
        } => util::with_store(&dir(cli.dir)?, false, |s| {
            let start = s.delete_records(&topic, partition, before)?;
            println!("{topic}-{partition}: log start offset is now {start}");
            Ok(())
        }),
        Command::Perf(PerfCmd::Produce(args)) => perf::produce(&dir(cli.dir)?, &args),
        Command::Perf(PerfCmd::Consume(args)) => perf::consume(&dir(cli.dir)?, &args),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // Usage errors in one line too, as every other error.
            let rendered = e.render().to_string();
            let first: Vec<&str> = rendered
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .map(str::trim)
                .collect();
            let first = first.join(" ");
            let first = first.strip_prefix("error: ").unwrap_or(&first);
            eprintln!("kafkalite: {first} (see --help)");
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError(msg)) => {
            eprintln!("kafkalite: {msg}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
