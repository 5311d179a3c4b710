//! `dump FILE…`: kafka-dump-log.sh for `.log`, `.index` and `.timeindex`
//! files. Reads files only; never opens a store.

use crate::segment::{self, Found};
use crate::util::{json_b64, text, CliError, CliResult};
use crate::DumpArgs;
use bytes::Bytes;
use kafkalite::record::{BatchHeader, BatchScan, ControlRecord, DecodeError, RecordBatch};
use serde_json::json;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Runs `dump`; stops at the first corrupt batch after printing the ones
/// before it.
pub fn run(a: &DumpArgs) -> CliResult<()> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for file in &a.files {
        let r = dump_file(&mut out, file, a);
        out.flush()?;
        r?;
    }
    Ok(())
}

fn dump_file(out: &mut impl Write, path: &Path, a: &DumpArgs) -> CliResult<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "log" => dump_log(out, path, a),
        "index" | "timeindex" => dump_index(out, path, ext, a),
        _ => Err(CliError::msg(format!(
            "{}: not a .log, .index or .timeindex file",
            path.display()
        ))),
    }
}

fn header_line(h: &BatchHeader, position: u64, valid: bool) -> String {
    let codec = h.compression().map_or("unsupported", |c| c.name());
    let last_seq = if h.base_sequence < 0 {
        -1
    } else {
        h.base_sequence.wrapping_add(h.last_offset_delta)
    };
    format!(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} position: {} {:?}: {} maxTimestamp: {} size: {} magic: 2 compresscodec: {} crc: {} isvalid: {}",
        h.base_offset,
        h.last_offset(),
        h.records_count,
        h.base_sequence,
        last_seq,
        h.producer_id,
        h.producer_epoch,
        h.partition_leader_epoch,
        h.is_transactional(),
        h.is_control(),
        position,
        h.timestamp_type(),
        h.base_timestamp,
        h.max_timestamp,
        h.size(),
        codec,
        h.crc,
        valid
    )
}

fn dump_log(out: &mut impl Write, path: &Path, a: &DumpArgs) -> CliResult<()> {
    let data = segment::read(path).map_err(CliError)?;
    let base = segment::base_offset_of(path);
    if !a.out.json() {
        writeln!(out, "Dumping {}", path.display())?;
        if let Some(b) = base {
            writeln!(out, "Log starting offset: {b}")?;
        }
    }
    let mut batches = Vec::new();
    let mut scan = BatchScan::new(&data, 0);
    for found in scan.by_ref() {
        let pos = found.position;
        let batch = RecordBatch::decode(&data.slice_ref(found.bytes))
            .map_err(|e| corrupt_batch(path, pos, e))?;
        let records = batch.to_records().map_err(|e| {
            CliError::msg(format!(
                "{}: bad records in the batch at position {pos}: {}",
                path.display(),
                CliError::from(e).0
            ))
        })?;
        if !a.out.json() {
            writeln!(out, "{}", header_line(batch.header(), pos, true))?;
        }
        let h = batch.header();
        for r in &records {
            // Kafka's per-record sequence: the base sequence plus the offset
            // delta, -1 without a producer.
            let sequence = if h.base_sequence < 0 {
                -1
            } else {
                i64::from(h.base_sequence).wrapping_add(r.offset.wrapping_sub(h.base_offset))
            };
            let control = if h.is_control() {
                Some(ControlRecord::parse(r).map_err(|e| {
                    CliError::msg(format!(
                        "{}: bad control record at offset {}: {}",
                        path.display(),
                        r.offset,
                        CliError::from(e).0
                    ))
                })?)
            } else {
                None
            };
            if a.out.json() {
                let headers: Vec<serde_json::Value> = r
                    .headers
                    .iter()
                    .map(|h| json!([h.key, json_b64(h.value.as_deref())]))
                    .collect();
                let control = control.map(|c| {
                    json!({
                        "type": c.kind.name(),
                        "type_id": c.kind.id(),
                        "coordinator_epoch": c.coordinator_epoch,
                    })
                });
                let row = json!({
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": json_b64(r.key.as_deref()),
                    "value": json_b64(r.value.as_deref()),
                    "headers": headers,
                    "batch_offset": batch.base_offset(),
                    "position": pos,
                    "compression": h.compression().map_or("unsupported", |c| c.name()),
                    "producer_id": h.producer_id,
                    "producer_epoch": h.producer_epoch,
                    "sequence": sequence,
                    "is_transactional": h.is_transactional(),
                    "control": control,
                });
                writeln!(out, "{row}")?;
            } else {
                // A control record lists no header keys and names its marker
                // where a data record shows its key and payload.
                let (keys, what) = match control {
                    Some(c) => (
                        String::new(),
                        match c.coordinator_epoch {
                            Some(epoch) => {
                                format!("endTxnMarker: {} coordinatorEpoch: {epoch}", c.kind.name())
                            }
                            None => format!("controlType: {}", c.kind.name()),
                        },
                    ),
                    None => (
                        r.headers
                            .iter()
                            .map(|h| h.key.as_str())
                            .collect::<Vec<_>>()
                            .join(","),
                        format!(
                            "key: {} payload: {}",
                            text(r.key.as_deref()),
                            text(r.value.as_deref())
                        ),
                    ),
                };
                writeln!(
                    out,
                    "| offset: {} {:?}: {} keySize: {} valueSize: {} sequence: {} headerKeys: [{keys}] {what}",
                    r.offset,
                    h.timestamp_type(),
                    r.timestamp,
                    r.key.as_ref().map_or(-1, |k| k.len() as i64),
                    r.value.as_ref().map_or(-1, |v| v.len() as i64),
                    sequence,
                )?;
            }
        }
        batches.push(Found {
            position: pos,
            header: *batch.header(),
        });
    }
    if let Some(end) = scan.end() {
        if let (Some(pos), Some(e)) = (end.position(), end.error()) {
            if segment::zeros_from(&data, pos) {
                // Zeros that durable appends wrote ahead of themselves (an
                // open or crashed store's active segment): the end.
                if !a.out.json() {
                    writeln!(
                        out,
                        "zeros from position {pos} to the end ({} bytes): as durable appends write ahead of themselves, which sealing, and recovery after a crash, cut off",
                        data.len() as u64 - pos
                    )?;
                }
            } else {
                if !a.out.json() {
                    let rest = usize::try_from(pos).ok().and_then(|p| data.get(p..));
                    if let Some(Ok(h)) = rest.map(BatchHeader::parse) {
                        writeln!(out, "{}", header_line(&h, pos, false))?;
                    }
                }
                return Err(corrupt_batch(path, pos, e.clone()));
            }
        }
    }
    if a.verify_index {
        let base = base.unwrap_or_else(|| batches.first().map_or(0, |b| b.header.base_offset));
        verify_indexes(out, path, base, &batches, a.out.json())?;
    }
    Ok(())
}

