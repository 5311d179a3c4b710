//! Issue 16's Producer targets, measured in one run: `kafkalite perf
//! produce --baseline` (300-byte records, 8 partitions, 16 KiB batches, the
//! defaults) for each case below, each in a fresh store, the cases taking
//! turns in an order reversed every other round and rotated every two
//! (so no case always runs right after the same other, and each takes
//! every place in the order). Before and after every run
//! it times a round trip of one cache line between two threads (see
//! `core_round_trip`), since what threads sharing a partition's batch pay
//! is that trip: a run whose trips were slow is shown as such.
//!
//! ```text
//! cargo build --release --features cli          # in the crate's root
//! cd bench/peers && cargo run --release --bin producer_targets -- \
//!     --kafkalite ../../target/release/kafkalite --rounds 8 --records 1000000
//! ```
//!
//! Prints every run, then per case the median records/s and ratio to the
//! same run's `write()` baseline, then the targets' ratios, each taken
//! within a round and given as the median (min–max, rounds) over the
//! rounds: over every round, and over the rounds where both runs were
//! fast (both their trips under twice the fastest trip seen). One
//! untimed run goes first.
//!
//! Seven more cases are no Producer at all but a control (`control.rs`,
//! `refs.rs`), run by this binary in a child process of its own
//! (`--control T [--control-keys K [--control-refs]]`): one, two and four
//! threads batching, checksumming and writing the same records into
//! eight partitions, with nothing shared but what Kafka's order needs and
//! none of the Producer's callbacks, buffer memory or background threads;
//! keyless (each thread on partitions of its own), keyed, and keyed with
//! two threads sharing no more than a lock and a list of references a
//! partition. Its four ÷ two and keyed ÷ keyless are printed under the
//! targets as a reference, not as targets. Every run also prints its
//! partitions' spread: the most MB one holds beyond the least's.
//! `--cases A,B,…` runs only the cases named.

mod control;
mod refs;

use kafkalite_peers::{median, spread};

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The cases: a name and the arguments that make it.
const CASES: &[(&str, &[&str])] = &[
    ("1T", &["--threads", "1"]),
    ("2T", &["--threads", "2"]),
    ("4T", &["--threads", "4"]),
    ("1T-lz4", &["--threads", "1", "--compression", "lz4"]),
    ("2T-lz4", &["--threads", "2", "--compression", "lz4"]),
    ("1T-keyed", &["--threads", "1", "--keys", "1000"]),
    ("2T-keyed", &["--threads", "2", "--keys", "1000"]),
    ("4T-keyed", &["--threads", "4", "--keys", "1000"]),
    ("1T-control", &[CONTROL, "1"]),
    ("1T-control-keyed", &[CONTROL, "1", CONTROL_KEYS, "1000"]),
    ("2T-control", &[CONTROL, "2"]),
    ("4T-control", &[CONTROL, "4"]),
    ("2T-control-keyed", &[CONTROL, "2", CONTROL_KEYS, "1000"]),
    ("4T-control-keyed", &[CONTROL, "4", CONTROL_KEYS, "1000"]),
    (
        "2T-control-refs",
        &[CONTROL, "2", CONTROL_KEYS, "1000", CONTROL_REFS],
    ),
];

/// The first argument of a control case (see the module docs)…
const CONTROL: &str = "--control";
/// …and of its keys.
const CONTROL_KEYS: &str = "--control-keys";
/// A keyed control whose partitions order references (`refs::run_refs`).
const CONTROL_REFS: &str = "--control-refs";

/// The control's ratios printed under the targets: (what, numerator,
/// denominator).
const CONTROL_RATIOS: &[(&str, &str, &str)] = &[
    ("control: four threads / two", "4T-control", "2T-control"),
    (
        "control: keyed / keyless, one",
        "1T-control-keyed",
        "1T-control",
    ),
    (
        "control: keyed / keyless, two",
        "2T-control-keyed",
        "2T-control",
    ),
    (
        "control: keyed / keyless, four",
        "4T-control-keyed",
        "4T-control",
    ),
    (
        "control: refs keyed / keyless, two",
        "2T-control-refs",
        "2T-control",
    ),
];

