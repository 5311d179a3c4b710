//! The send loop: rounds of one batch per partition, one request per
//! leader, the offset map saved around every request.

use super::source::{next_batch, Part};
use super::wire::{client_batch, record_offsets};
use super::NOT_WRITTEN;
use crate::kafka::{error_name, tn, Cluster};
use crate::offset_map::{OffsetMap, Pending};
use crate::util::{CliError, CliResult};
use kafka_protocol::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    ProduceRequest,
};
use kafkalite::RecordBatch;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

/// What one run sent.
pub(super) struct Sent {
    pub(super) started: Instant,
    /// Records per partition.
    pub(super) records: BTreeMap<(String, u32), i64>,
    pub(super) bytes: u64,
    pub(super) total: i64,
}

/// Sends every partition's batches from its map position to its end.
pub(super) fn produce(
    cluster: &mut Cluster,
    parts: &[Part],
    map: &mut OffsetMap,
    map_path: &Path,
    leaders: &mut HashMap<String, Vec<i32>>,
    topics: &[String],
) -> CliResult<Sent> {
    // Produce: rounds of one batch per partition, one request per leader,
    // one request in flight at a time, so a partition's batches land in
    // order and a retry resends the same batch before any later one.
    let started = Instant::now();
    let mut sent_records: BTreeMap<(String, u32), i64> = BTreeMap::new();
    let mut sent_bytes = 0u64;
    let mut total = 0i64;
    let mut last_progress = Instant::now();
    let mut retries = 0u32;
    // A test hook for scripts/migrate-e2e.sh: end the process right after
    // the Nth produce answer, before the map records it, as a crash there
    // would (the resumed run must find the batch on the target).
    let crash_after: Option<u64> = std::env::var("KAFKALITE_MIGRATE_TEST_CRASH_AFTER")
        .ok()
        .and_then(|v| v.parse().ok());
    let mut answers = 0u64;
    loop {
        let mut by_leader: BTreeMap<i32, Vec<(usize, RecordBatch)>> = BTreeMap::new();
        for (i, part) in parts.iter().enumerate() {
            let key = (part.topic.clone(), part.partition);
            let m = map
                .parts
                .get_mut(&key)
                .ok_or_else(|| CliError::msg("offset map entry"))?;
            let (batch, at) = next_batch(part, m.src_next)?;
            m.src_next = at;
            if let Some(b) = batch {
                let leader = leaders
                    .get(&part.topic)
                    .and_then(|l| l.get(part.partition as usize).copied())
                    .filter(|&l| l >= 0)
                    .ok_or_else(|| {
                        CliError::msg(format!(
                            "{}-{} has no leader on the target",
                            part.topic, part.partition
                        ))
                    })?;
                by_leader.entry(leader).or_default().push((i, b));
            }
        }
        if by_leader.is_empty() {
            break;
        }
        let mut refresh = false;
        for (leader, items) in by_leader {
            let mut topics_data: BTreeMap<String, Vec<PartitionProduceData>> = BTreeMap::new();
            for (i, b) in &items {
                let part = &parts[*i];
                let m = map
                    .parts
                    .get_mut(&(part.topic.clone(), part.partition))
                    .ok_or_else(|| CliError::msg("offset map entry"))?;
                m.pending = Some(Pending {
                    src_first: b.base_offset(),
                    tgt_end: m.tgt_next,
                    records: b.records_count(),
                    base_ts: b.header().base_timestamp,
                    max_ts: b.header().max_timestamp,
                });
                let mut pd = PartitionProduceData::default();
                pd.index = part.partition as i32;
                pd.records = Some(client_batch(b));
                topics_data.entry(part.topic.clone()).or_default().push(pd);
            }
            map.save(map_path)?;
            let mut req = ProduceRequest::default();
            req.acks = -1;
            req.timeout_ms = 30_000;
            req.topic_data = topics_data
                .into_iter()
                .map(|(t, pds)| {
                    let mut td = TopicProduceData::default();
                    td.name = tn(&t);
                    td.partition_data = pds;
                    td
                })
                .collect();
            let resp = match cluster.node(leader).and_then(|c| c.send(req, 12)) {
                Ok(r) => r,
                Err(e) => {
                    cluster.forget(leader);
                    map.save(map_path)?;
                    return Err(CliError::msg(format!(
                        "{}; the offset map {} records where it stopped: run the same command again to resume",
                        e.0,
                        map_path.display()
                    )));
                }
            };
            answers += 1;
            if crash_after == Some(answers) {
                eprintln!("kafkalite: test hook: stopping after produce answer {answers}");
                std::process::exit(3);
            }
            for (i, b) in &items {
                let part = &parts[*i];
                let key = (part.topic.clone(), part.partition);
                let r = resp
                    .responses
                    .iter()
                    .filter(|t| t.name.0.as_str() == part.topic)
                    .flat_map(|t| t.partition_responses.iter())
                    .find(|x| x.index == part.partition as i32);
                let m = map
                    .parts
                    .get_mut(&key)
                    .ok_or_else(|| CliError::msg("offset map entry"))?;
                let Some(r) = r else {
                    map.save(map_path)?;
                    return Err(CliError::msg(format!(
                        "the target did not answer for {}-{}; run again to resume",
                        part.topic, part.partition
                    )));
                };
                if r.error_code == 0 {
                    let offsets = record_offsets(b)?;
                    m.record(&offsets, r.base_offset);
                    m.pending = None;
                    total += offsets.len() as i64;
                    *sent_records.entry(key).or_default() += offsets.len() as i64;
                    sent_bytes += b.size() as u64;
                } else if NOT_WRITTEN.contains(&r.error_code) && retries < 50 {
                    m.pending = None;
                    refresh = true;
                    retries += 1;
                } else {
                    // Refused: not written, so nothing is pending.
                    m.pending = None;
                    map.save(map_path)?;
                    return Err(CliError::msg(format!(
                        "the target refused the batch at source offset {} of {}-{}: {}{}; \
                         everything before it is recorded in {} (run again to resume)",
                        b.base_offset(),
                        part.topic,
                        part.partition,
                        error_name(r.error_code),
                        r.error_message
                            .as_ref()
                            .map(|m| format!(": {}", m.as_str()))
                            .unwrap_or_default(),
                        map_path.display()
                    )));
                }
            }
            map.save(map_path)?;
        }
        if refresh {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let meta = cluster.metadata(topics)?;
            for (t, m) in meta {
                if let Some(m) = m {
                    leaders.insert(t, m.leaders);
                }
            }
        }
        if last_progress.elapsed().as_secs() >= 1 {
            last_progress = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            let per: Vec<String> = parts
                .iter()
                .filter_map(|part| {
                    let m = map.parts.get(&(part.topic.clone(), part.partition))?;
                    let left = (part.end - m.src_next).max(0);
                    Some(format!("{}-{} {left} left", part.topic, part.partition))
                })
                .collect();
            eprintln!(
                "progress: {total} records, {:.1} MB/s; {}",
                sent_bytes as f64 / 1e6 / secs,
                per.join(", ")
            );
        }
    }
    Ok(Sent {
        started,
        records: sent_records,
        bytes: sent_bytes,
        total,
    })
}