/// The error for the bad batch at `pos` of the `.log` at `path`.
fn corrupt_batch(path: &Path, pos: u64, e: DecodeError) -> CliError {
    CliError::msg(format!(
        "{}: corrupt batch at position {pos}: {}",
        path.display(),
        CliError::from(e).0
    ))
}

/// Checks the `.index` and `.timeindex` beside a `.log` (when present).
fn verify_indexes(
    out: &mut impl Write,
    log: &Path,
    base: i64,
    batches: &[Found],
    json: bool,
) -> CliResult<()> {
    let mut problems = Vec::new();
    for ext in ["index", "timeindex"] {
        let p = segment::sibling(log, ext);
        if !p.exists() {
            continue;
        }
        let data = segment::read(&p).map_err(CliError)?;
        let (n, tail) = if ext == "index" {
            let e = segment::offset_entries(&data);
            problems.extend(e.problems);
            problems.extend(segment::check_offset_index(&e.entries, base, batches));
            (e.entries.len(), e.zero_tail)
        } else {
            let e = segment::time_entries(&data);
            problems.extend(e.problems);
            problems.extend(segment::check_time_index(&e.entries, base, batches));
            (e.entries.len(), e.zero_tail)
        };
        // The JSON stream holds records only; the summary goes to stderr.
        let line = format!(
            "{}: {n} entries checked{}",
            p.display(),
            if tail > 0 {
                format!(", {tail} preallocated zero entries")
            } else {
                String::new()
            }
        );
        if json {
            eprintln!("{line}");
        } else {
            writeln!(out, "{line}")?;
        }
    }
    if let Some(first) = problems.first() {
        return Err(CliError::msg(format!(
            "{}: {} index problem(s), first: {first}",
            log.display(),
            problems.len()
        )));
    }
    Ok(())
}

fn dump_index(out: &mut impl Write, path: &Path, ext: &str, a: &DumpArgs) -> CliResult<()> {
    let data = segment::read(path).map_err(CliError)?;
    let base = segment::base_offset_of(path).unwrap_or(0);
    if !a.out.json() {
        writeln!(out, "Dumping {}", path.display())?;
    }
    if ext == "index" {
        let e = segment::offset_entries(&data);
        for &(rel, pos) in &e.entries {
            let offset = base + i64::from(rel);
            if a.out.json() {
                writeln!(out, "{}", json!({"offset": offset, "position": pos}))?;
            } else {
                writeln!(out, "offset: {offset} position: {pos}")?;
            }
        }
    } else {
        let e = segment::time_entries(&data);
        for &(ts, rel) in &e.entries {
            let offset = base + i64::from(rel);
            if a.out.json() {
                writeln!(out, "{}", json!({"timestamp": ts, "offset": offset}))?;
            } else {
                writeln!(out, "timestamp: {ts} offset: {offset}")?;
            }
        }
    }
    if a.verify_index {
        let log = segment::sibling(path, "log");
        let log_data: Bytes = segment::read(&log).map_err(CliError)?;
        let scan = segment::scan(&log_data, base);
        if let Some((pos, e)) = &scan.error {
            return Err(CliError::msg(format!(
                "{}: corrupt batch at position {pos}: {e}",
                log.display()
            )));
        }
        let problems = if ext == "index" {
            let e = segment::offset_entries(&data);
            let mut p = e.problems;
            p.extend(segment::check_offset_index(&e.entries, base, &scan.batches));
            p
        } else {
            let e = segment::time_entries(&data);
            let mut p = e.problems;
            p.extend(segment::check_time_index(&e.entries, base, &scan.batches));
            p
        };
        if let Some(first) = problems.first() {
            return Err(CliError::msg(format!(
                "{}: {} index problem(s), first: {first}",
                path.display(),
                problems.len()
            )));
        }
        let line = format!("{}: index matches {}", path.display(), log.display());
        if a.out.json() {
            eprintln!("{line}");
        } else {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}
