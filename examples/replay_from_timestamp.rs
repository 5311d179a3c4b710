//! Replaying a topic from a point in time with `seek_to_timestamp`.
//!
//! Writes sensor readings with increasing timestamps (one every 10 ms,
//! round-robin over 3 partitions), then a consumer seeks every partition to
//! the first record at or after a chosen instant (Kafka's `offsetsForTimes`
//! and `seek`, served from the `.timeindex`) and replays from there. The
//! example prints the offsets the seek landed on next to the ones computed
//! from how the data was written, the first records replayed, and checks
//! that the replay holds exactly the records at or after the instant.
//!
//! ```text
//! cargo run --release --example replay_from_timestamp            # 30000 records
//! cargo run --release --example replay_from_timestamp -- 100000
//! ```

use kafkalite::{
    Consumer, ConsumerConfig, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions,
    TopicConfig, TopicPartition,
};
use std::collections::BTreeMap;
use std::time::Duration;

const TOPIC: &str = "readings";
const PARTITIONS: u32 = 3;
/// 2023-11-14 22:13:20 UTC, in milliseconds since the epoch.
const BASE_TS: i64 = 1_700_000_000_000;
const STEP_MS: i64 = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let records: i64 = std::env::args().nth(1).map_or(Ok(30_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default())?;
    store.create_topic(TOPIC, PARTITIONS, TopicConfig::default())?;

    // Record i: timestamp BASE_TS + i * 10 ms, partition i % 3, so it lands
    // at offset i / 3 of its partition.
    let producer = Producer::new(&store, ProducerConfig::default())?;
    for i in 0..records {
        producer.send(
            ProducerRecord::new(TOPIC, format!("reading {i}: 21.{} C", i % 10))
                .partition((i % i64::from(PARTITIONS)) as u32)
                .timestamp(BASE_TS + i * STEP_MS),
        )?;
    }
    producer.flush()?;
    println!(
        "wrote {records} records, timestamps {} .. {} ({} s of data)",
        BASE_TS,
        BASE_TS + (records - 1) * STEP_MS,
        (records - 1) * STEP_MS / 1000
    );

    // Replay from two thirds of the way in, at an instant between records.
    let first = records * 2 / 3;
    let target = BASE_TS + first * STEP_MS - STEP_MS / 2;
    println!(
        "replaying from {target} (base + {:.3} s)",
        (target - BASE_TS) as f64 / 1000.0
    );

    let parts: Vec<TopicPartition> = (0..PARTITIONS)
        .map(|p| TopicPartition::new(TOPIC, p))
        .collect();
    let mut config = ConsumerConfig::default();
    config.enable_auto_commit = false;
    let mut consumer = Consumer::new(&store, config)?;
    consumer.assign(&parts)?;
    consumer.seek_to_timestamp(&parts, target)?;
    for tp in &parts {
        let p = i64::from(tp.partition);
        // The first record index >= `first` that went to this partition.
        let i = first + (p - first % 3 + 3) % 3;
        println!(
            "  partition {}: seek landed on offset {} (expected {}, the record with timestamp {})",
            tp.partition,
            consumer.position(tp)?,
            i / 3,
            BASE_TS + i * STEP_MS
        );
    }

    let mut replayed = 0i64;
    let mut shown: BTreeMap<u32, usize> = BTreeMap::new();
    let mut earliest = i64::MAX;
    loop {
        let batch = consumer.poll(Duration::from_millis(100))?;
        if batch.is_empty() {
            break;
        }
        for r in batch {
            earliest = earliest.min(r.timestamp);
            assert!(
                r.timestamp >= target,
                "replayed a record from before the target"
            );
            replayed += 1;
            let n = shown.entry(r.partition).or_default();
            if *n < 3 {
                *n += 1;
                println!(
                    "    p{} offset {:>5}  ts {} (+{:>4} ms)  {}",
                    r.partition,
                    r.offset,
                    r.timestamp,
                    r.timestamp - target,
                    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default())
                );
            }
        }
    }
    let expected = records - first;
    println!(
        "replayed {replayed} records (expected {expected}), earliest timestamp {earliest}, none before the target"
    );
    if replayed != expected {
        return Err(format!("replayed {replayed} records, expected {expected}").into());
    }

    // Instants outside the data: before it seeks to the start, after it to the end.
    consumer.seek_to_timestamp(&parts, BASE_TS - 60_000)?;
    let before: Vec<i64> = parts
        .iter()
        .map(|tp| consumer.position(tp))
        .collect::<Result<_, _>>()?;
    consumer.seek_to_timestamp(&parts, BASE_TS + records * STEP_MS + 60_000)?;
    let after: Vec<i64> = parts
        .iter()
        .map(|tp| consumer.position(tp))
        .collect::<Result<_, _>>()?;
    println!("a minute before the data: offsets {before:?}; a minute after it: offsets {after:?} (the ends)");
    drop(consumer);
    drop(producer);
    store.close()?;
    Ok(())
}
