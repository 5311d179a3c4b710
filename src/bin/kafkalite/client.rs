//! `produce` and `consume`: the console producer and consumer.

use crate::args::IsolationArg;
use crate::util::{is_broken_pipe, CliError, CliResult, Progress};
use crate::{ConsumeArgs, ProduceArgs, ProducerArgs};
use kafkalite::{
    Consumer, ConsumerConfig, IsolationLevel, OffsetAndMetadata, OffsetReset, Producer,
    ProducerConfig, ProducerRecord, SendHandle, Store, TopicPartition,
};
use std::collections::BTreeMap;
use std::io::{BufRead, BufWriter, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The producer config the shared flags describe.
pub fn producer_config(a: &ProducerArgs) -> CliResult<ProducerConfig> {
    if a.batch_size == 0 {
        return Err(CliError::msg("--batch-size must be positive"));
    }
    let mut c = ProducerConfig::default();
    c.compression = a.compression.into();
    c.durability = a.durability.into();
    c.batch_size = a.batch_size;
    c.linger = Duration::from_millis(a.linger_ms);
    Ok(c)
}

/// Writes `PARTITION OFFSET` for each handle, in send order, as each one
/// completes; flushes whenever it would otherwise wait. A closed stdout ends
/// the printing quietly.
fn print_offsets(rx: &mpsc::Receiver<SendHandle>) -> CliResult<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let pipe_ok = |r: std::io::Result<()>| -> CliResult<bool> {
        match r {
            Ok(()) => Ok(true),
            Err(e) if is_broken_pipe(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    };
    loop {
        let handle = match rx.try_recv() {
            Ok(h) => h,
            Err(mpsc::TryRecvError::Empty) => {
                if !pipe_ok(out.flush())? {
                    return Ok(());
                }
                match rx.recv() {
                    Ok(h) => h,
                    Err(_) => break,
                }
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        if !handle.is_done() && !pipe_ok(out.flush())? {
            return Ok(());
        }
        let meta = handle.wait()?;
        if !pipe_ok(writeln!(out, "{} {}", meta.partition, meta.offset))? {
            return Ok(());
        }
    }
    pipe_ok(out.flush()).map(|_| ())
}

/// `produce TOPIC`: one record per line of standard input.
pub fn produce(store: &Store, a: &ProduceArgs) -> CliResult<()> {
    // Unknown topic or partition: fail before reading any input.
    store.partition_count(&a.topic)?;
    if let Some(p) = a.partition {
        store.partition(&a.topic, p)?;
    }
    if a.key_separator.as_deref() == Some("") {
        return Err(CliError::msg("--key-separator must not be empty"));
    }
    let producer = Producer::new(store, producer_config(&a.producer)?)?;
    let (tx, rx) = mpsc::sync_channel::<SendHandle>(1 << 16);
    let printer = if a.print_offsets {
        Some(
            std::thread::Builder::new()
                .name("kafkalite-offsets".into())
                .spawn(move || print_offsets(&rx))?,
        )
    } else {
        drop(rx);
        None
    };
    let sent = send_lines(&producer, a, printer.is_some().then_some(&tx));
    drop(tx);
    let flushed = producer.flush();
    let printed = match printer {
        Some(t) => t
            .join()
            .unwrap_or_else(|_| Err(CliError::msg("the offset printer panicked"))),
        None => Ok(()),
    };
    sent?;
    flushed?;
    printed
}

fn send_lines(
    producer: &Producer,
    a: &ProduceArgs,
    handles: Option<&mpsc::SyncSender<SendHandle>>,
) -> CliResult<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    let topic: std::sync::Arc<str> = a.topic.as_str().into();
    let sep = a.key_separator.as_deref().map(str::as_bytes);
    // A large file piped in takes a while: a progress line on a terminal.
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let _progress = Progress::start("produce", std::sync::Arc::clone(&sent));
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        let (key, value) = match sep.and_then(|s| find(&line, s).map(|i| (i, s.len()))) {
            Some((i, n)) => (Some(line[..i].to_vec()), line[i + n..].to_vec()),
            None => (None, line.clone()),
        };
        let mut record = ProducerRecord::new(std::sync::Arc::clone(&topic), value);
        if let Some(k) = key {
            record = record.key(k);
        }
        if let Some(p) = a.partition {
            record = record.partition(p);
        }
        let handle = producer.send(record)?;
        sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(tx) = handles {
            if tx.send(handle).is_err() {
                // The printer stopped (its error is reported by the caller).
                return Ok(());
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `consume TOPIC`: records to standard output, one per line.
pub fn consume(store: &Store, a: &ConsumeArgs) -> CliResult<()> {
    let partitions = store.partition_count(&a.topic)?;
    let mut config = match &a.group {
        Some(g) => ConsumerConfig::with_group(g.as_str()),
        None => ConsumerConfig::default(),
    };
    config.enable_auto_commit = false;
    config.isolation_level = match a.isolation_level {
        IsolationArg::ReadUncommitted => IsolationLevel::ReadUncommitted,
        IsolationArg::ReadCommitted => IsolationLevel::ReadCommitted,
    };
    config.auto_offset_reset = if a.from_beginning {
        OffsetReset::Earliest
    } else {
        OffsetReset::Latest
    };
    let mut consumer = Consumer::new(store, config)?;
    let result = consume_with(store, &mut consumer, a, partitions);
    let closed = consumer.close();
    result?;
    closed?;
    Ok(())
}

fn consume_with(
    store: &Store,
    consumer: &mut Consumer,
    a: &ConsumeArgs,
    partitions: u32,
) -> CliResult<()> {
    match (a.partition, &a.group) {
        (Some(p), _) => {
            store.partition(&a.topic, p)?;
            let tp = TopicPartition::new(a.topic.as_str(), p);
            consumer.assign(std::slice::from_ref(&tp))?;
            if let Some(o) = a.offset {
                consumer.seek(&tp, o)?;
            }
        }
        (None, Some(_)) => consumer.subscribe(&[a.topic.as_str()])?,
        (None, None) => {
            let all: Vec<TopicPartition> = (0..partitions)
                .map(|p| TopicPartition::new(a.topic.as_str(), p))
                .collect();
            consumer.assign(&all)?;
        }
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    let timeout = Duration::from_millis(a.timeout_ms);
    let mut remaining = a.max_records.unwrap_or(u64::MAX);
    let mut last_record = Instant::now();
    while remaining > 0 {
        let wait = timeout.saturating_sub(last_record.elapsed());
        let records = consumer.poll(wait)?;
        if records.is_empty() {
            if last_record.elapsed() >= timeout {
                break;
            }
            continue;
        }
        last_record = Instant::now();
        // Commit exactly what was written: the offset after each partition's
        // last printed record.
        let mut next: BTreeMap<(&str, u32), i64> = BTreeMap::new();
        for r in records
            .iter()
            .take(usize::try_from(remaining).unwrap_or(usize::MAX))
        {
            let written = write_record(&mut out, a, r);
            match written {
                Ok(()) => {}
                Err(e) if is_broken_pipe(&e) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
            next.insert((r.topic, r.partition), r.offset + 1);
            remaining -= 1;
        }
        match out.flush() {
            Ok(()) => {}
            Err(e) if is_broken_pipe(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        if a.group.is_some() {
            let offsets: Vec<_> = next
                .into_iter()
                .map(|((t, p), o)| (TopicPartition::new(t, p), OffsetAndMetadata::new(o)))
                .collect();
            consumer.commit_offsets(&offsets)?;
        }
    }
    Ok(())
}

fn write_record(
    out: &mut impl Write,
    a: &ConsumeArgs,
    r: kafkalite::ConsumerRecordRef<'_>,
) -> std::io::Result<()> {
    if a.print_offset {
        write!(out, "Partition:{}\tOffset:{}\t", r.partition, r.offset)?;
    }
    if a.print_key {
        match r.key {
            Some(k) => out.write_all(k)?,
            None => out.write_all(b"null")?,
        }
        out.write_all(b"\t")?;
    }
    match r.value {
        Some(v) => out.write_all(v)?,
        None => out.write_all(b"null")?,
    }
    out.write_all(b"\n")
}
