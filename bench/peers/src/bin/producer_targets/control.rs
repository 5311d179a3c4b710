//! The control (`--control T [--control-keys K]`): the Producer's work,
//! as little of it as keeps Kafka's order, with nothing else shared.
//!
//! T threads claim records 1,024 at a time (as `perf produce` does) and
//! push them into eight partitions' 16 KiB batches (`BatchBuilder`), each
//! partition behind a lock whose release is a plain store (as the
//! Producer's). Once 64 KiB of a partition's full batches wait, the
//! thread that filled the last takes them and an offset in the file
//! under the lock, then builds them (checksummed) and writes them there
//! (`pwrite`) after letting it go. No callbacks, no buffer memory, no
//! linger thread, no write-behind.
//!
//! - Keyless (no `--control-keys`): a thread fills only partitions of its
//!   own (thread t the partitions t, t + T, … below eight in turn, a batch
//!   each), so with up to eight threads no lock or batch is ever another
//!   thread's: what the machine gives T threads sharing nothing but the
//!   count of records claimed.
//! - Keyed (`--control-keys K`): record i has key `key-{i mod K}`, and
//!   its partition is Kafka's murmur2 choice for it, so the threads meet
//!   at every partition's lock and batch, as keyed sends do.
//! - Keyed, the order as references (`--control-keys K --control-refs`):
//!   see `refs.rs`.

use kafkalite::record::{BatchBuilder, Compression};
use std::cell::UnsafeCell;
use std::fs::File;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Partitions, as `producer_targets` gives `perf produce`.
pub const PARTITIONS: usize = 8;
/// Each record's value, as `--record-size 300`.
const RECORD: usize = 300;
/// `batch.size`'s default.
pub(crate) const BATCH: usize = 16 << 10;
/// A partition's built batches are written together from this many bytes
/// (the Producer's `WRITE_BYTES`).
pub(crate) const WRITE: usize = 64 << 10;
/// Records a thread claims at a time (`perf produce`'s `CLAIM`).
const CLAIM: u64 = 1024;
/// Spins (a few microseconds, far longer than a push holds the lock)
/// before a waiter gives its core away at each further look: the holder
/// may be waiting for this core when the threads outnumber the cores.
const SPINS: u32 = 1024;

/// A lock taken by a compare-exchange and released by a plain store, on
/// lines of its own.
#[repr(align(128))]
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is reached only through a `Held`, which exists while its
// thread alone holds `locked` (taken by a compare-exchange, released by the
// `Held`'s drop); the acquire and release order the threads' accesses.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub(crate) fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    pub(crate) fn lock(&self) -> Held<'_, T> {
        let mut spins = 0;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        Held(self, PhantomData)
    }
}

/// A [`SpinLock`] held. Shared between threads only where `&mut T` may be
/// (it hands out `&T` and `&mut T`), whatever `SpinLock<T>` may be.
pub(crate) struct Held<'a, T>(&'a SpinLock<T>, PhantomData<&'a mut T>);

impl<T> Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this thread holds the lock (see `SpinLock`'s `Sync`).
        unsafe { &*self.0.value.get() }
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference through this `Held`.
        unsafe { &mut *self.0.value.get() }
    }
}

impl<T> Drop for Held<'_, T> {
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}

/// A partition's open batch, its full batches waiting, and its file's
/// length with every write reserved so far.
struct Partition {
    batch: BatchBuilder,
    waiting: Vec<BatchBuilder>,
    waiting_bytes: usize,
    reserved: u64,
}

impl Partition {
    /// Moves the open batch (if any) to those waiting; returns the batches
    /// to write and the offset reserved for them once `WRITE` bytes (or,
    /// with `all`, any) wait. They are built (checksummed) and written
    /// after the lock is let go, as the Producer's are.
    fn seal(&mut self, all: bool) -> Option<(Vec<BatchBuilder>, u64)> {
        if !self.batch.is_empty() {
            self.waiting_bytes += self.batch.size();
            let full = std::mem::replace(&mut self.batch, new_batch());
            self.waiting.push(full);
        }
        let ready = self.waiting_bytes >= WRITE || (all && !self.waiting.is_empty());
        if !ready {
            return None;
        }
        let at = self.reserved;
        self.reserved += self.waiting_bytes as u64;
        self.waiting_bytes = 0;
        Some((std::mem::take(&mut self.waiting), at))
    }
}

/// What a thread wrote: bytes, and records in them.
#[derive(Default)]
pub(crate) struct Written {
    pub(crate) bytes: u64,
    pub(crate) records: u64,
}

impl std::ops::AddAssign for Written {
    fn add_assign(&mut self, other: Written) {
        self.bytes += other.bytes;
        self.records += other.records;
    }
}

/// Builds `batches` and writes them to `file` at `at`.
fn write_batches(file: &File, batches: Vec<BatchBuilder>, at: u64) -> std::io::Result<Written> {
    let mut out = Vec::with_capacity(WRITE + BATCH);
    let mut records = 0;
    for b in batches {
        records += b.len() as u64;
        out.extend_from_slice(&b.build());
    }
    file.write_all_at(&out, at)?;
    Ok(Written {
        bytes: out.len() as u64,
        records,
    })
}

fn new_batch() -> BatchBuilder {
    BatchBuilder::with_capacity(Compression::None, BATCH)
}

/// What a control run measured.
pub struct Outcome {
    pub records_per_sec: f64,
    /// The most bytes a partition's file holds beyond the least's.
    pub spread_bytes: u64,
}

