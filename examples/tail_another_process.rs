//! Reading a store from another process while it is written: this example
//! starts a copy of itself as the writer process (which owns the store and
//! appends with `Durability::Fsync`), and tails the same directory from this
//! process with `Store::open_read_only`, printing how far behind it is.
//!
//! ```text
//! cargo run --release --example tail_another_process            # 200,000 records
//! cargo run --release --example tail_another_process -- 1000000
//! ```

#[path = "../src/sample.rs"]
mod sample;

use kafkalite::{
    Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord, Store,
    StoreOptions, TopicConfig, TopicPartition,
};
use sample::FlowRecords;
use std::time::{Duration, Instant};

const TOPIC: &str = "flows";
const PARTITIONS: u32 = 4;

fn writer(dir: &str, records: u64) -> Result<(), Box<dyn std::error::Error>> {
    let store = Store::open(dir, StoreOptions::default())?;
    store.create_topic(TOPIC, PARTITIONS, TopicConfig::default())?;
    let mut config = ProducerConfig::default();
    config.durability = kafkalite::Durability::Fsync;
    let producer = Producer::new(&store, config)?;
    let mut flows = FlowRecords::new(9);
    for i in 0..records {
        producer
            .send(ProducerRecord::new(TOPIC, flows.next_line()).key(format!("probe-{}", i % 64)))?;
    }
    producer.flush()?;
    store.close()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let (Some("writer"), Some(dir), Some(n)) =
        (args.get(1).map(String::as_str), args.get(2), args.get(3))
    {
        return writer(dir, n.parse()?);
    }
    let records: u64 = args.get(1).map_or(Ok(200_000), |a| a.parse())?;
    let tmp = tempfile::tempdir()?;
    let dir = tmp
        .path()
        .to_str()
        .ok_or("temp dir is not UTF-8")?
        .to_owned();
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(["writer", &dir, &records.to_string()])
        .spawn()?;

    // Wait for the writer to create the topic, then open read-only: no lock
    // is taken, so both processes use the store at once.
    let started = Instant::now();
    let store = loop {
        match Store::open_read_only(&dir, StoreOptions::default()) {
            Ok(s) if s.list_topics().iter().any(|t| t == TOPIC) => break s,
            _ if started.elapsed() > Duration::from_secs(30) => {
                return Err("the writer did not create the topic".into())
            }
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let mut config = ConsumerConfig::default();
    config.auto_offset_reset = OffsetReset::Earliest;
    let mut consumer = Consumer::new(&store, config)?;
    let parts: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(TOPIC, p))
        .collect();
    consumer.assign(&parts)?;

    let mut seen = 0u64;
    let mut next_report = Instant::now();
    while seen < records {
        let batch = consumer.poll(Duration::from_millis(200))?;
        seen += batch.len() as u64;
        if Instant::now() >= next_report {
            let written: i64 = parts
                .iter()
                .map(|tp| {
                    store
                        .partition(&tp.topic, tp.partition)
                        .map_or(0, |l| l.log_end_offset())
                })
                .sum();
            println!(
                "{:>6} ms  reader has {seen:>8} records, writer's log holds {written:>8}",
                started.elapsed().as_millis()
            );
            next_report = Instant::now() + Duration::from_millis(250);
        }
        if started.elapsed() > Duration::from_secs(300) {
            return Err("timed out".into());
        }
    }
    let status = child.wait()?;
    println!(
        "read {seen} records written by another process (pid {}, {status}) in {:.2} s",
        child.id(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
