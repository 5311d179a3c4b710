//! The target's topics: refusing a partition-count mismatch, creating the
//! missing ones, waiting until every partition has a leader.

use super::wire::topic_configs;
use super::MigrateArgs;
use crate::kafka::{error_name, tn, Cluster};
use crate::util::{CliError, CliResult};
use kafka_protocol::messages::{create_topics_request::CreatableTopic, CreateTopicsRequest};
use kafkalite::Store;
use std::collections::{BTreeMap, HashMap};

/// The topics missing on the target, to create; an error for one that
/// exists with another partition count, or is missing without
/// `--create-topics`.
pub(super) fn missing(
    args: &MigrateArgs,
    meta: &HashMap<String, Option<crate::kafka::TopicMeta>>,
    counts: &BTreeMap<String, u32>,
) -> CliResult<Vec<String>> {
    let mut to_create = Vec::new();
    for (t, &n) in counts {
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
    Ok(to_create)
}

/// Creates `to_create` on the target with the source's partition counts
/// and settings (prints the plan only on a dry run).
pub(super) fn create(
    store: &Store,
    cluster: &mut Cluster,
    dry_run: bool,
    to_create: &[String],
    counts: &BTreeMap<String, u32>,
) -> CliResult<()> {
    if dry_run {
        for t in to_create {
            println!("would create topic {t} with {} partitions", counts[t]);
        }
    } else {
        let mut req = CreateTopicsRequest::default();
        req.timeout_ms = 30_000;
        for t in to_create {
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
    Ok(())
}

/// The leaders of the topics that exist on the target, asked again (20
/// times at most, 250 ms apart) until every partition has one.
pub(super) fn wait_for_leaders(
    cluster: &mut Cluster,
    topics: &[String],
    counts: &BTreeMap<String, u32>,
) -> CliResult<HashMap<String, Vec<i32>>> {
    let mut leaders: HashMap<String, Vec<i32>> = HashMap::new();
    for _ in 0..20 {
        let meta = cluster.metadata(topics)?;
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
    Ok(leaders)
}
