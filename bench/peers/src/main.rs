//! kafkalite side by side with the crates a Rust user would pick instead of
//! it for a local durable log, each set up as its users would, through each
//! one's public API:
//!
//! - `kafkalite`: a store, one topic of one partition; batches built with
//!   `BatchBuilder::push_parts` and appended with `PartitionLog::append_batch`
//!   (`Written`, or `Fsync`); reads with `PartitionLog::read` and
//!   `LogRead::for_each_record`; a point read is `PartitionLog::read_record`. `kafkalite-lz4` the same with lz4 batches.
//! - `kafkalite-records`: the most idiomatic calls: `Store::append` of a
//!   `Vec<Record>` built from the payloads, `LogRead::records()`.
//! - `kafkalite-consumer`: S3 only through `Consumer::poll` with the default
//!   config (the rest as `kafkalite`).
//! - `commitlog` (zowens/commitlog 0.2): `append` of a `MessageBuf` per
//!   batch, `read` with a byte limit. Its `flush` does not fsync (its
//!   `Segment::flush_sync` is `File::flush`): for S2 the active segment and
//!   index files are `fdatasync`ed after it, as its users must.
//!
//! `strace -f -c` of one S2 run (1,000 batches) counts, per backend:
//! kafkalite 1,002 fdatasync; commitlog 2,000 (the two this bench adds per
//! batch); raft-engine 1,002 fdatasync; SQLite 1,044 fsync; fjall 1,000
//! fdatasync. Every "durable" append here reached the disk.
//! - `raft-engine` (tikv/raft-engine 0.4, lz4 above 8 KiB, its default): one
//!   region, `LogBatch::add_entries` of raft `Entry`s, `Engine::write(sync)`,
//!   `fetch_entries_to`, `get_entry`.
//! - `sqlite` (rusqlite, bundled SQLite): WAL, a table `(offset INTEGER
//!   PRIMARY KEY, payload BLOB)`, one transaction per batch,
//!   `synchronous=NORMAL` (FULL for S2).
//! - `fjall` (fjall 3, lz4 default): big-endian offsets as keys, a write
//!   batch per batch, `persist(SyncData)` for S2.
//! - `checksum-alone`: not a store; S3 only: the same checksum over the
//!   payloads held in memory, with nothing read. It is about the bound of
//!   every backend's S3 (the checksum is most of a fast backend's S3 time),
//!   not a strict one: kafkalite's S3 has read above it.
//!
//! Scenarios, as in issue 16: S1 `--records` records appended in batches of
//! 1,000, then one sync; S2 100,000 records in batches of 100, each synced;
//! S3 reopen and read everything from offset 0, checksumming every payload;
//! S4 `--point-reads` reads of one record at uniform random offsets. Every
//! (scenario, backend, round) runs in its own child process; backends take
//! turns in an order rotated every round; the page cache is warmed before
//! reads; data is deleted between backends; every read is checked against
//! what was written. Before the first round, memory of twice the payloads'
//! size is written and freed (`--no-warm-memory` skips it; see
//! `warm_memory`). Prints the median of the rounds and ratios to
//! `--against` (default commitlog), and with `--json FILE` writes every
//! measurement.

