//! `perf append`: the partition log's append path against plain `write()`
//! of the very same bytes, in alternating rounds, so that the machine's
//! noise (shared cores, page-cache state) falls on both alike and the ratio
//! holds where single runs swing by a quarter.

use super::MB;
use crate::sample::{flow_payload, FlowRecords};
use crate::util::{json_f64, print_json, CliError, CliResult};
use clap::{Args, ValueEnum};
use kafkalite::record::HEADER_SIZE;
use kafkalite::{BatchBuilder, Compression, Durability, LogConfig, PartitionLog, Record};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// `perf append`'s arguments.
#[derive(Args, Debug)]
pub struct AppendArgs {
    /// Size of each record: network-flow lines cut to this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 100)]
    record_size: usize,
    /// Records in each batch.
    #[arg(long, default_value_t = 1000)]
    batch_records: usize,
    /// Batches each round appends (and the baseline writes).
    #[arg(long, default_value_t = 4000)]
    batches: usize,
    /// Distinct batches, generated before timing and appended in turn. With
    /// 1 (the default) every append hands over a batch hot in the CPU's
    /// caches, as one just encoded is; more make each append read its batch
    /// from memory first.
    #[arg(long, default_value_t = 1)]
    distinct_batches: usize,
    /// Rounds of each; kafkalite and the baseline take turns, each going
    /// first in every other round.
    #[arg(long, default_value_t = 9)]
    rounds: usize,
    /// `written`: each append returns once in the page cache, against
    /// `write()`; `fsync`: once on disk, against `write()` + `fdatasync`.
    #[arg(long, value_enum, default_value_t = AppendDurability::Written)]
    durability: AppendDurability,
    /// The log's `writeback_bytes` (write-behind: start the disk writes of
    /// the appends every this many bytes; 0 off). Default: the library's,
    /// 1 MiB.
    #[arg(long, value_name = "BYTES")]
    writeback_bytes: Option<u64>,
    /// Output format (JSON: one object).
    #[command(flatten)]
    out: crate::args::OutputArgs,
}

/// `perf append --durability`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendDurability {
    /// In the page cache.
    Written,
    /// On disk.
    Fsync,
}

/// The most memory the batches generated before timing may take.
const MAX_POOL: usize = 4 << 30;

/// One round's seconds: kafkalite's, the baseline's.
type Round = (f64, f64);

/// Runs `perf append` in a scratch directory inside `dir`, removed
/// afterwards.
pub fn append(dir: &Path, a: &AppendArgs) -> CliResult<()> {
    for (what, v) in [
        ("--record-size", a.record_size),
        ("--batch-records", a.batch_records),
        ("--batches", a.batches),
        ("--distinct-batches", a.distinct_batches),
        ("--rounds", a.rounds),
    ] {
        if v == 0 {
            return Err(CliError::msg(format!("{what} must be positive")));
        }
    }
    // Sized before anything is built: a record takes its bytes and at most
    // 28 more (varints of at most 5 bytes for the length, offset delta and
    // value length, 10 for the timestamp delta; attributes, a null key, no
    // headers).
    let batch_estimate = a
        .record_size
        .checked_add(28)
        .and_then(|r| r.checked_mul(a.batch_records))
        .and_then(|b| b.checked_add(HEADER_SIZE));
    if batch_estimate.is_none_or(|b| b > i32::MAX as usize) {
        return Err(CliError::msg(format!(
            "a batch of {} records of {} bytes is larger than a batch can be (2 GiB)",
            a.batch_records, a.record_size
        )));
    }
    let pool_estimate = batch_estimate
        .and_then(|b| b.checked_mul(a.distinct_batches.min(a.batches)))
        .unwrap_or(usize::MAX);
    if pool_estimate > MAX_POOL {
        return Err(CliError::msg(format!(
            "--distinct-batches {} of {} records of {} bytes would hold more than {} GiB in memory",
            a.distinct_batches,
            a.batch_records,
            a.record_size,
            MAX_POOL >> 30
        )));
    }
    // The store directory may be new; the scratch directory must be.
    let scratch = dir.join(format!(".perf-append-{}", std::process::id()));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::create_dir(&scratch))
        .map_err(|e| CliError::msg(format!("cannot create {}: {e}", scratch.display())))?;
    let pool = batches(a);
    let batch_bytes = pool[0].len();
    let config = log_config(a, batch_bytes);
    let measured = (0..a.rounds).try_fold(Vec::new(), |mut rounds, r| {
        let mut pool = pool.clone();
        let (ours, raw) = if r % 2 == 0 {
            let ours = time_log(&scratch, r, &mut pool, &config, a)?;
            (ours, time_raw(&scratch, r, &pool, a)?)
        } else {
            let raw = time_raw(&scratch, r, &pool, a)?;
            (time_log(&scratch, r, &mut pool, &config, a)?, raw)
        };
        rounds.push((ours, raw));
        Ok::<_, CliError>(rounds)
    });
    let removed = std::fs::remove_dir_all(&scratch)
        .map_err(|e| format!("cannot remove {}: {e}", scratch.display()));
    let rounds = match (measured, removed) {
        (Ok(rounds), Ok(())) => rounds,
        (Err(e), Ok(())) => return Err(e),
        (Ok(_), Err(r)) => return Err(CliError::msg(r)),
        (Err(e), Err(r)) => return Err(CliError::msg(format!("{}; then {r}", e.0))),
    };
    report(a, batch_bytes, &config, &rounds)
}