/// One file a partition, made afresh under `dir`.
pub(crate) fn partition_files(dir: &Path) -> Result<Vec<File>, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("control directory: {e}"))?;
    (0..PARTITIONS)
        .map(|p| File::create(dir.join(format!("{p}.log"))))
        .collect::<std::io::Result<Vec<File>>>()
        .map_err(|e| format!("control files: {e}"))
}

/// Payloads that differ from one another, as the flow records do.
pub(crate) fn payloads() -> Vec<Vec<u8>> {
    (0..1024u32)
        .map(|i| {
            (0..RECORD)
                .map(|j| (i.wrapping_mul(31).wrapping_add(j as u32 * 7) % 251) as u8)
                .collect()
        })
        .collect()
}

/// The keys `key-0` … `key-{n-1}`, each with its murmur2 partition.
pub(crate) fn key_table(n: usize) -> Vec<(Vec<u8>, usize)> {
    (0..n.max(1))
        .map(|k| {
            let key = format!("key-{k}").into_bytes();
            let p = kafkalite::partition_for_key(&key, PARTITIONS as u32) as usize;
            (key, p)
        })
        .collect()
}

/// Runs `threads` sending threads until every record is claimed, the
/// records claimed [`CLAIM`] at a time (as `perf produce` does): thread t
/// makes its state with `state(t)`, then calls `send` with it for each
/// record it claimed. Returns what they wrote, together.
pub(crate) fn on_threads<S>(
    threads: usize,
    records: u64,
    state: impl Fn(usize) -> S + Sync,
    send: impl Fn(&mut S, u64, &mut Written) -> std::io::Result<()> + Sync,
) -> Result<Written, String> {
    let claimed = AtomicU64::new(0);
    std::thread::scope(|s| {
        let senders: Vec<_> = (0..threads)
            .map(|t| {
                let (claimed, state, send) = (&claimed, &state, &send);
                s.spawn(move || -> std::io::Result<Written> {
                    let mut written = Written::default();
                    let mut st = state(t);
                    loop {
                        let from = claimed.fetch_add(CLAIM, Ordering::Relaxed);
                        if from >= records {
                            return Ok(written);
                        }
                        for i in from..(from + CLAIM).min(records) {
                            send(&mut st, i, &mut written)?;
                        }
                    }
                })
            })
            .collect();
        let mut written = Written::default();
        for sender in senders {
            written += sender
                .join()
                .map_err(|_| "a control thread panicked".to_string())?
                .map_err(|e| format!("control write: {e}"))?;
        }
        Ok(written)
    })
}

/// The run's outcome, once the files hold every record's bytes (then
/// removed with `dir`).
pub(crate) fn checked(
    dir: &Path,
    files: &[File],
    written: &Written,
    records: u64,
    took: std::time::Duration,
) -> Result<Outcome, String> {
    let mut sizes = Vec::with_capacity(files.len());
    for f in files {
        sizes.push(
            f.metadata()
                .map_err(|e| format!("control size: {e}"))?
                .len(),
        );
    }
    let _ = std::fs::remove_dir_all(dir);
    let on_disk: u64 = sizes.iter().sum();
    if written.records != records || on_disk != written.bytes {
        return Err(format!(
            "control wrote {} of {records} records, {} bytes, {on_disk} on disk",
            written.records, written.bytes
        ));
    }
    Ok(Outcome {
        records_per_sec: records as f64 / took.as_secs_f64(),
        spread_bytes: kafkalite_peers::spread(&sizes),
    })
}

/// Runs the control: `threads` threads send `records` records, keyed by
/// `keys` keys if given, into partition files under `dir`; the files'
/// bytes are checked against what was written.
pub fn run(
    dir: &Path,
    threads: usize,
    records: u64,
    keys: Option<usize>,
) -> Result<Outcome, String> {
    let files = partition_files(dir)?;
    let partitions: Vec<SpinLock<Partition>> = (0..PARTITIONS)
        .map(|_| {
            SpinLock::new(Partition {
                batch: new_batch(),
                waiting: Vec::new(),
                waiting_bytes: 0,
                reserved: 0,
            })
        })
        .collect();
    let pool = payloads();
    let keys = keys.map(key_table);
    let start = Instant::now();
    // A keyless thread's state: its index, and its partition now (its
    // partitions are t, t + threads, … below eight).
    let own = |t| (t, t % PARTITIONS);
    let mut written = on_threads(threads, records, own, |(t, own), i, written| {
        let value = &pool[(i % pool.len() as u64) as usize];
        let (key, mut p) = match &keys {
            Some(k) => {
                let (key, p) = &k[(i % k.len() as u64) as usize];
                (Some(key.as_slice()), *p)
            }
            None => (None, *own),
        };
        loop {
            let mut part = partitions[p].lock();
            // 32: more than a record's own fields and key.
            let full = !part.batch.is_empty() && part.batch.size() + value.len() + 32 > BATCH;
            let out = if full { part.seal(false) } else { None };
            // Keyless, a full batch: on to the thread's next partition, as
            // a sticky switch.
            let switch = full && key.is_none();
            if !switch {
                part.batch.push_parts(i as i64, key, Some(value), &[]);
            }
            drop(part);
            if let Some((batches, at)) = out {
                *written += write_batches(&files[p], batches, at)?;
            }
            if !switch {
                return Ok(());
            }
            *own = if *own + threads < PARTITIONS {
                *own + threads
            } else {
                *t % PARTITIONS
            };
            p = *own;
        }
    })?;
    for (p, part) in partitions.iter().enumerate() {
        let out = part.lock().seal(true);
        if let Some((batches, at)) = out {
            written +=
                write_batches(&files[p], batches, at).map_err(|e| format!("control write: {e}"))?;
        }
    }
    checked(dir, &files, &written, records, start.elapsed())
}