use kafkalite_peers::median;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const BATCH: usize = 1000;
const S2_RECORDS: usize = 100_000;
const S2_BATCH: usize = 100;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The payloads: `n` records of `size` bytes (0 = the seed's ~376-byte
/// network-flow lines), generated from their index.
struct Payloads {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Payloads {
    fn new(n: usize, size: usize) -> Payloads {
        let mut data = Vec::with_capacity(n * if size == 0 { 380 } else { size });
        let mut ends = Vec::with_capacity(n);
        for i in 0..n {
            let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5151;
            let mut next = || {
                x ^= x >> 33;
                x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
                x ^= x >> 29;
                x
            };
            let line = format!(
                "{{\"ts\":{},\"src_ip\":\"10.{}.{}.{}\",\"dst_ip\":\"172.16.{}.{}\",\"src_port\":{},\"dst_port\":{},\
                 \"proto\":\"{}\",\"bytes\":{},\"packets\":{},\"duration_ms\":{},\"action\":\"{}\",\
                 \"sensor\":\"edge-{:02}.dc{}.flows.example.net\",\"rule\":\"fw-{:04}\",\"seq\":{i}}}",
                1_700_000_000_000u64 + i as u64 * 3,
                next() % 4,
                next() % 64,
                next() % 254 + 1,
                next() % 16,
                next() % 254 + 1,
                32_768 + next() % 28_000,
                [443, 53, 22, 5432, 9092, 123][(next() % 6) as usize],
                ["TCP", "TCP", "UDP"][(next() % 3) as usize],
                next() % 1_000_000,
                next() % 2_000,
                next() % 60_000,
                ["allow", "allow", "deny"][(next() % 3) as usize],
                next() % 12,
                next() % 3 + 1,
                next() % 300,
            );
            let mut bytes = line.into_bytes();
            let want = if size == 0 { 376 } else { size };
            bytes.resize(want, b' ');
            data.extend_from_slice(&bytes);
            ends.push(data.len());
        }
        Payloads { data, ends }
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The checksum a full read must reproduce.
    fn checksum(&self) -> u64 {
        let mut sum = Sum::default();
        for i in 0..self.len() {
            sum.add(self.get(i));
        }
        sum.0
    }
}

/// An order-sensitive checksum of payloads: CRC-32 of each, mixed in.
#[derive(Default)]
struct Sum(u64);

impl Sum {
    fn add(&mut self, payload: &[u8]) {
        let c = u64::from(crc32fast::hash(payload));
        self.0 = self.0.rotate_left(5) ^ c.wrapping_mul(0x100_0000_01b3);
    }
}

/// One backend: what a user of that crate would write.
trait Backend {
    /// Appends `records` as one batch; `sync` makes it durable.
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()>;
    /// Makes everything appended durable.
    fn sync(&mut self) -> Res<()>;
    /// Every payload from the first, in order, into `sum`; returns the count.
    fn read_all(&mut self, sum: &mut Sum) -> Res<usize>;
    /// The payload at `offset`.
    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()>;
}

mod backends;
mod svg;

const BACKENDS: &[&str] = &[
    "kafkalite",
    "kafkalite-lz4",
    "kafkalite-records",
    "kafkalite-consumer",
    "commitlog",
    "raft-engine",
    "sqlite",
    "fjall",
    CHECKSUM_ALONE,
];

/// Not a store: S3's checksum over the payloads in memory, with no read at
/// all. No backend's S3 can be faster; its rate bounds every S3 ratio.
const CHECKSUM_ALONE: &str = "checksum-alone";

/// Whether `backend` is measured in `scenario`: the consumer backend differs
/// from `kafkalite` only in how S3 reads.
fn measures(backend: &str, scenario: &str) -> bool {
    !matches!(backend, "kafkalite-consumer" | CHECKSUM_ALONE) || scenario == "S3"
}

fn open(name: &str, dir: &Path) -> Res<Box<dyn Backend>> {
    backends::open(name, dir)
}

/// Runs one scenario in this (child) process; returns operations per second.
fn child(
    scenario: &str,
    name: &str,
    dir: &Path,
    size: usize,
    records: usize,
    points: usize,
) -> Res<f64> {
    match scenario {
        "S1" => {
            let p = Payloads::new(records, size);
            let mut b = open(name, dir)?;
            let t = Instant::now();
            let mut i = 0;
            while i < p.len() {
                let end = (i + BATCH).min(p.len());
                let batch: Vec<&[u8]> = (i..end).map(|j| p.get(j)).collect();
                b.append(&batch, false)?;
                i = end;
            }
            b.sync()?;
            Ok(p.len() as f64 / t.elapsed().as_secs_f64())
        }
        "S2" => {
            let p = Payloads::new(S2_RECORDS, size);
            let mut b = open(name, dir)?;
            let t = Instant::now();
            let mut i = 0;
            while i < p.len() {
                let end = (i + S2_BATCH).min(p.len());
                let batch: Vec<&[u8]> = (i..end).map(|j| p.get(j)).collect();
                b.append(&batch, true)?;
                i = end;
            }
            Ok(p.len() as f64 / t.elapsed().as_secs_f64())
        }
        "S3" if name == CHECKSUM_ALONE => {
            let p = Payloads::new(records, size);
            let t = Instant::now();
            std::hint::black_box(p.checksum());
            Ok(p.len() as f64 / t.elapsed().as_secs_f64())
        }
        "S3" => {
            let p = Payloads::new(records, size);
            let want = p.checksum();
            warm(dir)?;
            let mut b = open(name, dir)?;
            // For profiling only: PEERS_REPEAT=N reads N times before the
            // timed read.
            for _ in 0..repeat() {
                b.read_all(&mut Sum::default())?;
            }
            let t = Instant::now();
            let mut sum = Sum::default();
            let n = b.read_all(&mut sum)?;
            let rate = n as f64 / t.elapsed().as_secs_f64();
            if n != records || sum.0 != want {
                return Err(
                    format!("{name}: read {n} records, checksum {:x} != {want:x}", sum.0).into(),
                );
            }
            Ok(rate)
        }
        "S4" => {
            let p = Payloads::new(records, size);
            warm(dir)?;
            let mut b = open(name, dir)?;
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let offsets: Vec<u64> = (0..points)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % records as u64
                })
                .collect();
            let mut bad = 0usize;
            // For profiling only, as in S3: PEERS_REPEAT=N runs the reads N
            // times before the timed pass.
            for _ in 0..repeat() {
                for &o in &offsets {
                    b.point(o, &mut |_| {})?;
                }
            }
            let t = Instant::now();
            for &o in &offsets {
                let want = p.get(o as usize);
                b.point(o, &mut |got| bad += usize::from(got != want))?;
            }
            let rate = points as f64 / t.elapsed().as_secs_f64();
            if bad > 0 {
                return Err(format!("{name}: {bad} point reads returned the wrong payload").into());
            }
            Ok(rate)
        }
        other => Err(format!("unknown scenario {other}").into()),
    }
}

/// `PEERS_REPEAT` (0 when unset): how many untimed passes a read scenario
/// makes first, so a profile sees mostly the reads.
fn repeat() -> usize {
    std::env::var("PEERS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Writes `bytes` into a scratch file under `dir` and deletes it, so the
/// first child's page cache and payloads land in memory the system used a
/// moment ago. On a virtual machine whose balloon device reports free pages
/// to the host, the first write to memory the guest has not used lately
/// waits for the host: a run growing into such memory ran at half speed or
/// less, which hit whichever backend came first in round 0
/// (`docs/performance.md`, "the VM's cold memory").
fn warm_memory(dir: &Path, bytes: u64) -> Res<()> {
    use std::io::Write;
    let path = dir.join("warm-memory.tmp");
    let start = Instant::now();
    let chunk = vec![0x5au8; 1 << 20];
    let mut f = std::fs::File::create(&path)?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    drop(f);
    std::fs::remove_file(&path)?;
    eprintln!(
        "warmed {} MB of memory in {:.2} s",
        bytes >> 20,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Reads every file under `dir` once, so reads are timed from the page cache.
fn warm(dir: &Path) -> Res<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            warm(&p)?;
        } else {
            std::hint::black_box(std::fs::read(&p)?.len());
        }
    }
    Ok(())
}

fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                total += disk_bytes(&p);
            } else if let Ok(m) = std::fs::metadata(&p) {
                use std::os::unix::fs::MetadataExt;
                total += m.blocks() * 512;
            }
        }
    }
    total
}

