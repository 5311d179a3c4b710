//! Retention at a size cap: a topic with `retention.bytes` = 8 MiB per
//! partition while a producer writes many times that amount. Retention runs
//! as the store's background thread would, and disk usage is printed as it
//! goes: it stays near the cap (plus at most one segment).
//!
//! ```text
//! cargo run --release --example retention_cap            # 200 MB written
//! cargo run --release --example retention_cap -- 1000    # 1,000 MB written
//! ```

#[path = "../src/sample.rs"]
mod sample;

use kafkalite::{Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig};
use sample::FlowRecords;
use std::path::Path;

fn disk_usage(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            disk_usage(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let megabytes: u64 = std::env::args().nth(1).map_or(Ok(200), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default())?;
    let cap: u64 = 8 << 20;
    let mut config = TopicConfig::default();
    config.retention_bytes = Some(cap);
    config.log.segment_bytes = 1 << 20;
    config.log.segment_index_bytes = 64 << 10;
    store.create_topic("capped", 2, config)?;
    let producer = Producer::new(&store, ProducerConfig::default())?;

    let lines: Vec<String> = FlowRecords::new(3).take(5_000).collect();
    let mut written = 0u64;
    let mut next_report = 0u64;
    let mut i = 0usize;
    while written < megabytes << 20 {
        let line = &lines[i % lines.len()];
        i += 1;
        written += line.len() as u64;
        producer.send(ProducerRecord::new("capped", line.clone()))?;
        if written >= next_report {
            producer.flush()?;
            let report = store.apply_retention(Some("capped"))?;
            let topic = store.describe_topic("capped")?;
            let on_disk: u64 = topic.partitions.iter().map(|p| p.size).sum();
            println!(
                "written {:>5} MB | log bytes {:>5.1} MB (cap 2 x {} MB) | dir {:>5.1} MB | segments {:>3} | deleted now {:>2}",
                written >> 20,
                on_disk as f64 / 1e6,
                cap >> 20,
                disk_usage(dir.path())? as f64 / 1e6,
                topic.partitions.iter().map(|p| p.segments).sum::<usize>(),
                report.segments_deleted(),
            );
            next_report += (megabytes << 20) / 10;
        }
    }
    producer.flush()?;
    store.apply_retention(Some("capped"))?;
    for p in store.describe_topic("capped")?.partitions {
        println!(
            "partition {}: offsets {}..{}, {:.1} MB in {} segments",
            p.partition,
            p.log_start_offset,
            p.log_end_offset,
            p.size as f64 / 1e6,
            p.segments
        );
        assert!(p.size <= cap + (1 << 20) + (1 << 20));
    }
    store.close()?;
    Ok(())
}
