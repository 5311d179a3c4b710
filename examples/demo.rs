//! The main demo: the field report's producer test, embedded.
//!
//! Writes network-flow records (about 300 bytes each, like the report's
//! sample) through a producer into an 8-partition topic, then reads every
//! partition back, printing records/s and MB/s for both directions.
//!
//! ```text
//! cargo run --release --example demo              # 1,000,000 records in a temp dir
//! cargo run --release --example demo -- 200000 /tmp/flows-store
//! ```

#[path = "../src/sample.rs"]
mod sample;

use kafkalite::{
    Compression, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig,
};
use sample::FlowRecords;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let records: u64 = args.next().map_or(Ok(1_000_000), |a| a.parse())?;
    let tmp = tempfile::tempdir()?;
    let dir = args.next().map_or(tmp.path().to_owned(), Into::into);

    let store = Store::open(&dir, StoreOptions::default())?;
    if !store.list_topics().contains(&"flows".to_owned()) {
        store.create_topic("flows", 8, TopicConfig::default())?;
    }
    // The report's producer settings: 16 KiB batches, lz4.
    let mut config = ProducerConfig::default();
    config.batch_size = 16 * 1024;
    config.linger = Duration::from_millis(5);
    config.compression = Compression::Lz4;
    let producer = Producer::new(&store, config)?;

    let lines: Vec<String> = FlowRecords::new(1).take(10_000).collect();
    let mut bytes = 0u64;
    let start = Instant::now();
    for i in 0..records {
        let line = &lines[(i % lines.len() as u64) as usize];
        bytes += line.len() as u64;
        producer
            .send(ProducerRecord::new("flows", line.clone()).key(format!("probe-{}", i % 1000)))?;
    }
    producer.flush()?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "produced {records} records ({:.1} MB) in {secs:.2} s: {:.0} records/s, {:.1} MB/s",
        bytes as f64 / 1e6,
        records as f64 / secs,
        bytes as f64 / 1e6 / secs
    );

    let start = Instant::now();
    let (mut read, mut read_bytes) = (0u64, 0u64);
    for p in 0..store.partition_count("flows")? {
        let mut offset = store.partition("flows", p)?.log_start_offset();
        loop {
            let batch = store.fetch("flows", p, offset, 1 << 20)?;
            if batch.is_empty() {
                break;
            }
            for r in batch.records() {
                let r = r?;
                read += 1;
                read_bytes += r.value.map_or(0, |v| v.len() as u64);
            }
            offset = batch.next_offset();
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "consumed {read} records ({:.1} MB) in {secs:.2} s: {:.0} records/s, {:.1} MB/s",
        read_bytes as f64 / 1e6,
        read as f64 / secs,
        read_bytes as f64 / 1e6 / secs
    );
    for p in store.describe_topic("flows")?.partitions {
        println!(
            "partition {}: offsets {}..{}, {} segment(s), {:.1} MB on disk",
            p.partition,
            p.log_start_offset,
            p.log_end_offset,
            p.segments,
            p.size as f64 / 1e6
        );
    }
    store.close()?;
    Ok(())
}
