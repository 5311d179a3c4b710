//! Small helpers: the CLI's error type, opening a store, JSON output
//! (serde_json, base64), time parsing and a progress line.

use kafkalite::{Store, StoreOptions};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A one-line error message; `main` prints it as `kafkalite: <message>`.
#[derive(Debug)]
pub struct CliError(pub String);

/// The result type of every subcommand.
pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// An error with a message.
    pub fn msg(m: impl Into<String>) -> Self {
        CliError(m.into())
    }
}

/// The message of [`CliError::broken_pipe`]: `main` ends quietly on it.
pub const BROKEN_PIPE: &str = "\0stdout closed";

impl CliError {
    /// Stdout was closed by its reader (`kafkalite dump … | head`): not an
    /// error to report, as Unix tools end quietly then.
    pub fn broken_pipe() -> Self {
        CliError(BROKEN_PIPE.to_owned())
    }

    /// Whether this is [`CliError::broken_pipe`].
    pub fn is_broken_pipe(&self) -> bool {
        self.0 == BROKEN_PIPE
    }
}

impl<E: std::error::Error + 'static> From<E> for CliError {
    /// The error and its sources on one line, joined by `: `; a closed
    /// stdout becomes [`CliError::broken_pipe`].
    fn from(e: E) -> Self {
        if (&e as &dyn std::error::Error)
            .downcast_ref::<std::io::Error>()
            .is_some_and(is_broken_pipe)
        {
            return CliError::broken_pipe();
        }
        let mut s = e.to_string();
        let mut source = e.source();
        while let Some(inner) = source {
            let text = inner.to_string();
            if !s.ends_with(&text) {
                s.push_str(": ");
                s.push_str(&text);
            }
            source = inner.source();
        }
        CliError(s.replace('\n', " "))
    }
}

/// Whether an error is a closed pipe on stdout (`kafkalite consume | head`),
/// which ends output quietly.
pub fn is_broken_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}

/// Opens the store in `dir`. Unless `create`, the directory must exist: read
/// commands never create a store by accident.
pub fn open_store(dir: &Path, create: bool) -> CliResult<Store> {
    if !create && !dir.is_dir() {
        return Err(CliError::msg(format!(
            "store directory {} does not exist",
            dir.display()
        )));
    }
    Ok(Store::open(dir, StoreOptions::default())?)
}

/// Opens the store read-only (no lock, no writes: works while another
/// process has it open), runs `f` and closes it.
pub fn with_store_read_only<T>(dir: &Path, f: impl FnOnce(&Store) -> CliResult<T>) -> CliResult<T> {
    if !dir.is_dir() {
        return Err(CliError::msg(format!(
            "store directory {} does not exist",
            dir.display()
        )));
    }
    let store = Store::open_read_only(dir, StoreOptions::default())?;
    let result = f(&store);
    store.close()?;
    result
}

/// Opens the store, runs `f`, and always closes the store on the way out
/// (clean-shutdown markers, fsynced logs), whatever `f` returned.
pub fn with_store<T>(
    dir: &Path,
    create: bool,
    f: impl FnOnce(&Store) -> CliResult<T>,
) -> CliResult<T> {
    closing(open_store(dir, create)?, f)
}

/// As [`with_store`] (creating the store), with these options.
pub fn with_store_options<T>(
    dir: &Path,
    options: StoreOptions,
    f: impl FnOnce(&Store) -> CliResult<T>,
) -> CliResult<T> {
    closing(Store::open(dir, options)?, f)
}

fn closing<T>(store: Store, f: impl FnOnce(&Store) -> CliResult<T>) -> CliResult<T> {
    let result = f(&store);
    let closed = store.close();
    let value = result?;
    closed?;
    Ok(value)
}

/// Optional bytes as a JSON base64 string (standard alphabet, padded:
/// RFC 4648), or `null`.
pub fn json_b64(b: Option<&[u8]>) -> serde_json::Value {
    use base64::Engine as _;
    b.map_or(serde_json::Value::Null, |b| {
        base64::engine::general_purpose::STANDARD.encode(b).into()
    })
}

/// A float for JSON, rounded to 3 decimals (NaN and infinities, which JSON
/// cannot carry, become 0).
pub fn json_f64(v: f64) -> serde_json::Value {
    if v.is_finite() {
        ((v * 1000.0).round() / 1000.0).into()
    } else {
        0.into()
    }
}

/// Prints `v` as one line of JSON (serde_json) on stdout.
pub fn print_json(v: &impl serde::Serialize) -> CliResult<()> {
    let line = serde_json::to_string(v).map_err(|e| CliError::msg(format!("json: {e}")))?;
    println!("{line}");
    Ok(())
}

