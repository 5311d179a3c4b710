//! `--baseline`: the same bytes written or read with plain `std::fs`, for
//! the ratio a perf run prints beside its own throughput.

use super::MB;
use crate::util::{json_f64, CliError, CliResult};
use bytes::Bytes;
use kafkalite::record::{BatchHeader, HEADER_SIZE};
use kafkalite::Store;
use std::path::Path;
use std::time::Instant;

/// What a `--baseline` run measured.
#[derive(Clone, Copy)]
pub(super) struct Baseline {
    /// Records the baseline wrote or found (and CRC-checked).
    pub(super) records: u64,
    pub(super) records_per_sec: f64,
    pub(super) mb_per_sec: f64,
}

impl Baseline {
    /// kafkalite's MB/sec over the baseline's; none when the baseline moved
    /// no bytes (nothing was consumed, so there is nothing to compare).
    fn ratio(&self, mbps: f64) -> Option<f64> {
        (self.mb_per_sec > 0.0).then(|| mbps / self.mb_per_sec)
    }

    /// The ratio as text.
    pub(super) fn ratio_text(&self, mbps: f64) -> String {
        self.ratio(mbps).map_or_else(
            || "n/a (nothing consumed)".to_owned(),
            |r| format!("{r:.3}"),
        )
    }
}

/// Adds the JSON fields of a `--baseline` run (none without one) to `j`;
/// the ratio is of MB/sec (of the same bytes per record).
pub(super) fn add_baseline(j: &mut serde_json::Value, b: Option<Baseline>, mbps: f64) {
    let (Some(b), Some(map)) = (b, j.as_object_mut()) else {
        return;
    };
    map.insert("baseline_records".into(), b.records.into());
    map.insert(
        "baseline_records_per_sec".into(),
        json_f64(b.records_per_sec),
    );
    map.insert("baseline_mb_per_sec".into(), json_f64(b.mb_per_sec));
    let ratio = b.ratio(mbps).map_or(serde_json::Value::Null, json_f64);
    map.insert("ratio".into(), ratio);
}

/// `perf produce --baseline`: the payloads the run sent, in the same order,
/// written with plain `write()` calls 64 KiB at a time into a new file in
/// `dir` (removed afterwards).
pub(super) fn write_baseline(dir: &Path, pool: &[Bytes], records: u64) -> CliResult<Baseline> {
    use std::io::Write;
    let path = dir.join(format!(".perf-baseline-{}", std::process::id()));
    let run = || -> std::io::Result<Baseline> {
        let mut f = std::fs::File::create(&path)?;
        let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
        let mut bytes = 0u64;
        let start = Instant::now();
        for i in 0..records {
            let v = &pool[(i % pool.len() as u64) as usize];
            if buf.len() + v.len() > buf.capacity() {
                f.write_all(&buf)?;
                buf.clear();
            }
            buf.extend_from_slice(v);
            bytes += v.len() as u64;
        }
        f.write_all(&buf)?;
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        Ok(Baseline {
            records,
            records_per_sec: records as f64 / seconds,
            mb_per_sec: bytes as f64 / MB / seconds,
        })
    };
    let result = run();
    let removed = std::fs::remove_file(&path);
    let b = result.map_err(|e| CliError::msg(format!("baseline write {}: {e}", path.display())))?;
    match removed {
        Ok(()) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(b),
        Err(e) => Err(CliError::msg(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

/// `perf consume --baseline`: every `.log` file of the topic's partitions
/// read with `std::fs` into one reused buffer, each batch's CRC-32C checked
/// and its records counted (all the files hold: also records below the log
/// start and control records, which consumers never see). MB/sec counts
/// `bytes_per_record` (key and value bytes, as the run consumed them) per
/// record.
pub(super) fn read_baseline(
    store: &Store,
    topic: &str,
    bytes_per_record: f64,
) -> CliResult<Baseline> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut records = 0u64;
    let start = Instant::now();
    for p in 0..store.partition_count(topic)? {
        let dir = store.partition(topic, p)?.dir().to_path_buf();
        let logs = crate::segment::log_files(&dir)
            .map_err(|e| CliError::msg(format!("cannot list {}: {e}", dir.display())))?;
        for (_, log) in logs {
            buf.clear();
            std::fs::File::open(&log)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(|e| CliError::msg(format!("cannot read {}: {e}", log.display())))?;
            records += count_checked(&buf).map_err(|at| {
                CliError::msg(format!("{}: bad batch at byte {at}", log.display()))
            })?;
        }
    }
    let seconds = start.elapsed().as_secs_f64().max(1e-9);
    Ok(Baseline {
        records,
        records_per_sec: records as f64 / seconds,
        mb_per_sec: records as f64 * bytes_per_record / MB / seconds,
    })
}

/// Walks the batches in `log`, checking each one's CRC-32C; the records
/// they hold, or the position of the first bad batch.
fn count_checked(log: &[u8]) -> Result<u64, usize> {
    // The CRC covers the batch from its attributes (byte 21) on.
    const CRC_FROM: usize = 21;
    let mut records = 0u64;
    let mut pos = 0usize;
    while let Some(rest) = log.get(pos..).filter(|r| !r.is_empty()) {
        let h = BatchHeader::parse(rest).map_err(|_| pos)?;
        let batch = rest
            .get(..h.size())
            .filter(|b| b.len() >= HEADER_SIZE)
            .ok_or(pos)?;
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &batch[CRC_FROM..]);
        if crc as u32 != h.crc {
            return Err(pos);
        }
        records += u64::try_from(h.records_count).map_err(|_| pos)?;
        pos += h.size();
    }
    Ok(records)
}
