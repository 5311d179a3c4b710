//! `Consumer::poll` and `LogRead::records()` against
//! `LogRead::for_each_record` over the same store, in one process, the
//! paths taking turns: the per-record cost the
//! peer bench's S3 children show with its noise (each child a fresh
//! process on freshly written data), measured steadily enough to tell a
//! change of a nanosecond or two a record.
//!
//! Each pass reads every record of partition 0 of topic `t` from offset 0:
//! `read` through `PartitionLog::read` (1 MiB at a time) and
//! `for_each_record`, `owned` through the same reads and `records()` (each
//! record a `LogRecord`, its value a `Bytes` sharing the batch's), and
//! `consumer` through a `Consumer` with the default
//! config (`max.poll.records` 500), assigned the partition and seeked to 0,
//! borrowing each record (its time includes making, assigning and seeking
//! the consumer). With `--checksum` each value's CRC-32 is taken (as S3
//! does); without, only its length and first byte are read, so the paths'
//! own cost shows. Prints each round's ns a record and the medians of the
//! rounds after the first (which maps the files). The store is one written
//! by the peer bench's S1 child: its log starts at offset 0 and holds no
//! transaction markers, so both paths must read every offset below the
//! high watermark (anything else is an error, not a figure).
//!
//! ```sh
//! cargo build --release
//! ./target/release/kafkalite-peers --child S1 kafkalite /tmp/pc 0 2000000 100000
//! ./target/release/read_paths /tmp/pc --rounds 5
//! ./target/release/read_paths /tmp/pc --rounds 5 --checksum
//! ```
#![allow(missing_docs, reason = "a bench binary")]

use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// What a pass does with each value: its CRC-32, or its length and first
/// byte; folded into one word the pass returns, so nothing is skipped.
fn fold(sum: &mut u64, value: &[u8], checksum: bool) {
    if checksum {
        *sum = sum.rotate_left(5) ^ u64::from(crc32fast::hash(value));
    } else {
        let first = value.first().copied().unwrap_or_default();
        *sum = sum.wrapping_add(value.len() as u64 + u64::from(first));
    }
}

/// One pass of `read` or `owned`: reads of 1 MiB from offset 0, each
/// handed to `each` (which returns how many records it saw): (records,
/// fold).
fn log_pass(
    log: &kafkalite::PartitionLog,
    mut each: impl FnMut(&kafkalite::LogRead, &mut u64) -> Res<usize>,
) -> Res<(usize, u64)> {
    let (mut at, mut n, mut sum) = (0, 0, 0u64);
    loop {
        let read = log.read(at, 1 << 20)?;
        if read.is_empty() {
            return Ok((n, sum));
        }
        n += each(&read, &mut sum)?;
        at = read.next_offset();
    }
}

/// One pass of `read`: each record borrowed (`for_each_record`).
fn read_pass(log: &kafkalite::PartitionLog, checksum: bool) -> Res<(usize, u64)> {
    log_pass(log, |read, sum| {
        Ok(read.for_each_record(|r| fold(sum, r.value.unwrap_or_default(), checksum))?)
    })
}

/// One pass of `owned`: each record a `LogRecord` (`records()`).
fn owned_pass(log: &kafkalite::PartitionLog, checksum: bool) -> Res<(usize, u64)> {
    log_pass(log, |read, sum| {
        let mut n = 0;
        for r in read.records() {
            fold(sum, r?.value.as_deref().unwrap_or_default(), checksum);
            n += 1;
        }
        Ok(n)
    })
}

/// The paths, in the order of a round that starts with the first.
const PATHS: [&str; 3] = ["read", "owned", "consumer"];

/// One pass of `consumer` over the `end` records: (records, fold).
fn consumer_pass(store: &kafkalite::Store, end: usize, checksum: bool) -> Res<(usize, u64)> {
    let mut c = kafkalite::Consumer::new(store, kafkalite::ConsumerConfig::default())?;
    let tp = kafkalite::TopicPartition::new("t", 0);
    c.assign(std::slice::from_ref(&tp))?;
    c.seek(&tp, 0)?;
    let (mut n, mut sum) = (0, 0u64);
    while n < end {
        let records = c.poll(Duration::from_millis(100))?;
        if records.is_empty() {
            return Err(format!("the consumer stopped at {n} of {end} records").into());
        }
        for r in &records {
            fold(&mut sum, r.value.unwrap_or_default(), checksum);
            n += 1;
        }
    }
    Ok((n, sum))
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: read_paths DIR [--rounds N] [--checksum]")?;
    let (mut rounds, mut checksum) = (5usize, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().ok_or("--rounds N")?.parse()?,
            "--checksum" => checksum = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if rounds < 2 {
        return Err("--rounds: at least 2 (the first only maps the files)".into());
    }
    let store = kafkalite::Store::open(&dir, kafkalite::StoreOptions::default())?;
    let log = store.partition("t", 0)?;
    let end = usize::try_from(log.high_watermark())?;
    let mut ns_of: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds {
        // Each path goes first in turn.
        let mut sums = [0u64; 3];
        for k in 0..PATHS.len() {
            let path = (k + round) % PATHS.len();
            let t = Instant::now();
            let (n, sum) = match path {
                0 => read_pass(&log, checksum)?,
                1 => owned_pass(&log, checksum)?,
                _ => consumer_pass(&store, end, checksum)?,
            };
            let ns = t.elapsed().as_nanos() as f64 / n.max(1) as f64;
            if n != end {
                return Err(format!("{}: read {n} records of {end}", PATHS[path]).into());
            }
            sums[path] = sum;
            println!("round {round} {}: {ns:.1} ns a record", PATHS[path]);
            if round > 0 {
                ns_of[path].push(ns);
            }
        }
        if sums.iter().any(|s| *s != sums[0]) {
            return Err("the paths read different values".into());
        }
    }
    let [r, o, c] = ns_of.map(|mut v| kafkalite_peers::median(&mut v));
    println!(
        "{end} records{}: read {r:.1} ns a record, owned {o:.1} ns, consumer {c:.1} ns; in records/s owned / read {:.3}, consumer / read {:.3}",
        if checksum { ", values checksummed" } else { "" },
        r / o,
        r / c
    );
    Ok(())
}