/// Bytes as text for the plain outputs: UTF-8 where valid, with invalid
/// sequences replaced.
pub fn text(b: Option<&[u8]>) -> String {
    b.map_or_else(
        || "null".to_owned(),
        |b| String::from_utf8_lossy(b).into_owned(),
    )
}

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses a point in time as milliseconds since the epoch: either a number
/// of milliseconds, or `YYYY-MM-DDTHH:MM[:SS[.fff]]` with an optional `Z` or
/// `±HH:MM` zone (UTC when absent); a date alone means its midnight, UTC.
pub fn parse_time_ms(s: &str) -> CliResult<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || {
        CliError::msg(format!(
            "invalid time {s:?}: expected e.g. 2024-01-01T00:00:00Z or milliseconds since the epoch"
        ))
    };
    let num = |t: &str, len: usize| -> CliResult<i64> {
        if t.len() != len || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse().map_err(|_| bad())
    };
    let (date, rest) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    };
    let mut dp = date.split('-');
    let (y, mo, d) = match (dp.next(), dp.next(), dp.next(), dp.next()) {
        (Some(y), Some(m), Some(d), None) => (num(y, 4)?, num(m, 2)?, num(d, 2)?),
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    // Split the zone off the time of day.
    let (time, zone_ms) = if let Some(t) = rest.strip_suffix(['Z', 'z']) {
        (t, 0)
    } else if let Some(i) = rest.rfind(['+', '-']) {
        let (t, z) = rest.split_at(i);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let (zh, zm) = z[1..].split_once(':').unwrap_or((&z[1..], "00"));
        (t, sign * (num(zh, 2)? * 60 + num(zm, 2)?) * 60_000)
    } else {
        (rest, 0)
    };
    let mut ms_of_day = 0;
    if !time.is_empty() {
        let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
        let mut tp = hms.split(':');
        let h = tp.next().map(|v| num(v, 2)).transpose()?.unwrap_or(0);
        let mi = tp.next().map(|v| num(v, 2)).transpose()?.ok_or_else(bad)?;
        let sec = tp.next().map(|v| num(v, 2)).transpose()?.unwrap_or(0);
        if tp.next().is_some() || h > 23 || mi > 59 || sec > 60 {
            return Err(bad());
        }
        let mut millis = 0;
        if !frac.is_empty() {
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let f3: String = frac.chars().chain("000".chars()).take(3).collect();
            millis = f3.parse::<i64>().map_err(|_| bad())?;
        }
        ms_of_day = ((h * 60 + mi) * 60 + sec) * 1000 + millis;
    }
    Ok(days_from_civil(y, mo, d) * 86_400_000 + ms_of_day - zone_ms)
}

/// A progress line on stderr (`records done, rate`), refreshed a few times
/// a second from the first second on, shown only when stderr is a terminal
/// (so never in pipes, files or CI logs). Stops and clears the line on
/// drop.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts reporting `done` (a shared counter of records) under `label`.
    pub fn start(label: &'static str, done: Arc<AtomicU64>) -> Progress {
        Self::counting(label, "records", done)
    }

    /// As [`start`](Self::start), counting `unit` (e.g. "segments").
    pub fn counting(label: &'static str, unit: &'static str, done: Arc<AtomicU64>) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() {
            return Progress { stop, thread: None };
        }
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("kafkalite-progress".into())
            .spawn(move || {
                let start = Instant::now();
                let mut printed = false;
                while !flag.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(200));
                    let elapsed = start.elapsed().as_secs_f64();
                    if elapsed < 1.0 {
                        continue;
                    }
                    let n = done.load(Ordering::Relaxed);
                    eprint!(
                        "\r{label}: {n} {unit}, {:.0} {unit}/s   ",
                        n as f64 / elapsed
                    );
                    printed = true;
                }
                if printed {
                    eprint!("\r{:60}\r", "");
                }
            })
            .ok();
        Progress { stop, thread }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(json_b64(Some(plain.as_bytes())), encoded);
        }
        assert_eq!(json_b64(None), serde_json::Value::Null);
    }

    #[test]
    fn times_parse() {
        assert_eq!(parse_time_ms("1700000000000").unwrap(), 1_700_000_000_000);
        assert_eq!(parse_time_ms("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(
            parse_time_ms("2024-01-01T00:00:00Z").unwrap(),
            1_704_067_200_000
        );
        assert_eq!(
            parse_time_ms("2024-01-01T01:00:00+01:00").unwrap(),
            1_704_067_200_000
        );
        assert_eq!(
            parse_time_ms("2024-01-01T00:00:00.250Z").unwrap(),
            1_704_067_200_250
        );
        assert_eq!(parse_time_ms("2024-01-01").unwrap(), 1_704_067_200_000);
        assert_eq!(parse_time_ms("2000-02-29T12:30").unwrap(), 951_827_400_000);
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2024-01-01T25:00",
            "2024-1-1",
        ] {
            assert!(parse_time_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_floats_are_rounded_and_finite() {
        assert_eq!(json_f64(1.23456), 1.235);
        assert_eq!(json_f64(f64::NAN), 0);
        assert_eq!(json_f64(f64::INFINITY), 0);
    }
}
