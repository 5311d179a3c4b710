//! `kafkalite migrate`: replays a store's topics into a Kafka cluster through
//! the Kafka protocol, with an offset map in the store so an interrupted run
//! resumes without sending a record twice, then commits every group's
//! offsets translated through the map.

use crate::kafka::{error_name, sb, tn, Cluster};
use crate::offset_map::{self, OffsetMap, PartMap, Pending};
use crate::util::{CliError, CliResult};
use bytes::{Bytes, BytesMut};
use clap::Args;
use kafka_protocol::messages::{
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    describe_configs_request::DescribeConfigsResource,
    fetch_request::{FetchPartition, FetchTopic},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    produce_request::{PartitionProduceData, TopicProduceData},
    CreateTopicsRequest, DescribeConfigsRequest, FetchRequest, GroupId, ListOffsetsRequest,
    OffsetCommitRequest, ProduceRequest,
};
use kafkalite::{BatchHeader, RecordBatch, Store};
use std::collections::{BTreeMap, HashMap};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

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

/// The batch as a client sends it: base offset 0, no leader epoch, no
/// producer id, epoch or sequence and no transactional bit (a replay is
/// not the original producer's session), the CRC recomputed. Keys,
/// values, headers, timestamps, the timestamp type and the compressed
/// records are the stored bytes.
pub fn client_batch(batch: &RecordBatch) -> Bytes {
    let mut b = BytesMut::from(batch.as_bytes().as_ref());
    b[0..8].copy_from_slice(&0i64.to_be_bytes());
    b[12..16].copy_from_slice(&(-1i32).to_be_bytes());
    let attrs = i16::from_be_bytes([b[21], b[22]]) & !(0x10 | 0x20 | 0x40);
    b[21..23].copy_from_slice(&attrs.to_be_bytes());
    b[43..51].copy_from_slice(&(-1i64).to_be_bytes());
    b[51..53].copy_from_slice(&(-1i16).to_be_bytes());
    b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
    let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &b[21..]) as u32;
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// The source offsets of a batch's records, ascending.
pub fn record_offsets(batch: &RecordBatch) -> CliResult<Vec<i64>> {
    let h = batch.header();
    if i64::from(h.records_count) == i64::from(h.last_offset_delta) + 1 {
        return Ok((batch.base_offset()..=batch.last_offset()).collect());
    }
    // Compaction left gaps: the target numbers the records consecutively.
    Ok(batch.to_records()?.iter().map(|r| r.offset).collect())
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// ListOffsets for one partition: `ts` -1 latest, -2 earliest.
pub fn list_offset(
    cluster: &mut Cluster,
    topic: &str,
    partition: i32,
    leader: i32,
    ts: i64,
) -> CliResult<i64> {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = partition;
    p.current_leader_epoch = -1;
    p.timestamp = ts;
    let mut t = ListOffsetsTopic::default();
    t.name = tn(topic);
    t.partitions = vec![p];
    let mut req = ListOffsetsRequest::default();
    req.replica_id = crate::kafka::broker(-1);
    req.topics = vec![t];
    let resp = cluster.node(leader)?.send(req, 7)?;
    let part = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|x| x.partition_index == partition)
        .ok_or_else(|| CliError::msg(format!("ListOffsets: no answer for {topic}-{partition}")))?;
    if std::env::var_os("KAFKALITE_DEBUG_PROTOCOL").is_some() {
        eprintln!("<- ListOffsets {topic}-{partition} ts {ts}: {part:?}");
    }
    if part.error_code != 0 {
        return Err(CliError::msg(format!(
            "ListOffsets {topic}-{partition}: {}",
            error_name(part.error_code)
        )));
    }
    Ok(part.offset)
}

