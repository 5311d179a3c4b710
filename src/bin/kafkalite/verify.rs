//! `verify`: checks a store directory read-only (no lock taken, nothing
//! written) and reports what the next open's recovery would do, following
//! the library's rules: in a partition that was not closed cleanly, the
//! active (last) segment may hold a torn tail, cut at the first bad batch,
//! and so may a sealed segment above the recovery point (rolled segments
//! are flushed in the background), which is then cut together with every
//! later segment; a bad batch anywhere else, or below the recovery point, is
//! corruption that makes the open fail.

use crate::segment;
use crate::util::{print_json, CliError, CliResult, Progress};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kafkalite::files::{self, FileKind, CHECKPOINT, CLEAN_SHUTDOWN, DELETED, LOCK};

/// Findings: notes are fine or recoverable, problems are corruption.
/// In text mode each is printed as found; in JSON mode all are printed at
/// the end, in one object.
#[derive(Default)]
struct Report {
    problems: Vec<String>,
    notes: Vec<String>,
    json: bool,
    /// Segments scanned so far, for the progress line.
    scanned: Arc<AtomicU64>,
}

impl Report {
    fn problem(&mut self, what: String) {
        if !self.json {
            println!("CORRUPT {what}");
        }
        self.problems.push(what);
    }
    fn note(&mut self, what: String) {
        if !self.json {
            println!("note    {what}");
        }
        self.notes.push(what);
    }
}

/// Reads a CRC-guarded text file (`crc32 xxxxxxxx` last line) and returns
/// its body, or what is wrong with it.
fn read_guarded(path: &Path) -> Result<Option<String>, String> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    let text = String::from_utf8(bytes).map_err(|_| "not utf-8".to_owned())?;
    let at = text.rfind("crc32 ").ok_or("no crc32 line")?;
    let (body, line) = text.split_at(at);
    let stored = u32::from_str_radix(line.trim_start_matches("crc32 ").trim_end(), 16)
        .map_err(|_| "bad crc32 line".to_owned())?;
    let actual = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, body.as_bytes()) as u32;
    if stored != actual {
        return Err(format!(
            "crc mismatch: stored {stored:08x}, computed {actual:08x}"
        ));
    }
    Ok(Some(body.to_owned()))
}

/// Runs `verify` on the store in `root`; with `json`, prints one object:
/// `{"partitions", "segments", "problems": [..], "notes": [..]}`.
pub fn verify(root: &Path, json: bool) -> CliResult<()> {
    if !root.is_dir() {
        return Err(CliError::msg(format!(
            "store directory {} does not exist",
            root.display()
        )));
    }
    let mut report = Report {
        json,
        ..Report::default()
    };
    // Opened read-only: a shared probe of the lock, never created.
    if let Ok(f) = fs::File::open(root.join(LOCK)) {
        if let Err(std::fs::TryLockError::WouldBlock) = f.try_lock_shared() {
            report.note(
                "the store is open in another process: active segments may change while verifying"
                    .to_owned(),
            );
        }
    }
    let mut topics: Vec<(String, u32)> = Vec::new();
    match read_guarded(&root.join("topics.meta")) {
        Ok(Some(body)) => {
            for line in body.lines() {
                let mut w = line.split(' ');
                if let (Some("topic"), Some(name), Some(n)) = (w.next(), w.next(), w.next()) {
                    if let Ok(n) = n.parse() {
                        topics.push((name.to_owned(), n));
                    }
                }
            }
        }
        Ok(None) => {}
        Err(e) => report.problem(format!("topics.meta: {e}; the store will not open")),
    }
    let mut dirs: Vec<String> = fs::read_dir(root)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect();
    dirs.sort();
    let (mut partitions, mut segments) = (0, 0);
    // A large store takes a while: a progress line on a terminal.
    let progress = Progress::counting("verify", "segments", Arc::clone(&report.scanned));
    for d in &dirs {
        if d.ends_with(DELETED) {
            report.note(format!(
                "{d}: leftover of a deleted topic, removed at the next open"
            ));
            continue;
        }
        let Some((topic, p)) = d.rsplit_once('-') else {
            continue;
        };
        let Ok(p) = p.parse::<u32>() else { continue };
        let known =
            topic == "__consumer_offsets" || topics.iter().any(|(t, n)| t == topic && p < *n);
        if !known {
            report.note(format!("{d}: not a partition in topics.meta (stale)"));
            continue;
        }
        partitions += 1;
        segments += verify_partition(&root.join(d), d, &mut report)?;
    }
    drop(progress);
    for (t, n) in &topics {
        for p in 0..*n {
            if !dirs.contains(&format!("{t}-{p}")) {
                report.note(format!("{t}-{p}: missing; the next open creates it empty"));
            }
        }
    }
    if report.problems.is_empty() {
        open_check(root, &mut report);
    }
    if json {
        print_json(&serde_json::json!({
            "partitions": partitions,
            "segments": segments,
            "problems": report.problems,
            "notes": report.notes,
        }))?;
    } else {
        println!(
            "verified {partitions} partitions, {segments} segments: {} problems, {} notes",
            report.problems.len(),
            report.notes.len()
        );
    }
    if !report.problems.is_empty() {
        return Err(CliError::msg(format!(
            "{} corrupt file(s) found",
            report.problems.len()
        )));
    }
    Ok(())
}

/// What the checks above do not cover (metadata read back as strictly as
/// user input: topic names and configs, offset records) is checked by the
/// library itself: a read-only open, which takes no lock and writes
/// nothing, fails where a writable open would.
fn open_check(root: &Path, report: &mut Report) {
    if !root.join("__consumer_offsets-0").is_dir() {
        // Not opened yet: the first open creates the store.
        return;
    }
    if let Err(e) = kafkalite::Store::open_read_only(root, kafkalite::StoreOptions::default()) {
        let CliError(text) = e.into();
        report.problem(format!("{text}; the store will not open"));
    }
}