struct Args {
    dir: PathBuf,
    records: usize,
    points: usize,
    rounds: usize,
    size: usize,
    backends: Vec<String>,
    scenarios: Vec<String>,
    against: String,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
    warm_memory: bool,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        dir: std::env::temp_dir().join("kafkalite-peers"),
        records: 2_000_000,
        points: 100_000,
        rounds: 3,
        size: 0,
        backends: BACKENDS.iter().map(|s| s.to_string()).collect(),
        scenarios: ["S1", "S2", "S3", "S4"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        against: "commitlog".into(),
        json: None,
        svg: None,
        warm_memory: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = v()?.into(),
            "--records" => a.records = v()?.parse()?,
            "--point-reads" => a.points = v()?.parse()?,
            "--rounds" => a.rounds = v()?.parse()?,
            "--record-size" => a.size = v()?.parse()?,
            "--backends" => a.backends = v()?.split(',').map(str::to_owned).collect(),
            "--scenarios" => a.scenarios = v()?.split(',').map(str::to_owned).collect(),
            "--against" => a.against = v()?,
            "--json" => a.json = Some(v()?.into()),
            "--svg" => a.svg = Some(v()?.into()),
            "--no-warm-memory" => a.warm_memory = false,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    for b in &a.backends {
        if !BACKENDS.contains(&b.as_str()) {
            return Err(format!("unknown backend {b}; known: {}", BACKENDS.join(", ")).into());
        }
    }
    Ok(a)
}

fn run_child(a: &Args, scenario: &str, backend: &str, dir: &Path) -> Res<f64> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", scenario, backend])
        .arg(dir)
        .args([
            a.size.to_string(),
            a.records.to_string(),
            a.points.to_string(),
        ])
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{scenario} {backend} failed: {}{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or("no RESULT line")?
        .trim()
        .parse()?)
}

fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.1} k", r / 1e3)
    }
}