/// Fetches batches of one partition from `offset` (read uncommitted).
/// Returns the whole batches and the high watermark.
pub fn fetch(
    cluster: &mut Cluster,
    topic: &str,
    partition: i32,
    leader: i32,
    offset: i64,
    max_bytes: i32,
) -> CliResult<(Vec<Bytes>, i64)> {
    let mut p = FetchPartition::default();
    p.partition = partition;
    p.current_leader_epoch = -1;
    p.fetch_offset = offset;
    p.log_start_offset = -1;
    p.partition_max_bytes = max_bytes;
    let mut t = FetchTopic::default();
    t.topic = tn(topic);
    t.partitions = vec![p];
    let mut req = FetchRequest::default();
    req.replica_id = crate::kafka::broker(-1);
    req.max_wait_ms = 500;
    req.min_bytes = 1;
    req.max_bytes = max_bytes;
    req.isolation_level = 0;
    req.session_id = 0;
    req.session_epoch = -1;
    req.topics = vec![t];
    let resp = cluster.node(leader)?.send(req, 11)?;
    if resp.error_code != 0 {
        return Err(CliError::msg(format!(
            "Fetch {topic}-{partition}: {}",
            error_name(resp.error_code)
        )));
    }
    let part = resp
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|x| x.partition_index == partition)
        .ok_or_else(|| CliError::msg(format!("Fetch: no answer for {topic}-{partition}")))?;
    if part.error_code != 0 {
        return Err(CliError::msg(format!(
            "Fetch {topic}-{partition} at offset {offset}: {}",
            error_name(part.error_code)
        )));
    }
    let mut out = Vec::new();
    if let Some(records) = &part.records {
        let mut pos = 0usize;
        while let Some(rest) = records.get(pos..) {
            // A partial batch at the end is normal: the next fetch gets it.
            let Ok(h) = BatchHeader::parse(rest) else {
                break;
            };
            if rest.len() < h.size() {
                break;
            }
            out.push(records.slice(pos..pos + h.size()));
            pos += h.size();
        }
    }
    Ok((out, part.high_watermark))
}

/// One partition to migrate.
struct Part {
    topic: String,
    partition: u32,
    /// Where the source stops for this run (its last stable offset when the
    /// run began).
    end: i64,
    log: std::sync::Arc<kafkalite::PartitionLog>,
}

