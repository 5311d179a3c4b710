//! kafkalite inside an async service: two tokio tasks on one thread.
//!
//! A current-thread tokio runtime (one thread for every task) runs a
//! producer task and a consumer task. The producer awaits
//! `Producer::send_async`, which waits for buffer space without blocking
//! the thread (the buffer is kept small so it has to), and awaits a
//! sample of the `SendHandle`s for their offsets. The consumer, a member of a group,
//! awaits `Consumer::poll_async`, which completes when records are readable
//! and never parks the thread. With a blocking `poll` or `send` the one
//! thread would stall and the example would hang.
//!
//! Opening and closing a store do blocking file I/O (recovery, fsyncs), so
//! they run on tokio's blocking pool with `spawn_blocking`, the pattern for
//! every call that may wait for the disk.
//!
//! ```text
//! cargo run --release --example async_tasks            # 200000 records
//! cargo run --release --example async_tasks -- 5000
//! ```

use kafkalite::{
    Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord, Store,
    StoreOptions, TopicConfig,
};
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

const TOPIC: &str = "events";

fn main() -> Result<(), Error> {
    let records: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| format!("record count {n:?}: {e}"))?,
        None => 200_000,
    };
    let dir = tempfile::tempdir()?;
    let path = dir.path().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    rt.block_on(async move {
        // Opening may recover segments: blocking I/O, off the async thread.
        let store = tokio::task::spawn_blocking(move || -> kafkalite::Result<Store> {
            let store = Store::open(&path, StoreOptions::default())?;
            store.create_topic(TOPIC, 4, TopicConfig::default())?;
            Ok(store)
        })
        .await??;

        let mut config = ProducerConfig::default();
        config.buffer_memory = 256 << 10;
        let producer = Producer::new(&store, config)?;
        let mut config = ConsumerConfig::with_group("service");
        config.auto_offset_reset = OffsetReset::Earliest;
        let mut consumer = Consumer::new(&store, config)?;
        consumer.subscribe(&[TOPIC])?;

        let start = Instant::now();
        let produce = tokio::spawn(async move {
            let mut sampled = Vec::new();
            for i in 0..records {
                let record = ProducerRecord::new(TOPIC, format!("event {i}"))
                    .key(format!("user-{}", i % 100));
                let handle = producer.send_async(record).await?;
                // Awaiting a handle right away would wait for its batch to
                // fill or linger (linger.ms, as Kafka's future.get()); keep
                // a few and await them once they are appended.
                if i % 1000 == 999 || i + 1 == records {
                    sampled.push(handle);
                }
            }
            producer.flush()?;
            let mut last = None;
            for handle in sampled {
                last = Some(handle.await?);
            }
            Ok::<_, kafkalite::Error>(last)
        });
        let consume = tokio::spawn(async move {
            let mut seen = 0;
            while seen < records {
                let batch = consumer.poll_async(Duration::from_secs(10)).await?;
                if batch.is_empty() {
                    return Err(kafkalite::Error::Closed);
                }
                seen += batch.len();
            }
            consumer.commit_sync()?;
            consumer.close()?;
            Ok::<_, kafkalite::Error>(seen)
        });
        let last = produce.await??;
        let seen = consume.await??;
        let secs = start.elapsed().as_secs_f64();
        if let Some(m) = last {
            println!(
                "produced {records} records (last: partition {} offset {})",
                m.partition, m.offset
            );
        }
        println!(
            "consumed {seen} records on the same thread in {secs:.2} s ({:.0} records/s)",
            seen as f64 / secs
        );

        let group = store.describe_group("service")?;
        let committed: i64 = group.offsets.iter().filter_map(|p| p.committed).sum();
        println!("group 'service' committed {committed} records' worth of offsets");
        // A clean close fsyncs: blocking again.
        tokio::task::spawn_blocking(move || store.close()).await??;
        Ok(())
    })
}
