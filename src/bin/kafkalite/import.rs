//! `kafkalite import`: fetches a topic from a Kafka cluster into the local
//! store, each batch appended as fetched (compression, timestamps,
//! producer ids and transaction markers kept, so `read_committed` leaves
//! aborted transactions out locally as it does on the cluster).

use crate::kafka::{error_name, sb, tn, Cluster};
use crate::migrate::{fetch, list_offset};
use crate::util::{CliError, CliResult};
use bytes::BytesMut;
use clap::Args;
use kafka_protocol::messages::{
    offset_fetch_request::OffsetFetchRequestTopic, GroupId, OffsetFetchRequest,
};
use kafkalite::{BatchHeader, Durability, Store, TopicConfig};

/// `import`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// The source cluster, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap_server: String,
    /// The topic to import (created locally with the same partition count).
    #[arg(long)]
    pub topic: String,
    /// Start at each partition's log start (the default).
    #[arg(long, conflicts_with = "group")]
    pub from_beginning: bool,
    /// Start at this group's committed offsets (the log start where it has
    /// none).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
}

/// The group's committed offsets on `topic` (-1 where none).
fn group_offsets(cluster: &mut Cluster, group: &str, topic: &str, n: usize) -> CliResult<Vec<i64>> {
    let mut t = OffsetFetchRequestTopic::default();
    t.name = tn(topic);
    t.partition_indexes = (0..n as i32).collect();
    let mut req = OffsetFetchRequest::default();
    req.group_id = GroupId(sb(group));
    req.topics = Some(vec![t]);
    let resp = cluster.coordinator(group)?.send(req, 7)?;
    if resp.error_code != 0 {
        return Err(CliError::msg(format!(
            "fetching the offsets of group {group}: {}",
            error_name(resp.error_code)
        )));
    }
    let mut out = vec![-1; n];
    for p in resp.topics.iter().flat_map(|t| t.partitions.iter()) {
        if p.error_code != 0 {
            return Err(CliError::msg(format!(
                "fetching the offset of group {group} on {topic}-{}: {}",
                p.partition_index,
                error_name(p.error_code)
            )));
        }
        if let Some(slot) = usize::try_from(p.partition_index)
            .ok()
            .and_then(|i| out.get_mut(i))
        {
            *slot = p.committed_offset;
        }
    }
    Ok(out)
}

/// Runs `import` on an open store.
pub fn import(store: &Store, args: &ImportArgs) -> CliResult<()> {
    let topic = &args.topic;
    let mut cluster = Cluster::connect(&args.bootstrap_server)?;
    let meta = cluster.metadata(std::slice::from_ref(topic))?;
    let leaders = meta
        .get(topic)
        .and_then(Option::as_ref)
        .map(|m| m.leaders.clone())
        .ok_or_else(|| CliError::msg(format!("topic {topic} does not exist on the cluster")))?;
    let n = leaders.len();
    if store.list_topics().contains(topic) {
        let local = store.partition_count(topic)? as usize;
        if local != n {
            return Err(CliError::msg(format!(
                "topic {topic} has {local} partitions here and {n} on the cluster; refusing"
            )));
        }
    } else {
        store.create_topic(topic, n as u32, TopicConfig::default())?;
    }
    let starts = match &args.group {
        Some(g) => group_offsets(&mut cluster, g, topic, n)?,
        None => vec![-1; n],
    };
    let mut total = 0i64;
    for (p, &leader) in leaders.iter().enumerate() {
        let pi = p as i32;
        let earliest = list_offset(&mut cluster, topic, pi, leader, -2)?;
        let end = list_offset(&mut cluster, topic, pi, leader, -1)?;
        let start = if starts[p] >= 0 {
            starts[p].max(earliest)
        } else {
            earliest
        };
        let log = store.partition(topic, p as u32)?;
        let local_start = log.log_end_offset();
        let mut at = start;
        let mut records = 0i64;
        let mut first_local = None;
        while at < end {
            let (batches, _) = fetch(&mut cluster, topic, pi, leader, at, 8 << 20)?;
            if batches.is_empty() {
                break;
            }
            let before = at;
            if let Some(h) = batches.first().and_then(|b| BatchHeader::parse(b).ok()) {
                if h.base_offset > at {
                    eprintln!(
                        "warning: {topic}-{p}: the cluster answered a fetch at offset {at} with \
                         batches from offset {}: records {at}..{} were not returned (a broker bug: \
                         tansu 0.6 skips the rest of a batch fetched mid-batch)",
                        h.base_offset, h.base_offset
                    );
                }
            }
            for b in batches {
                let h = BatchHeader::parse(&b)?;
                if h.last_offset() < at {
                    continue;
                }
                let mut buf = BytesMut::from(b.as_ref());
                let info = log.append(&mut buf, Durability::Written).map_err(|e| {
                    CliError::msg(format!(
                        "{topic}-{p}: the batch fetched at offset {} cannot be stored: {e}",
                        h.base_offset
                    ))
                })?;
                first_local.get_or_insert(info.base_offset);
                if !h.is_control() {
                    records += i64::from(h.records_count);
                }
                at = h.last_offset() + 1;
            }
            if at == before {
                return Err(CliError::msg(format!(
                    "{topic}-{p}: the cluster answered a fetch at offset {at} with nothing at or after it"
                )));
            }
        }
        log.flush()?;
        total += records;
        println!(
            "{topic}-{p}: imported {records} records, cluster offsets {start}..{at} -> local offsets {}..{}",
            first_local.unwrap_or(local_start),
            log.log_end_offset()
        );
    }
    println!(
        "imported {total} records of {topic} from {}",
        cluster.bootstrap()
    );
    Ok(())
}