/// The next data batch of a partition at or after `from`, and the source
/// offset after the batches skipped before it (control batches,
/// aborted transactions, empty batches).
fn next_batch(part: &Part, from: i64) -> CliResult<(Option<RecordBatch>, i64)> {
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

/// The topic settings Kafka knows, as CreateTopics configs.
fn topic_configs(store: &Store, topic: &str) -> CliResult<Vec<CreatableTopicConfig>> {
    let d = store.describe_topic(topic)?;
    Ok(d.config
        .to_properties()
        .into_iter()
        // kafkalite's own settings mean nothing to Kafka (which refuses
        // unknown names).
        .filter(|(k, _)| !k.starts_with("kafkalite."))
        .map(|(k, v)| {
            let mut c = CreatableTopicConfig::default();
            c.name = sb(k);
            c.value = Some(sb(&v));
            c
        })
        .collect())
}

fn retention_ms(cluster: &mut Cluster, topic: &str) -> CliResult<Option<i64>> {
    let mut r = DescribeConfigsResource::default();
    r.resource_type = 2;
    r.resource_name = sb(topic);
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    let resp = cluster.any().send(req, 2)?;
    Ok(resp
        .results
        .iter()
        .filter(|r| r.error_code == 0)
        .flat_map(|r| r.configs.iter())
        .find(|c| c.name.as_str() == "retention.ms")
        .and_then(|c| c.value.as_ref())
        .and_then(|v| v.as_str().parse::<i64>().ok()))
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
    let mut to_create = Vec::new();
    for (t, &n) in &counts {
        match meta.get(t).and_then(Option::as_ref) {
            Some(m) if m.leaders.len() as u32 != n => {
                return Err(CliError::msg(format!(
                    "topic {t} has {} partitions on the target and {n} here: keys would land in \
                     other partitions; refusing (create it with {n} partitions, or migrate another topic)",
                    m.leaders.len()
                )))
            }
            Some(_) => {}
            None if args.create_topics => to_create.push(t.clone()),
            None => {
                return Err(CliError::msg(format!(
                    "topic {t} does not exist on the target; create it with {n} partitions or pass --create-topics"
                )))
            }
        }
    }
    if !to_create.is_empty() {
        if args.dry_run {
            for t in &to_create {
                println!("would create topic {t} with {} partitions", counts[t]);
            }
        } else {
            let mut req = CreateTopicsRequest::default();
            req.timeout_ms = 30_000;
            for t in &to_create {
                let mut ct = CreatableTopic::default();
                ct.name = tn(t);
                ct.num_partitions = counts[t] as i32;
                ct.replication_factor = -1;
                ct.configs = topic_configs(store, t)?;
                req.topics.push(ct);
            }
            let resp = cluster.any().send(req, 7)?;
            for r in resp.topics {
                if r.error_code != 0 && r.error_code != 36 {
                    return Err(CliError::msg(format!(
                        "creating topic {} on the target: {}{}",
                        r.name.0.as_str(),
                        error_name(r.error_code),
                        r.error_message
                            .map(|m| format!(": {}", m.as_str()))
                            .unwrap_or_default()
                    )));
                }
                println!(
                    "created topic {} with {} partitions",
                    r.name.0.as_str(),
                    counts.get(r.name.0.as_str()).copied().unwrap_or(0)
                );
            }
        }
    }
    // Leaders of the topics that exist now (created ones included).
    let mut leaders: HashMap<String, Vec<i32>> = HashMap::new();
    if !args.dry_run || to_create.is_empty() {
        for _ in 0..20 {
            let meta = cluster.metadata(&topics)?;
            leaders = meta
                .into_iter()
                .filter_map(|(t, m)| m.map(|m| (t, m.leaders)))
                .collect();
            let ready = topics.iter().all(|t| {
                leaders
                    .get(t)
                    .is_some_and(|l| l.len() as u32 == counts[t] && l.iter().all(|&x| x >= 0))
            });
            if ready {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
    }

    let cluster_name = cluster
        .cluster_id
        .clone()
        .unwrap_or_else(|| args.bootstrap_server.clone());
    let map_path = offset_map::path_for(store.path(), &cluster_name);
    let mut map = OffsetMap::load(&map_path)?;

    // The partitions, up to each one's last stable offset now.
    let mut parts = Vec::new();
    for t in &topics {
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
    let now = now_ms();
    let mut oldest: HashMap<String, i64> = HashMap::new();
    let mut resolved = false;
    for part in &parts {
        let key = (part.topic.clone(), part.partition);
        let leader = leaders
            .get(&part.topic)
            .and_then(|l| l.get(part.partition as usize).copied());
        if !map.parts.contains_key(&key) {
            let tgt_end = match leader {
                Some(l) if l >= 0 => {
                    list_offset(&mut cluster, &part.topic, part.partition as i32, l, -1)?
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
            if args.dry_run {
                println!(
                    "{}-{}: an interrupted send would be checked first",
                    part.topic, part.partition
                );
            } else if let Some(l) = leader {
                resolve_pending(&mut cluster, part, m, l)?;
                resolved = true;
            }
        }
        let src_next = m.src_next;
        if resolved {
            // Saved at once: a run stopped now need not look again.
            map.save(&map_path)?;
            resolved = false;
        }
        let (first, _) = next_batch(part, src_next)?;
        if let Some(b) = first {
            let ts = b.header().max_timestamp;
            let e = oldest.entry(part.topic.clone()).or_insert(ts);
            *e = (*e).min(ts);
        }
    }
    for (t, ts) in &oldest {
        let retention = match retention_ms(&mut cluster, t) {
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
    if args.dry_run {
        for part in &parts {
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
        if !args.no_groups {
            for g in store.list_groups() {
                println!("would commit the offsets of group {g}");
            }
        }
        return Ok(());
    }
    map.save(&map_path)?;

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
            map.save(&map_path)?;
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
                    map.save(&map_path)?;
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
                    map.save(&map_path)?;
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
                    map.save(&map_path)?;
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
            map.save(&map_path)?;
        }
        if refresh {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let meta = cluster.metadata(&topics)?;
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
        commit_groups(store, &mut cluster, &map, &counts)?;
    }
    Ok(())
}

/// Commits every group's committed offsets on the migrated topics,
/// translated through the map, as `alterConsumerGroupOffsets` does.
fn commit_groups(
    store: &Store,
    cluster: &mut Cluster,
    map: &OffsetMap,
    counts: &BTreeMap<String, u32>,
) -> CliResult<()> {
    for g in store.list_groups() {
        let d = store.describe_group(&g)?;
        let mut topics: BTreeMap<String, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        let mut shown = Vec::new();
        for o in &d.offsets {
            let tp = &o.partition;
            let Some(committed) = o.committed else {
                continue;
            };
            if !counts.contains_key(&*tp.topic) {
                continue;
            }
            let Some(m) = map.parts.get(&(tp.topic.to_string(), tp.partition)) else {
                continue;
            };
            let Some(target) = m.translate(committed) else {
                eprintln!(
                    "warning: group {g} committed {committed} on {}-{}, past what was migrated; not committed",
                    tp.topic, tp.partition
                );
                continue;
            };
            let meta = store
                .committed_offset(&g, &tp.topic, tp.partition)
                .map(|o| o.metadata)
                .unwrap_or_default();
            let mut p = OffsetCommitRequestPartition::default();
            p.partition_index = tp.partition as i32;
            p.committed_offset = target;
            p.committed_leader_epoch = -1;
            p.committed_metadata = Some(sb(&meta));
            topics.entry(tp.topic.to_string()).or_default().push(p);
            shown.push(format!(
                "{}-{} {committed}->{target}",
                tp.topic, tp.partition
            ));
        }
        if topics.is_empty() {
            continue;
        }
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(sb(&g));
        req.generation_id_or_member_epoch = -1;
        req.member_id = sb("");
        req.retention_time_ms = -1;
        req.topics = topics
            .into_iter()
            .map(|(t, ps)| {
                let mut rt = OffsetCommitRequestTopic::default();
                rt.name = tn(&t);
                rt.partitions = ps;
                rt
            })
            .collect();
        let resp = cluster.coordinator(&g)?.send(req, 8)?;
        for t in &resp.topics {
            for p in &t.partitions {
                if p.error_code != 0 {
                    let hint = if matches!(p.error_code, 22 | 25 | 27) {
                        " (the group has active members on the target: stop its consumers first)"
                    } else {
                        ""
                    };
                    return Err(CliError::msg(format!(
                        "committing group {g} on {}-{}: {}{hint}",
                        t.name.0.as_str(),
                        p.partition_index,
                        error_name(p.error_code)
                    )));
                }
            }
        }
        println!("group {g}: committed {}", shown.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafkalite::{BatchBuilder, Compression, Record};

    #[test]
    fn a_client_batch_keeps_records_and_drops_producer_state() {
        let mut b = BatchBuilder::new(Compression::Lz4);
        for i in 0..5u8 {
            b.push(
                &Record::new(vec![i, i])
                    .key(vec![i])
                    .timestamp(1000 + i64::from(i))
                    .header("h", vec![i]),
            );
        }
        let mut raw = BytesMut::from(b.build().as_ref());
        raw[0..8].copy_from_slice(&42i64.to_be_bytes());
        let stored = RecordBatch::decode(&raw.freeze()).unwrap();
        let sent = client_batch(&stored);
        let back = RecordBatch::decode(&sent).unwrap();
        let h = back.header();
        assert_eq!(
            (
                h.base_offset,
                h.producer_id,
                h.producer_epoch,
                h.base_sequence
            ),
            (0, -1, -1, -1)
        );
        assert_eq!(h.partition_leader_epoch, -1);
        assert_eq!(h.compression().unwrap(), Compression::Lz4);
        assert_eq!((h.base_timestamp, h.max_timestamp), (1000, 1004));
        let a: Vec<_> = stored
            .to_records()
            .unwrap()
            .into_iter()
            .map(|r| (r.key, r.value, r.timestamp, r.headers))
            .collect();
        let z: Vec<_> = back
            .to_records()
            .unwrap()
            .into_iter()
            .map(|r| (r.key, r.value, r.timestamp, r.headers))
            .collect();
        assert_eq!(a, z);
        assert_eq!(
            record_offsets(&stored).unwrap(),
            (42..47).collect::<Vec<_>>()
        );
    }

    /// Kafka's transactional vector (tests/data/transactional): a migration
    /// sends exactly the committed data records, never a marker or an
    /// aborted record, each batch without its transactional bit.
    #[test]
    fn only_committed_data_is_sent_from_a_transactional_log() {
        let vector =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transactional");
        let e: serde_json::Value =
            serde_json::from_slice(&std::fs::read(vector.join("expected.json")).unwrap()).unwrap();
        let aborted: Vec<i64> = e["aborted_offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let want: Vec<i64> = e["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["control"].as_bool().unwrap())
            .map(|r| r["offset"].as_i64().unwrap())
            .filter(|o| !aborted.contains(o))
            .collect();
        assert!(!aborted.is_empty() && !want.is_empty());

        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), kafkalite::StoreOptions::default()).unwrap();
        store
            .create_topic("t", 1, kafkalite::TopicConfig::default())
            .unwrap();
        let log = store.partition("t", 0).unwrap();
        let mut seg = std::fs::read(vector.join("00000000000000000000.log")).unwrap();
        log.append(&mut seg, kafkalite::Durability::Written)
            .unwrap();
        let part = Part {
            topic: "t".into(),
            partition: 0,
            end: log.last_stable_offset().unwrap(),
            log,
        };
        let mut m = PartMap::default();
        let mut sent: Vec<i64> = Vec::new();
        loop {
            let (batch, at) = next_batch(&part, m.src_next).unwrap();
            m.src_next = at;
            let Some(b) = batch else { break };
            let out = RecordBatch::decode(&client_batch(&b)).unwrap();
            assert!(!out.header().is_transactional() && !out.header().is_control());
            let offsets = record_offsets(&b).unwrap();
            sent.extend(&offsets);
            let base = m.tgt_next;
            m.record(&offsets, base);
        }
        assert_eq!(sent, want);
        assert_eq!(m.src_next, part.end);
        assert_eq!(m.records(), want.len() as i64);
        store.close().unwrap();
    }
}
