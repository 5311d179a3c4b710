//! `kafkalite`: the command-line tool of a kafkalite store.
//!
//! Kafka's admin and console tools for a local store directory: topics,
//! a line-oriented producer and consumer, consumer groups, a segment dumper
//! (`kafka-dump-log.sh`), a read-only verifier, and the producer and consumer
//! performance tests. Every command that opens the store closes it cleanly on
//! the way out, also after an error; errors print one line,
//! `kafkalite: <error>`, and exit with status 1.

mod admin;
mod args;
mod client;
mod dump;
#[cfg(feature = "migrate")]
mod import;
#[cfg(feature = "migrate")]
mod kafka;
#[cfg(feature = "migrate")]
mod migrate;
#[cfg(feature = "migrate")]
mod offset_map;
mod perf;
#[path = "../../sample.rs"]
mod sample;

mod segment;
mod util;
mod verify;

use args::{Command, GroupsCmd, PerfCmd, TopicsCmd};
pub use args::{ConsumeArgs, DumpArgs, ProduceArgs, ProducerArgs};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use util::{CliError, CliResult};

/// kafkalite: Kafka's storage engine in a local directory.
#[derive(Parser, Debug)]
#[command(name = "kafkalite", version, propagate_version = true)]
struct Cli {
    /// The store directory.
    #[arg(long, global = true, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

fn dir(cli_dir: Option<PathBuf>) -> CliResult<PathBuf> {
    cli_dir.ok_or_else(|| CliError::msg("--dir DIR is required for this command"))
}

fn run(cli: Cli) -> CliResult<()> {
    match cli.command {
        Command::Dump(args) => dump::run(&args),
        Command::Verify { out } => verify::verify(&dir(cli.dir)?, out.json()),
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
                TopicsCmd::List => util::with_store_read_only(&d, admin::list_topics),
                TopicsCmd::Describe { name, out } => util::with_store_read_only(&d, |s| {
                    admin::describe_topics(s, name.as_deref(), out.json())
                }),
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
        // Without a group nothing is committed: read-only, so a live store
        // can be tailed while its owner writes.
        Command::Consume(args) if args.group.is_none() => {
            util::with_store_read_only(&dir(cli.dir)?, |s| client::consume(s, &args))
        }
        Command::Consume(args) => {
            util::with_store(&dir(cli.dir)?, false, |s| client::consume(s, &args))
        }

        Command::Groups(cmd) => {
            let d = dir(cli.dir)?;
            // Listing and describing only read: they work on a live store.
            let read_only = matches!(cmd, GroupsCmd::List | GroupsCmd::Describe { .. });
            let run = |s: &kafkalite::Store| match cmd {
                GroupsCmd::List => {
                    for g in s.list_groups() {
                        println!("{g}");
                    }
                    Ok(())
                }
                GroupsCmd::Describe { group, out } => admin::describe_group(s, &group, out.json()),
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
            };
            if read_only {
                util::with_store_read_only(&d, run)
            } else {
                util::with_store(&d, false, run)
            }
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
        Command::Perf(PerfCmd::Append(args)) => perf::append::append(&dir(cli.dir)?, &args),
        // Read-only: a live store migrates up to its last stable offset.
        #[cfg(feature = "migrate")]
        Command::Migrate(args) => {
            util::with_store_read_only(&dir(cli.dir)?, |s| migrate::migrate(s, &args))
        }
        #[cfg(feature = "migrate")]
        Command::Import(args) => {
            util::with_store(&dir(cli.dir)?, true, |s| import::import(s, &args))
        }
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
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
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
