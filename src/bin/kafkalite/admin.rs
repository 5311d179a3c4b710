//! `topics …` and `groups …`: the admin commands (kafka-topics.sh,
//! kafka-consumer-groups.sh).

use crate::util::{print_json, CliError, CliResult};
use kafkalite::{ResetTo, Store, TopicConfig};

/// Applies `key=value` settings to `config`.
fn apply_configs(config: &mut TopicConfig, settings: &[String]) -> CliResult<()> {
    for kv in settings {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| CliError::msg(format!("invalid --config {kv:?}: expected KEY=VALUE")))?;
        config.set(k.trim(), v.trim()).map_err(|e| {
            let mut e = CliError::from(e);
            if !kafkalite::TOPIC_KEYS.contains(&k.trim()) {
                e.0.push_str(&format!(
                    " (topic settings: {})",
                    kafkalite::TOPIC_KEYS.join(", ")
                ));
            }
            e
        })?;
    }
    Ok(())
}

/// `topics create`.
pub fn create_topic(
    store: &Store,
    name: &str,
    partitions: u32,
    settings: &[String],
) -> CliResult<()> {
    let mut config = TopicConfig::default();
    apply_configs(&mut config, settings)?;
    store.create_topic(name, partitions, config)?;
    println!("created topic {name} with {partitions} partitions");
    Ok(())
}

/// `topics list`.
pub fn list_topics(store: &Store) -> CliResult<()> {
    for t in store.list_topics() {
        println!("{t}");
    }
    Ok(())
}

/// `topics describe [NAME]`; with `json`, one JSON array of the
/// descriptions (`TopicDescription`'s serde form).
pub fn describe_topics(store: &Store, name: Option<&str>, json: bool) -> CliResult<()> {
    let names = match name {
        Some(n) => vec![n.to_owned()],
        None => store.list_topics(),
    };
    let descriptions = names
        .iter()
        .map(|n| store.describe_topic(n))
        .collect::<Result<Vec<_>, _>>()?;
    if json {
        return print_json(&descriptions);
    }
    let defaults = TopicConfig::default().to_properties();
    for d in descriptions {
        let configs: Vec<String> = d
            .config
            .to_properties()
            .into_iter()
            .filter(|kv| !defaults.contains(kv))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!(
            "Topic: {}\tPartitionCount: {}\tConfigs: {}",
            d.name,
            d.partitions.len(),
            configs.join(",")
        );
        for p in &d.partitions {
            println!(
                "\tPartition: {}\tStartOffset: {}\tEndOffset: {}\tHighWatermark: {}\tSize: {}\tSegments: {}",
                p.partition,
                p.log_start_offset,
                p.log_end_offset,
                p.high_watermark,
                p.size,
                p.segments
            );
        }
    }
    Ok(())
}

/// `topics alter NAME --partitions N | --config k=v …`.
pub fn alter_topic(
    store: &Store,
    name: &str,
    partitions: Option<u32>,
    settings: &[String],
) -> CliResult<()> {
    let current = store.describe_topic(name)?;
    // Check everything before changing anything.
    let mut config = current.config.clone();
    apply_configs(&mut config, settings)?;
    config.validate()?;
    if let Some(n) = partitions {
        if n as usize <= current.partitions.len() {
            return Err(CliError::msg(format!(
                "topic {name} has {} partitions: --partitions can only add partitions",
                current.partitions.len()
            )));
        }
    }
    if !settings.is_empty() {
        store.alter_topic_config(name, config)?;
        println!("altered config of topic {name}");
    }
    if let Some(n) = partitions {
        store.add_partitions(name, n)?;
        println!("topic {name} now has {n} partitions");
    }
    Ok(())
}

/// `groups describe G`; with `json`, one JSON object
/// (`GroupDescription`'s serde form).
pub fn describe_group(store: &Store, group: &str, json: bool) -> CliResult<()> {
    let d = store.describe_group(group)?;
    if d.offsets.is_empty() && d.members.is_empty() {
        return Err(CliError::msg(format!(
            "group {group} has no committed offsets and no members"
        )));
    }
    if json {
        return print_json(&d);
    }
    println!(
        "Group: {}\tGeneration: {}\tMembers: {}{}",
        d.group,
        d.generation,
        d.members.len(),
        if d.rebalancing { "\t(rebalancing)" } else { "" }
    );
    println!(
        "{:<24} {:>9} {:>15} {:>15} {:>10}",
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"
    );
    let opt = |v: Option<i64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    for o in &d.offsets {
        println!(
            "{:<24} {:>9} {:>15} {:>15} {:>10}",
            o.partition.topic,
            o.partition.partition,
            opt(o.committed),
            opt(o.log_end),
            opt(o.lag)
        );
    }
    for (member, parts) in &d.members {
        let parts: Vec<String> = parts
            .iter()
            .map(|tp| format!("{}-{}", tp.topic, tp.partition))
            .collect();
        println!("member {member}: {}", parts.join(","));
    }
    Ok(())
}

/// `groups reset-offsets`.
pub fn reset_offsets(store: &Store, group: &str, topic: &str, to: ResetTo) -> CliResult<()> {
    let offsets = store.reset_group_offsets(group, topic, to)?;
    println!("{:<24} {:>9} {:>11}", "TOPIC", "PARTITION", "NEW-OFFSET");
    for (tp, o) in offsets {
        println!("{:<24} {:>9} {:>11}", tp.topic, tp.partition, o);
    }
    Ok(())
}

/// `clean [TOPIC]`: retention and compaction now, one line per partition
/// that changed.
pub fn clean(store: &Store, topic: Option<&str>) -> CliResult<()> {
    let report = store.apply_retention(topic)?;
    for p in &report.partitions {
        let (r, c) = (&p.retention, &p.compaction);
        println!(
            "{}-{}: {} segments deleted ({} bytes), {} records compacted away ({} -> {} bytes), log start offset {}",
            p.partition.topic,
            p.partition.partition,
            r.segments_deleted,
            r.bytes_deleted,
            c.records_removed,
            c.bytes_before,
            c.bytes_after,
            r.log_start_offset
        );
    }
    println!(
        "{} segments deleted, {} bytes freed",
        report.segments_deleted(),
        report.bytes_freed()
    );
    Ok(())
}
