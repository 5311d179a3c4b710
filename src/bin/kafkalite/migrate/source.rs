//! The source side: the partitions to migrate, their next data batch, and
//! resuming an interrupted run (a send whose answer was never seen).

use super::wire::{fetch, list_offset, record_offsets, retention_ms};
use super::READ_BYTES;
use crate::kafka::Cluster;
use crate::offset_map::{OffsetMap, PartMap};
use crate::util::{CliError, CliResult};
use kafkalite::{BatchHeader, RecordBatch, Store};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One partition to migrate.
pub(super) struct Part {
    pub(super) topic: String,
    pub(super) partition: u32,
    /// Where the source stops for this run (its last stable offset when the
    /// run began).
    pub(super) end: i64,
    pub(super) log: std::sync::Arc<kafkalite::PartitionLog>,
}

/// The next data batch of a partition at or after `from`, and the source
/// offset after the batches skipped before it (control batches,
/// aborted transactions, empty batches).
pub(super) fn next_batch(part: &Part, from: i64) -> CliResult<(Option<RecordBatch>, i64)> {
    let mut at = from;
    while at < part.end {
        let read = part.log.read_committed(at, READ_BYTES)?;
        if read.is_empty() {
            break;
        }
        for b in read.batches() {
            if b.last_offset() < at {
                continue;
            }
            if b.base_offset() < at {
                return Err(CliError::msg(format!(
                    "{}-{}: the batch at {} straddles the migrated position {at} \
                     (the source was compacted between runs)",
                    part.topic,
                    part.partition,
                    b.base_offset()
                )));
            }
            if b.base_offset() >= part.end {
                return Ok((None, at));
            }
            if b.header().is_control() || b.records_count() == 0 {
                at = b.last_offset() + 1;
                continue;
            }
            return Ok((Some(b.clone()), at));
        }
        at = at.max(read.next_offset());
    }
    Ok((None, at.min(part.end).max(from)))
}

/// Resolves a send whose answer was never seen: landed (record it) or not
/// (forget it). Refuses when the target shows something else there.
fn resolve_pending(
    cluster: &mut Cluster,
    part: &Part,
    m: &mut PartMap,
    leader: i32,
) -> CliResult<()> {
    let Some(p) = m.pending else {
        return Ok(());
    };
    let (tp, pn) = (&part.topic, part.partition);
    // The first batch at or after the log end seen before the send must be
    // it. (Fetch from there: a broker's ListOffsets answer may point inside
    // its last batch — tansu 0.6's does — so batches starting below are
    // skipped.)
    let (batches, _) = fetch(cluster, tp, pn as i32, leader, p.tgt_end, 1 << 20)?;
    let first = batches
        .iter()
        .filter_map(|b| BatchHeader::parse(b).ok())
        .find(|h| h.base_offset >= p.tgt_end);
    match first {
        Some(h)
            if h.records_count == p.records
                && h.base_timestamp == p.base_ts
                && h.max_timestamp == p.max_ts =>
        {
            let (batch, _) = next_batch(part, p.src_first)?;
            let batch = batch.ok_or_else(|| {
                CliError::msg(format!(
                    "{tp}-{pn}: the source batch at {} of the interrupted send is gone",
                    p.src_first
                ))
            })?;
            let offsets = record_offsets(&batch)?;
            m.record(&offsets, h.base_offset);
            m.pending = None;
            eprintln!(
                "{tp}-{pn}: the interrupted send landed at target offset {}; recorded it",
                h.base_offset
            );
            Ok(())
        }
        None => {
            eprintln!("{tp}-{pn}: the interrupted send did not land; sending it again");
            m.pending = None;
            Ok(())
        }
        _ => Err(CliError::msg(format!(
            "{tp}-{pn}: a send was interrupted and the target now holds other records at offset {} \
             (another producer wrote to the topic?); cannot tell whether it landed, so nothing more is sent",
            p.tgt_end
        ))),
    }
}