/// The pool of encoded batches: `batch_records` flow records of
/// `record_size` bytes each, timestamps increasing.
fn batches(a: &AppendArgs) -> Vec<Vec<u8>> {
    let mut flows = FlowRecords::new(42);
    let mut ts = 1_700_000_000_000i64;
    (0..a.distinct_batches.min(a.batches))
        .map(|_| {
            let mut b = BatchBuilder::new(Compression::None);
            for _ in 0..a.batch_records {
                ts += 1;
                b.push(&Record::new(flow_payload(&mut flows, a.record_size)).timestamp(ts));
            }
            b.build().to_vec()
        })
        .collect()
}

/// The partition log's settings: Kafka's defaults but for a batch size
/// limit that admits batches of `batch_bytes`, and `--writeback-bytes`.
fn log_config(a: &AppendArgs, batch_bytes: usize) -> LogConfig {
    let mut config = LogConfig::default();
    config.settings.max_message_bytes = config
        .settings
        .max_message_bytes
        .max(u32::try_from(batch_bytes).unwrap_or(u32::MAX));
    if let Some(n) = a.writeback_bytes {
        config.writeback_bytes = n;
    }
    config
}

/// Seconds to append `a.batches` batches from `pool` (in turn) to a new
/// partition log with `config`.
fn time_log(
    scratch: &Path,
    round: usize,
    pool: &mut [Vec<u8>],
    config: &LogConfig,
    a: &AppendArgs,
) -> CliResult<f64> {
    let dir = scratch.join(format!("log-{round}"));
    let durability = match a.durability {
        AppendDurability::Written => Durability::Written,
        AppendDurability::Fsync => Durability::Fsync,
    };
    let log = PartitionLog::open(&dir, config.clone())?;
    let n = pool.len();
    let start = Instant::now();
    for i in 0..a.batches {
        log.append(&mut pool[i % n], durability)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    log.close()?;
    drop(log);
    remove(&dir, std::fs::remove_dir_all(&dir))?;
    Ok(seconds)
}

/// Seconds to write the same batches with `write_all` into a new file
/// (each followed by `sync_data`, fdatasync, under `--durability fsync`).
fn time_raw(scratch: &Path, round: usize, pool: &[Vec<u8>], a: &AppendArgs) -> CliResult<f64> {
    // Not named `.log`: were it left behind (the run killed), a store would
    // take it for a partition's log in a directory without metadata.
    let path = scratch.join(format!("raw-{round}.bin"));
    let io = |e: std::io::Error| CliError::msg(format!("baseline write {}: {e}", path.display()));
    let mut f = std::fs::File::create(&path).map_err(io)?;
    let start = Instant::now();
    for i in 0..a.batches {
        f.write_all(&pool[i % pool.len()]).map_err(io)?;
        if a.durability == AppendDurability::Fsync {
            f.sync_data().map_err(io)?;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    drop(f);
    remove(&path, std::fs::remove_file(&path))?;
    Ok(seconds)
}

/// `r`, the removal of `path`, as the CLI's error.
fn remove(path: &Path, r: std::io::Result<()>) -> CliResult<()> {
    r.map_err(|e| CliError::msg(format!("cannot remove {}: {e}", path.display())))
}

/// The median of `v` (sorted in place; `v` is not empty).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Prints the medians: of each side's rate, and of the rounds' ratios
/// (each round's two runs side by side, which is what cancels the noise).
fn report(
    a: &AppendArgs,
    batch_bytes: usize,
    config: &LogConfig,
    rounds: &[Round],
) -> CliResult<()> {
    let records = a.batches as f64 * a.batch_records as f64;
    let bytes = a.batches as f64 * batch_bytes as f64;
    let rate = |seconds: f64| records / seconds;
    let ours = median(&mut rounds.iter().map(|r| rate(r.0)).collect::<Vec<_>>());
    let raw = median(&mut rounds.iter().map(|r| rate(r.1)).collect::<Vec<_>>());
    let mut ratios: Vec<f64> = rounds.iter().map(|&(o, r)| r / o).collect();
    let ratio = median(&mut ratios);
    let (min, max) = (ratios[0], ratios[ratios.len() - 1]);
    let per_record = bytes / records / MB;
    let (rps, mbps) = (ours, ours * per_record);
    let (base_rps, base_mbps) = (raw, raw * per_record);
    let durability = match a.durability {
        AppendDurability::Written => "written",
        AppendDurability::Fsync => "fsync",
    };
    if a.out.json() {
        print_json(&serde_json::json!({
            "record_size": a.record_size,
            "batch_records": a.batch_records,
            "batch_bytes": batch_bytes,
            "batches": a.batches,
            "distinct_batches": a.distinct_batches,
            "rounds": a.rounds,
            "durability": durability,
            "writeback_bytes": config.writeback_bytes,
            "records_per_sec": json_f64(rps),
            "mb_per_sec": json_f64(mbps),
            "baseline_records_per_sec": json_f64(base_rps),
            "baseline_mb_per_sec": json_f64(base_mbps),
            "ratio": json_f64(ratio),
            "ratio_min": json_f64(min),
            "ratio_max": json_f64(max),
        }))?;
    } else {
        println!(
            "{} rounds of {} batches ({} distinct) of {} records of {} bytes ({batch_bytes} bytes a batch), durability {durability}, writeback_bytes {}:",
            a.rounds, a.batches, a.distinct_batches, a.batch_records, a.record_size, config.writeback_bytes
        );
        println!(
            "kafkalite PartitionLog::append: {rps:.1} records/sec ({mbps:.2} MB/sec), median round"
        );
        let base = if a.durability == AppendDurability::Fsync {
            "write() + fdatasync of each batch"
        } else {
            "write() of the same bytes"
        };
        println!(
            "baseline {base}: {base_rps:.1} records/sec ({base_mbps:.2} MB/sec), median round"
        );
        println!("kafkalite / baseline = {ratio:.3} (median of the rounds' ratios; lowest {min:.3}, highest {max:.3})");
    }
    Ok(())
}