/// The targets: (what, numerator case, denominator case, at least).
const TARGETS: &[(&str, &str, &str, f64)] = &[
    ("two threads / one", "2T", "1T", 1.4),
    ("two threads / one, lz4", "2T-lz4", "1T-lz4", 1.6),
    ("four threads / two", "4T", "2T", 1.0),
    ("keyed / keyless, one thread", "1T-keyed", "1T", 0.9),
    ("keyed / keyless, two threads", "2T-keyed", "2T", 0.9),
    ("keyed / keyless, four threads", "4T-keyed", "4T", 0.9),
];

struct Args {
    /// Set in a control's child process: its threads, and its keys.
    control: Option<usize>,
    control_keys: Option<usize>,
    control_refs: bool,
    cases: Option<Vec<String>>,
    kafkalite: PathBuf,
    dir: PathBuf,
    rounds: usize,
    records: u64,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        control: None,
        control_keys: None,
        control_refs: false,
        cases: None,
        kafkalite: PathBuf::from("../../target/release/kafkalite"),
        dir: std::env::temp_dir().join("kafkalite-producer-targets"),
        rounds: 8,
        records: 1_000_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--kafkalite" => a.kafkalite = v()?.into(),
            "--dir" => a.dir = v()?.into(),
            "--rounds" => a.rounds = v()?.parse()?,
            "--records" => a.records = v()?.parse()?,
            CONTROL => a.control = Some(v()?.parse()?),
            CONTROL_KEYS => a.control_keys = Some(v()?.parse()?),
            CONTROL_REFS => a.control_refs = true,
            "--cases" => a.cases = Some(v()?.split(',').map(str::to_string).collect()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if a.rounds == 0 || a.records == 0 || a.control == Some(0) || a.control_keys == Some(0) {
        return Err("--rounds, --records, --control and --control-keys must be positive".into());
    }
    if a.control.is_some_and(|t| t > control::PARTITIONS) {
        return Err(format!(
            "--control takes at most {} threads (a keyless thread's partitions are its own)",
            control::PARTITIONS
        )
        .into());
    }
    if a.control_keys.is_some() && a.control.is_none() {
        return Err("--control-keys goes with --control".into());
    }
    if a.control_refs && a.control_keys.is_none() {
        return Err("--control-refs goes with --control-keys".into());
    }
    if let Some(unknown) = a
        .cases
        .iter()
        .flatten()
        .find(|c| !CASES.iter().any(|(name, _)| name == c))
    {
        return Err(format!("--cases: no case {unknown}").into());
    }
    Ok(a)
}

/// The median round trip, in nanoseconds, of one cache line between two
/// threads: each waits for the other's write and answers it. On a machine
/// of two cores the two threads run on both (each spins while it waits).
/// On a virtual machine it moves with where the host runs the virtual
/// cores: here 41–61 ns most of the time, and 343–373 ns for minutes on
/// end. Not timed (NaN) with a single core, where the two would take
/// turns a time slice at a time.
fn core_round_trip() -> f64 {
    const TRIPS: u64 = 200_000;
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return f64::NAN;
    }
    let line = Arc::new(AtomicU64::new(0));
    let other = Arc::clone(&line);
    let answer = std::thread::spawn(move || {
        for i in 0..TRIPS {
            while other.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.store(2 * i + 2, Ordering::Release);
        }
    });
    // Ten timed stretches; the median leaves out one the scheduler cut.
    let mut stretches = Vec::with_capacity(10);
    let per = TRIPS / 10;
    for s in 0..10 {
        let start = Instant::now();
        for i in s * per..(s + 1) * per {
            line.store(2 * i + 1, Ordering::Release);
            while line.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        stretches.push(start.elapsed().as_nanos() as f64 / per as f64);
    }
    let _ = answer.join();
    median(&mut stretches)
}

/// A ratio to the `write()` baseline, "-" for a control (which writes
/// none of its own).
fn ratio_or_dash(r: f64) -> String {
    if r.is_nan() {
        "-".to_string()
    } else {
        format!("{r:.3}")
    }
}

/// The number after `"key":` in the tool's one-line JSON.
fn field(json: &str, key: &str) -> Res<f64> {
    let at = json
        .find(&format!("\"{key}\":"))
        .ok_or(format!("no {key} in {json}"))?;
    let rest = &json[at + key.len() + 3..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Ok(rest[..end].trim().parse()?)
}

struct Run {
    round: usize,
    case: &'static str,
    records_per_sec: f64,
    to_baseline: f64,
    /// The most MB a partition holds beyond the least's.
    spread_mb: f64,
    trip_ns: [f64; 2],
}

/// A control case's run: this binary again, in a child process, with
/// the case's arguments.
fn control_run(a: &Args, args: &[&str]) -> Res<(f64, f64)> {
    let out = Command::new(std::env::current_exe()?)
        .args(args)
        .args(["--records", &a.records.to_string()])
        .arg("--dir")
        .arg(&a.dir)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "control {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let out = String::from_utf8(out.stdout)?;
    Ok((
        field(&out, "records_per_sec")?,
        field(&out, "spread_bytes")? / 1e6,
    ))
}

/// The most MB of segment files a partition of topic `t` in `store` holds
/// beyond the least's.
fn spread_mb(store: &std::path::Path) -> Res<f64> {
    let mut sizes = Vec::new();
    for p in 0..control::PARTITIONS {
        let mut bytes = 0;
        for entry in std::fs::read_dir(store.join(format!("t-{p}")))? {
            let entry = entry?;
            if entry.path().extension().is_some_and(|e| e == "log") {
                bytes += entry.metadata()?.len();
            }
        }
        sizes.push(bytes);
    }
    Ok(spread(&sizes) as f64 / 1e6)
}

/// A run's records/s, ratio to the `write()` baseline (NaN for a
/// control), and its partitions' spread in MB.
fn produce(a: &Args, args: &[&str]) -> Res<(f64, f64, f64)> {
    if args.first() == Some(&CONTROL) {
        let (rate, spread) = control_run(a, args)?;
        return Ok((rate, f64::NAN, spread));
    }
    // A store of its own under `--dir`, made afresh for every run.
    let store = a.dir.join("producer-targets-store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&a.dir)?;
    let out = Command::new(&a.kafkalite)
        .arg("--dir")
        .arg(&store)
        .args(["perf", "produce", "--topic", "t", "--partitions", "8"])
        .args(["--record-size", "300", "--records", &a.records.to_string()])
        .args(["--baseline", "--reporting-interval", "0", "--json"])
        .args(args)
        .output()?;
    let spread = spread_mb(&store);
    let _ = std::fs::remove_dir_all(&store);
    if !out.status.success() {
        return Err(format!(
            "{} perf produce {args:?} failed: {}",
            a.kafkalite.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let json = String::from_utf8(out.stdout)?;
    Ok((
        field(&json, "records_per_sec")?,
        field(&json, "ratio")?,
        spread?,
    ))
}

fn main() -> Res<()> {
    let a = parse_args()?;
    if let Some(threads) = a.control {
        let dir = a.dir.join("producer-targets-control");
        let rate = match a.control_keys {
            Some(keys) if a.control_refs => refs::run_refs(&dir, threads, a.records, keys)?,
            keys => control::run(&dir, threads, a.records, keys)?,
        };
        println!(
            "{{\"records_per_sec\":{},\"spread_bytes\":{}}}",
            rate.records_per_sec, rate.spread_bytes
        );
        return Ok(());
    }
    // Untimed: the first run after a while writes into memory the virtual
    // machine may have handed back to the host, at half speed or less
    // (`docs/performance.md`, "the VM's cold memory").
    produce(&a, &["--threads", "2"])?;
    let cases: Vec<(&str, &[&str])> = CASES
        .iter()
        .copied()
        .filter(|(c, _)| a.cases.as_ref().is_none_or(|l| l.iter().any(|x| x == c)))
        .collect();
    let mut runs = Vec::new();
    println!("round case                records/s  ×write()  trip ns before/after  spread MB");
    for round in 0..a.rounds {
        for k in 0..cases.len() {
            let k = if round % 2 == 1 {
                cases.len() - 1 - k
            } else {
                k
            };
            let (case, args) = cases[(k + round / 2) % cases.len()];
            let before = core_round_trip();
            let (records_per_sec, to_baseline, spread_mb) = produce(&a, args)?;
            let after = core_round_trip();
            println!(
                "{round:>5} {case:<16} {:>12.0} {:>9}  {before:>6.1} / {after:.1}  {spread_mb:>9.1}",
                records_per_sec,
                ratio_or_dash(to_baseline)
            );
            runs.push(Run {
                round,
                case,
                records_per_sec,
                to_baseline,
                spread_mb,
                trip_ns: [before, after],
            });
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let fastest = runs
        .iter()
        .flat_map(|r| r.trip_ns)
        .fold(f64::INFINITY, f64::min);
    // A run counts as fast when both its trips were under twice the
    // fastest seen.
    let fast = |r: &Run| r.trip_ns.iter().all(|&t| t < 2.0 * fastest);
    println!(
        "\nfastest trip {fastest:.1} ns; runs with both trips under {:.1} ns: {} of {}",
        2.0 * fastest,
        runs.iter().filter(|r| fast(r)).count(),
        runs.len()
    );
    println!("\ncase              median records/s  median ×write()  spread MB");
    for (case, _) in &cases {
        let mut rate: Vec<f64> = runs
            .iter()
            .filter(|r| r.case == *case)
            .map(|r| r.records_per_sec)
            .collect();
        let mut ratio: Vec<f64> = runs
            .iter()
            .filter(|r| r.case == *case)
            .map(|r| r.to_baseline)
            .collect();
        let ratio = ratio_or_dash(median(&mut ratio));
        let mut spread: Vec<f64> = runs
            .iter()
            .filter(|r| r.case == *case)
            .map(|r| r.spread_mb)
            .collect();
        println!(
            "{case:<16} {:>17.0} {ratio:>16} {:>10.1}",
            median(&mut rate),
            median(&mut spread)
        );
    }
    let run = |round: usize, case: &str| runs.iter().find(|r| r.round == round && r.case == case);
    // The ratios of two cases' runs in the same round, over the rounds
    // where both ran (and, with `only_fast`, both were fast).
    let summary = |only_fast: bool, num: &str, den: &str| {
        let mut v: Vec<f64> = (0..a.rounds)
            .filter_map(|round| Some((run(round, num)?, run(round, den)?)))
            .filter(|(n, d)| !only_fast || (fast(n) && fast(d)))
            .map(|(n, d)| n.records_per_sec / d.records_per_sec)
            .collect();
        if v.is_empty() {
            return "-".to_string();
        }
        let (lo, hi) = (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let n = v.len();
        format!("{:.2} ({lo:.2}–{hi:.2}, {n})", median(&mut v))
    };
    println!("\ntarget                            at least  every round (min–max, rounds)  both runs fast");
    for (what, num, den, least) in TARGETS {
        println!(
            "{what:<33} {least:>8.2}  {:<30} {}",
            summary(false, num, den),
            summary(true, num, den)
        );
    }
    let mut one: Vec<f64> = runs
        .iter()
        .filter(|r| r.case == "1T")
        .map(|r| r.to_baseline)
        .collect();
    println!(
        "{:<33} {:>8.2}  {:.3}",
        "one thread / write() baseline",
        0.45,
        median(&mut one)
    );
    for (what, num, den) in CONTROL_RATIOS {
        println!(
            "{what:<33} {:>8}  {:<30} {}",
            "-",
            summary(false, num, den),
            summary(true, num, den)
        );
    }
    Ok(())
}
