//! `kafkalite migrate`: replays a store's topics into a Kafka cluster through
//! the Kafka protocol, with an offset map in the store so an interrupted run
//! resumes without sending a record twice, then commits every group's
//! offsets translated through the map.
//!
//! Files: `wire.rs` (the requests and the batch as a client sends it),
//! `topics.rs` (checking, creating, waiting for leaders), `source.rs` (the
//! source partitions and resuming an interrupted run), `produce.rs` (the
//! send loop), `groups.rs` (the group offsets, translated).

mod groups;
mod produce;
mod source;
#[cfg(test)]
mod tests;
mod topics;
mod wire;

pub use wire::{fetch, list_offset};

use crate::kafka::Cluster;
use crate::offset_map::{self, OffsetMap};
use crate::util::CliResult;
use clap::Args;
use kafkalite::Store;
use std::collections::{BTreeMap, HashMap};

/// `migrate`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct MigrateArgs {
    /// The target cluster, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap_server: String,
    /// A topic to migrate (repeatable; every topic when absent).
    #[arg(long = "topic", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// Commit every group's offsets, translated, to the target (the default).
    #[arg(long, overrides_with = "no_groups")]
    pub groups: bool,
    /// Do not carry committed group offsets.
    #[arg(long)]
    pub no_groups: bool,
    /// Create missing topics with the same partition count and settings.
    #[arg(long)]
    pub create_topics: bool,
    /// Check and print the plan; send nothing, write no map.
    #[arg(long)]
    pub dry_run: bool,
}

/// Bytes read from the store per batch read.
const READ_BYTES: usize = 1 << 20;
/// Produce errors after which nothing was written: safe to resend.
const NOT_WRITTEN: [i16; 4] = [5, 6, 19, 15];

/// Runs `migrate` on an open (read-only) store.
pub fn migrate(store: &Store, args: &MigrateArgs) -> CliResult<()> {
    let topics: Vec<String> = if args.topics.is_empty() {
        store.list_topics()
    } else {
        args.topics.clone()
    };
    let mut counts = BTreeMap::new();
    for t in &topics {
        counts.insert(t.clone(), store.partition_count(t)?);
    }
    let mut cluster = Cluster::connect(&args.bootstrap_server)?;
    let meta = cluster.metadata(&topics)?;
    let to_create = topics::missing(args, &meta, &counts)?;
    if !to_create.is_empty() {
        topics::create(store, &mut cluster, args.dry_run, &to_create, &counts)?;
    }
    // Leaders of the topics that exist now (created ones included).
    let mut leaders: HashMap<String, Vec<i32>> = HashMap::new();
    if !args.dry_run || to_create.is_empty() {
        leaders = topics::wait_for_leaders(&mut cluster, &topics, &counts)?;
    }

    let cluster_name = cluster
        .cluster_id
        .clone()
        .unwrap_or_else(|| args.bootstrap_server.clone());
    let map_path = offset_map::path_for(store.path(), &cluster_name);
    let mut map = OffsetMap::load(&map_path)?;

    let parts = source::parts(store, &topics, &counts)?;
    let now = wire::now_ms();
    let oldest = source::prepare(
        &mut cluster,
        &parts,
        &mut map,
        &map_path,
        &leaders,
        args.dry_run,
    )?;
    source::warn_retention(&mut cluster, &oldest, now)?;
    if args.dry_run {
        source::print_plan(store, &parts, &map, args.no_groups);
        return Ok(());
    }
    map.save(&map_path)?;

    let sent = produce::produce(
        &mut cluster,
        &parts,
        &mut map,
        &map_path,
        &mut leaders,
        &topics,
    )?;
    let started = sent.started;
    let (sent_records, sent_bytes, total) = (sent.records, sent.bytes, sent.total);
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    for part in &parts {
        let key = (part.topic.clone(), part.partition);
        let m = &map.parts[&key];
        println!(
            "{}-{}: sent {} records this run; {} migrated in all; source next {} -> target next {}",
            part.topic,
            part.partition,
            sent_records.get(&key).copied().unwrap_or(0),
            m.records(),
            m.src_next,
            m.tgt_next
        );
    }
    println!(
        "migrated {total} records ({:.1} MB, {:.1} MB/s) to {}; offset map {}",
        sent_bytes as f64 / 1e6,
        sent_bytes as f64 / 1e6 / secs,
        cluster.bootstrap(),
        map_path.display()
    );
    if !args.no_groups {
        groups::commit_groups(store, &mut cluster, &map, &counts)?;
    }
    Ok(())
}