fn main() -> Res<()> {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--child") {
        let [_, _, scenario, backend, dir, size, records, points] = &argv[..] else {
            return Err("child: bad arguments".into());
        };
        let rate = child(
            scenario,
            backend,
            Path::new(dir),
            size.parse()?,
            records.parse()?,
            points.parse()?,
        )?;
        println!("RESULT {rate}");
        return Ok(());
    }
    let a = parse_args()?;
    std::fs::create_dir_all(&a.dir)?;
    if a.warm_memory {
        // Twice the payloads' bytes: a child holds them in memory and writes
        // about as much into the page cache.
        let record = if a.size == 0 { 380 } else { a.size } as u64;
        warm_memory(&a.dir, 2 * a.records as u64 * record)?;
    }
    // results[(scenario, backend)] = rates over the rounds
    let mut results: std::collections::BTreeMap<(String, String), Vec<f64>> = Default::default();
    let mut disk: std::collections::BTreeMap<String, u64> = Default::default();
    let mut log = Vec::new();
    let needs_data = |s: &str| s == "S3" || s == "S4";
    for round in 0..a.rounds {
        let n = a.backends.len();
        for k in 0..n {
            let backend = &a.backends[(k + round) % n];
            let dir = a.dir.join(format!("{backend}-{round}"));
            let _ = std::fs::remove_dir_all(&dir);
            let mut wrote = false;
            for scenario in ["S1", "S3", "S4"] {
                let wanted =
                    a.scenarios.iter().any(|s| s == scenario) && measures(backend, scenario);
                let writes_data = scenario == "S1"
                    && backend != CHECKSUM_ALONE
                    && a.scenarios.iter().any(|s| needs_data(s));
                if !wanted && !writes_data {
                    continue;
                }
                let rate = run_child(&a, scenario, backend, &dir)?;
                if scenario == "S1" {
                    wrote = true;
                    disk.insert(backend.clone(), disk_bytes(&dir));
                }
                if wanted {
                    eprintln!("round {round} {scenario} {backend}: {}/s", fmt_rate(rate));
                    results
                        .entry((scenario.into(), backend.clone()))
                        .or_default()
                        .push(rate);
                    log.push(format!(
                        "{{\"round\":{round},\"scenario\":\"{scenario}\",\"backend\":\"{backend}\",\"rate\":{rate:.1}}}"
                    ));
                }
            }
            if wrote {
                std::fs::remove_dir_all(&dir)?;
            }
            if a.scenarios.iter().any(|s| s == "S2") && measures(backend, "S2") {
                let rate = run_child(&a, "S2", backend, &dir)?;
                eprintln!("round {round} S2 {backend}: {}/s", fmt_rate(rate));
                results
                    .entry(("S2".into(), backend.clone()))
                    .or_default()
                    .push(rate);
                log.push(format!(
                    "{{\"round\":{round},\"scenario\":\"S2\",\"backend\":\"{backend}\",\"rate\":{rate:.1}}}"
                ));
                std::fs::remove_dir_all(&dir)?;
            }
        }
    }
    let size = if a.size == 0 {
        "~376-byte flow".to_owned()
    } else {
        format!("{}-byte", a.size)
    };
    println!(
        "{} {size} records, {} point reads, medians of {} rounds (records/s; ratio to {})",
        a.records, a.points, a.rounds, a.against
    );
    print!("| scenario |");
    for b in &a.backends {
        print!(" {b} |");
    }
    println!();
    print!("|---|");
    for _ in &a.backends {
        print!("---|");
    }
    println!();
    let names = [
        ("S1", "S1 buffered append"),
        ("S2", "S2 durable append"),
        ("S3", "S3 sequential read"),
        ("S4", "S4 point reads"),
    ];
    for (s, label) in names {
        if !a.scenarios.iter().any(|x| x == s) {
            continue;
        }
        let base = results
            .get(&(s.to_owned(), a.against.clone()))
            .map(|v| median(&mut v.clone()));
        print!("| {label} |");
        for b in &a.backends {
            match results.get(&(s.to_owned(), b.clone())) {
                Some(v) => {
                    let m = median(&mut v.clone());
                    match base {
                        Some(x) if b != &a.against => print!(" {} ({:.2} ×) |", fmt_rate(m), m / x),
                        _ => print!(" {} |", fmt_rate(m)),
                    }
                }
                None => print!(" – |"),
            }
        }
        println!();
    }
    if !disk.is_empty() {
        print!("| disk after S1, MB |");
        for b in &a.backends {
            match disk.get(b) {
                Some(d) => print!(" {:.0} |", *d as f64 / 1e6),
                None => print!(" – |"),
            }
        }
        println!();
    }
    if let Some(path) = &a.svg {
        let medians: Vec<(String, Vec<(String, f64)>)> = names
            .iter()
            .filter(|(s, _)| a.scenarios.iter().any(|x| x == s))
            .map(|(s, label)| {
                let rows = a
                    .backends
                    .iter()
                    .filter_map(|b| {
                        results
                            .get(&(s.to_string(), b.clone()))
                            .map(|v| (b.clone(), median(&mut v.clone())))
                    })
                    .collect();
                (label.to_string(), rows)
            })
            .collect();
        let title = format!(
            "{} {size} records, medians of {} rounds: records/s relative to {}",
            a.records, a.rounds, a.against
        );
        std::fs::write(path, svg::chart(&title, &a.against, &a.backends, &medians))?;
    }
    if let Some(path) = &a.json {
        std::fs::write(path, format!("[\n{}\n]\n", log.join(",\n")))?;
    }
    let _ = std::fs::remove_dir_all(&a.dir);
    Ok(())
}