/// Checks one partition directory; returns its number of segments.
fn verify_partition(dir: &Path, name: &str, report: &mut Report) -> CliResult<usize> {
    let clean = dir.join(CLEAN_SHUTDOWN).exists();
    let recovery_point = if clean {
        i64::MAX
    } else {
        match read_guarded(&dir.join(CHECKPOINT)) {
            Ok(Some(body)) => body
                .lines()
                .find_map(|l| l.strip_prefix("recovery-point "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(i64::MIN),
            Ok(None) => i64::MIN,
            Err(e) => {
                report.note(format!(
                    "{name}/{CHECKPOINT}: {e}; not trusted, the whole log will be scanned"
                ));
                i64::MIN
            }
        }
    };
    for e in fs::read_dir(dir)?.filter_map(|e| e.ok()) {
        let f = e.file_name().to_string_lossy().into_owned();
        match files::parse_file_name(&f) {
            Some(FileKind::Leftover) => report.note(format!(
                "{name}/{f}: leftover of an interrupted operation, removed at the next open"
            )),
            Some(FileKind::Swap(_)) => report.note(format!(
                "{name}/{f}: a finished compaction; the next open swaps it in"
            )),
            _ => {}
        }
    }
    let bases: Vec<i64> = segment::log_files(dir)?
        .into_iter()
        .map(|(base, _)| base)
        .collect();
    let mut next = i64::MIN;
    for (i, &base) in bases.iter().enumerate() {
        let is_last = i + 1 == bases.len();
        let log_name = files::file_name(base, files::LOG);
        let log = dir.join(&log_name);
        let file = format!("{name}/{log_name}");
        let data = segment::read(&log).map_err(CliError)?;
        if next > base {
            report.problem(format!(
                "{file}: segment starts at offset {base}, below the previous segment's end {next}"
            ));
        }
        let scan = segment::scan(&data, base);
        report.scanned.fetch_add(1, Ordering::Relaxed);
        next = scan.next_offset;
        // Rolled segments are flushed in the background: after a crash, a
        // sealed segment above the recovery point may have lost a tail
        // (a bad batch, or batches missing before the next segment).
        let next_base = bases.get(i + 1).copied();
        let above = !clean && next_base.is_some_and(|n| n > recovery_point);
        let short = next_base.is_some_and(|n| scan.next_offset < n);
        // Zeros durable appends wrote ahead, where a crash may have left
        // them (the open cuts them there; elsewhere they are damage).
        let at_recovery_point = !clean && next_base == Some(recovery_point);
        let zeros = scan.zero_tail && !clean && scan.next_offset >= recovery_point;
        if (above || at_recovery_point) && zeros && !short {
            report.note(format!(
                "{file}: zeros written ahead of durable appends from position {}; recovery cuts these {} bytes, the segment is whole",
                scan.valid_size,
                scan.size - scan.valid_size
            ));
            check_indexes(dir, name, base, &scan, false, report)?;
            continue;
        }
        if above && (scan.error.is_some() || short) && scan.next_offset >= recovery_point {
            report.note(format!(
                "{file}: torn tail at position {} in a sealed segment above the recovery point; recovery would cut {} bytes and delete the {} later segments",
                scan.valid_size,
                scan.size - scan.valid_size,
                bases.len() - i - 1
            ));
            break;
        }
        if let Some((pos, e)) = &scan.error {
            if is_last && zeros {
                report.note(format!(
                    "{file}: zeros written ahead of durable appends from position {pos}; the next open cuts these {} bytes",
                    scan.size - scan.valid_size
                ));
            } else if !is_last || scan.next_offset < recovery_point {
                let why = if is_last {
                    "below the recovery point"
                } else {
                    "in a sealed segment"
                };
                report.problem(format!(
                    "{file}: bad batch at position {pos} {why}: {e}; the store will not open"
                ));
            } else {
                report.note(format!(
                    "{file}: torn tail at position {pos} ({e}), recovery would cut {} bytes",
                    scan.size - scan.valid_size
                ));
            }
        }
        check_indexes(dir, name, base, &scan, is_last && !clean, report)?;
    }
    if !clean && !bases.is_empty() {
        report.note(format!(
            "{name}: not closed cleanly; the next open scans its active segment"
        ));
    }
    Ok(bases.len())
}

fn check_indexes(
    dir: &Path,
    name: &str,
    base: i64,
    scan: &segment::Scan,
    active: bool,
    report: &mut Report,
) -> CliResult<()> {
    for ext in ["index", "timeindex"] {
        let path = dir.join(format!("{base:020}.{ext}"));
        let file = format!("{name}/{base:020}.{ext}");
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                report.note(format!("{file}: missing, the next open rebuilds it"));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let (mut problems, tail) = if ext == "index" {
            let e = segment::offset_entries(&data);
            let mut p = e.problems;
            p.extend(segment::check_offset_index(&e.entries, base, &scan.batches));
            (p, e.zero_tail)
        } else {
            let e = segment::time_entries(&data);
            let mut p = e.problems;
            p.extend(segment::check_time_index(&e.entries, base, &scan.batches));
            (p, e.zero_tail)
        };
        if tail > 0 && !active {
            problems.push(format!("{tail} zero entries at the end of a sealed index"));
        }
        if let Some(first) = problems.first() {
            // Indexes are derived data: the next open rebuilds a bad one.
            report.note(format!(
                "{file}: {} problem(s), first: {first}; the next open rebuilds it",
                problems.len()
            ));
        }
    }
    Ok(())
}
