//! The store `scripts/migrate-e2e.sh` migrates: three topics — `plain`
//! (3 partitions, uncompressed), `lz4` (2 partitions, lz4) and `keyed`
//! (4 partitions, keyed records with headers, placed by key) — with CreateTime
//! timestamps an hour old, and a JSON line per record sent (topic,
//! partition, offset, key, value, headers, timestamp) for an independent
//! checker to compare against what arrives on the broker.
//!
//! ```text
//! cargo run --example migrate_fixture -- STORE_DIR EXPECTED.jsonl FIRST COUNT
//! ```
//! writes records FIRST..FIRST+COUNT of each topic (run again with a later
//! FIRST to append more).

use kafkalite::{
    Compression, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig,
};
use std::io::Write;

const TOPICS: [(&str, u32, Compression); 3] = [
    ("plain", 3, Compression::None),
    ("lz4", 2, Compression::Lz4),
    ("keyed", 4, Compression::None),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, expected, first, count] = args.as_slice() else {
        return Err("usage: migrate_fixture STORE_DIR EXPECTED.jsonl FIRST COUNT".into());
    };
    let first: u64 = first.parse()?;
    let count: u64 = count.parse()?;
    let store = Store::open(dir, StoreOptions::default())?;
    let mut out = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(expected)?,
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let base_ts = now - 3_600_000;
    for (topic, partitions, compression) in TOPICS {
        if !store.list_topics().iter().any(|t| t == topic) {
            store.create_topic(topic, partitions, TopicConfig::default())?;
        }
        let mut config = ProducerConfig::default();
        config.compression = compression;
        config.batch_size = 16 * 1024;
        let producer = Producer::new(&store, config)?;
        let mut handles = Vec::new();
        for i in first..first + count {
            let value = format!("{topic}-value-{i}");
            let mut r = ProducerRecord::new(topic, value.clone()).timestamp(base_ts + i as i64);
            let key;
            let mut headers = Vec::new();
            if topic == "keyed" {
                key = Some(format!("key-{}", i % 97));
                r = r.key(key.clone().unwrap_or_default());
                headers.push(("seq".to_owned(), i.to_string()));
                headers.push(("origin".to_owned(), "kafkalite".to_owned()));
                for (k, v) in &headers {
                    r = r.header(k.clone(), v.clone());
                }
            } else {
                key = None;
                r = r.partition((i % u64::from(partitions)) as u32);
            }
            handles.push((producer.send(r)?, key, value, headers));
        }
        producer.flush()?;
        for (h, key, value, headers) in handles {
            let m = h.wait()?;
            let line = serde_json::json!({
                "topic": topic,
                "partition": m.partition,
                "offset": m.offset,
                "timestamp": m.timestamp,
                "key": key,
                "value": value,
                "headers": headers,
            });
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    store.close()?;
    println!("wrote {count} records to each of plain, lz4, keyed in {dir}");
    Ok(())
}
