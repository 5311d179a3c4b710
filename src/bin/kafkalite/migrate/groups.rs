//! The group offsets: every group's commits on the migrated topics,
//! translated through the offset map and committed on the target.

use crate::kafka::{error_name, sb, tn, Cluster};
use crate::offset_map::OffsetMap;
use crate::util::{CliError, CliResult};
use kafka_protocol::messages::{
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    GroupId, OffsetCommitRequest,
};
use kafkalite::Store;
use std::collections::BTreeMap;

/// Commits every group's committed offsets on the migrated topics,
/// translated through the map, as `alterConsumerGroupOffsets` does.
pub(super) fn commit_groups(
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
