//! The Kafka requests `migrate` and `import` make (ListOffsets, Fetch,
//! DescribeConfigs) and the batch as a client sends it.

use crate::kafka::{error_name, sb, tn, Cluster};
use crate::util::{CliError, CliResult};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    create_topics_request::CreatableTopicConfig,
    describe_configs_request::DescribeConfigsResource,
    fetch_request::{FetchPartition, FetchTopic},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    DescribeConfigsRequest, FetchRequest, ListOffsetsRequest,
};
use kafkalite::{BatchHeader, RecordBatch, Store};
use std::time::{SystemTime, UNIX_EPOCH};

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

pub(super) fn now_ms() -> i64 {
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

/// The topic settings Kafka knows, as CreateTopics configs.
pub(super) fn topic_configs(store: &Store, topic: &str) -> CliResult<Vec<CreatableTopicConfig>> {
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

pub(super) fn retention_ms(cluster: &mut Cluster, topic: &str) -> CliResult<Option<i64>> {
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