/// The partitions, up to each one's last stable offset now.
pub(super) fn parts(
    store: &Store,
    topics: &[String],
    counts: &BTreeMap<String, u32>,
) -> CliResult<Vec<Part>> {
    let mut parts = Vec::new();
    for t in topics {
        for p in 0..counts[t] {
            let log = store.partition(t, p)?;
            let end = log.last_stable_offset()?;
            parts.push(Part {
                topic: t.clone(),
                partition: p,
                end,
                log,
            });
        }
    }
    Ok(parts)
}

/// Gives every partition its map entry (a new one starts at the target's
/// log end), resolves interrupted sends (checking them only, on a dry run),
/// and returns the oldest timestamp still to send per topic.
pub(super) fn prepare(
    cluster: &mut Cluster,
    parts: &[Part],
    map: &mut OffsetMap,
    map_path: &Path,
    leaders: &HashMap<String, Vec<i32>>,
    dry_run: bool,
) -> CliResult<HashMap<String, i64>> {
    let mut oldest: HashMap<String, i64> = HashMap::new();
    let mut resolved = false;
    for part in parts {
        let key = (part.topic.clone(), part.partition);
        let leader = leaders
            .get(&part.topic)
            .and_then(|l| l.get(part.partition as usize).copied());
        if !map.parts.contains_key(&key) {
            let tgt_end = match leader {
                Some(l) if l >= 0 => {
                    list_offset(cluster, &part.topic, part.partition as i32, l, -1)?
                }
                _ => 0,
            };
            if tgt_end > 0 {
                eprintln!(
                    "warning: {}-{} already holds {tgt_end} offsets on the target: migrated records \
                     get offsets from {tgt_end} on (the offset map translates group commits)",
                    part.topic, part.partition
                );
            }
            map.parts.insert(
                key.clone(),
                PartMap {
                    src_next: part.log.log_start_offset(),
                    tgt_next: tgt_end,
                    ..PartMap::default()
                },
            );
        }
        let m = map
            .parts
            .get_mut(&key)
            .ok_or_else(|| CliError::msg("offset map entry"))?;
        if m.pending.is_some() {
            if dry_run {
                println!(
                    "{}-{}: an interrupted send would be checked first",
                    part.topic, part.partition
                );
            } else if let Some(l) = leader {
                resolve_pending(cluster, part, m, l)?;
                resolved = true;
            }
        }
        let src_next = m.src_next;
        if resolved {
            // Saved at once: a run stopped now need not look again.
            map.save(map_path)?;
            resolved = false;
        }
        let (first, _) = next_batch(part, src_next)?;
        if let Some(b) = first {
            let ts = b.header().max_timestamp;
            let e = oldest.entry(part.topic.clone()).or_insert(ts);
            *e = (*e).min(ts);
        }
    }
    Ok(oldest)
}

/// Warns of topics whose retention on the target would delete the oldest
/// records to send soon after they arrive.
pub(super) fn warn_retention(
    cluster: &mut Cluster,
    oldest: &HashMap<String, i64>,
    now: i64,
) -> CliResult<()> {
    for (t, ts) in oldest {
        let retention = match retention_ms(cluster, t) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "warning: could not read retention.ms of topic {t} on the target: {}",
                    e.0
                );
                // The connection may be unusable after a failed request.
                cluster.reconnect()?;
                None
            }
        };
        if let Some(r) = retention {
            if r >= 0 && now.saturating_sub(*ts) > r {
                eprintln!(
                    "warning: topic {t} has retention.ms={r} on the target, and the oldest records to \
                     send have CreateTime {ts} ({} hours ago): the target will delete them soon after \
                     they arrive; raise retention.ms on the target first to keep them",
                    now.saturating_sub(*ts) / 3_600_000
                );
            }
        }
    }
    Ok(())
}

/// A dry run's plan: what each partition would send, which groups would
/// be committed.
pub(super) fn print_plan(store: &Store, parts: &[Part], map: &OffsetMap, no_groups: bool) {
    for part in parts {
        let m = &map.parts[&(part.topic.clone(), part.partition)];
        println!(
            "{}-{}: would send source offsets {}..{} (already migrated: {} records)",
            part.topic,
            part.partition,
            m.src_next,
            part.end,
            m.records()
        );
    }
    if !no_groups {
        for g in store.list_groups() {
            println!("would commit the offsets of group {g}");
        }
    }
}
