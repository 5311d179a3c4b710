//! Model test: random appends, reads, reopens and crashes applied to a real
//! `PartitionLog` and to a `Vec` of records, compared after every step.
//!
//! Crash rules checked here:
//! - a drop without `close()` (a process crash) loses nothing: the page cache
//!   survives, so the recovered log equals everything appended;
//! - a crash that also cuts the last `.log` (a power loss that took unsynced
//!   bytes) recovers exactly the whole batches before the cut, a prefix of the
//!   appends that still holds everything known to be on disk (acknowledged
//!   `Fsync` appends, flushes, sealed segments, recovered data). The cut is
//!   never placed below that durable point: a disk that loses synced data is
//!   outside the contract.

use bytes::Bytes;
use kafkalite::{
    BatchHeader, Compression, Durability, Error, LogConfig, LogRecord, PartitionLog, ReadMode,
    Record,
};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

const BASE_TS: i64 = 1_700_000_000_000;

#[derive(Clone, Debug)]
enum Action {
    Append {
        count: usize,
        max_value: usize,
        lz4: bool,
        fsync: bool,
        seed: u64,
    },
    /// A few large records: rolls the 4 KiB segments.
    BigAppend {
        count: usize,
        lz4: bool,
        fsync: bool,
        seed: u64,
    },
    Read {
        at: u32,
        max_bytes: usize,
    },
    OffsetForTimestamp {
        at: u32,
    },
    Flush,
    CloseAndReopen,
    CrashAndReopen,
    /// Crash, then cut the last `.log` at a point at or after the durable end.
    CrashCutTail {
        cut: u16,
    },
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        10 => (1usize..50, 0usize..400, any::<bool>(), prop::bool::weighted(0.2), any::<u64>())
            .prop_map(|(count, max_value, lz4, fsync, seed)| Action::Append { count, max_value, lz4, fsync, seed }),
        2 => (1usize..5, any::<bool>(), prop::bool::weighted(0.2), any::<u64>())
            .prop_map(|(count, lz4, fsync, seed)| Action::BigAppend { count, lz4, fsync, seed }),
        6 => (any::<u32>(), prop_oneof![0usize..200, 0usize..20_000, Just(usize::MAX)])
            .prop_map(|(at, max_bytes)| Action::Read { at, max_bytes }),
        2 => any::<u32>().prop_map(|at| Action::OffsetForTimestamp { at }),
        1 => Just(Action::Flush),
        1 => Just(Action::CloseAndReopen),
        1 => Just(Action::CrashAndReopen),
        2 => any::<u16>().prop_map(|cut| Action::CrashCutTail { cut }),
    ]
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A record from a seed: half-compressible value of `len` bytes, a key on
/// most records, a null value now and then, jittered timestamps.
fn make_record(seed: u64, i: u64, len: usize, clock: i64) -> Record {
    let h = mix(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let ts = clock + (h % 40) as i64 - 20;
    let mut r = if len == 0 && h & 4 == 0 {
        Record {
            value: None,
            ..Record::default()
        }
    } else {
        let v: Vec<u8> = (0..len)
            .map(|j| {
                if j % 8 < 4 {
                    b'a' + (j % 26) as u8
                } else {
                    (mix(h ^ j as u64) & 0xff) as u8
                }
            })
            .collect();
        Record::new(v)
    };
    if h & 3 != 0 {
        r = r.key(format!("k{}", h % 97));
    }
    r.timestamp(ts)
}

fn config(mode: ReadMode) -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 4096;
    c.settings.segment_index_bytes = 64; // 8 offset entries, 5 time entries: full indexes roll too
    c.settings.index_interval_bytes = 200;
    c.read_mode = mode;
    c
}

struct Harness {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    config: LogConfig,
    log: Option<PartitionLog>,
    model: Vec<Record>,
    /// Everything below this offset is known to be on disk.
    durable: i64,
    clock: i64,
}

fn same(got: &LogRecord, want: &Record, offset: i64) -> bool {
    got.offset == offset
        && got.timestamp == want.timestamp
        && got.key == want.key
        && got.value == want.value
        && got.headers == want.headers
}

/// (end position, next offset) of each whole batch in a `.log` image.
fn batch_ends(bytes: &[u8]) -> Vec<(u64, i64)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Ok(h) = BatchHeader::parse(&bytes[pos..]) {
        if pos + h.size() > bytes.len() {
            break;
        }
        pos += h.size();
        out.push((pos as u64, h.next_offset()));
    }
    out
}

fn last_log_file(dir: &Path) -> (PathBuf, i64) {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let p = logs.pop().unwrap();
    let base = p.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    (p, base)
}

impl Harness {
    fn new(mode: ReadMode) -> Harness {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t-0");
        let config = config(mode);
        let log = PartitionLog::open(&dir, config.clone()).unwrap();
        Harness {
            _tmp: tmp,
            dir,
            config,
            log: Some(log),
            model: Vec::new(),
            durable: 0,
            clock: BASE_TS,
        }
    }

    fn log(&self) -> &PartitionLog {
        self.log.as_ref().unwrap()
    }

    fn end(&self) -> i64 {
        self.model.len() as i64
    }

    fn append(&mut self, records: Vec<Record>, lz4: bool, fsync: bool) {
        let compression = if lz4 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let durability = if fsync {
            Durability::Fsync
        } else {
            Durability::Written
        };
        let info = self
            .log()
            .append_records(&records, compression, durability)
            .unwrap();
        assert_eq!(info.base_offset, self.end());
        assert_eq!(info.last_offset, self.end() + records.len() as i64 - 1);
        assert_eq!(
            info.max_timestamp,
            records.iter().map(|r| r.timestamp).max().unwrap()
        );
        self.model.extend(records);
        if fsync {
            self.durable = self.end();
        }
        // Sealed segments were fsynced when they rolled.
        let active_base = *self.log().segment_base_offsets().last().unwrap();
        self.durable = self.durable.max(active_base);
    }

    fn reopen(&mut self) {
        let log = PartitionLog::open(&self.dir, self.config.clone())
            .unwrap_or_else(|e| panic!("reopen failed: {e}"));
        self.log = Some(log);
    }

    fn check_read(&self, offset: i64, max_bytes: usize) {
        let end = self.end();
        let result = self.log().read(offset, max_bytes);
        if offset < 0 || offset > end {
            assert!(
                matches!(result, Err(Error::OffsetOutOfRange { requested, start: 0, end: e })
                    if requested == offset && e == end),
                "read({offset}) of 0..{end}: {result:?}"
            );
            return;
        }
        let r = result.unwrap();
        assert_eq!(r.high_watermark(), end);
        assert_eq!(r.log_start_offset(), 0);
        if offset == end {
            assert!(r.is_empty(), "read at the end returns nothing");
            assert_eq!(r.next_offset(), end);
            return;
        }
        let batches = r.batches();
        assert!(!batches.is_empty(), "read({offset}) below the end is empty");
        assert!(batches[0].base_offset() <= offset && offset <= batches[0].last_offset());
        for w in batches.windows(2) {
            assert_eq!(w[1].base_offset(), w[0].last_offset() + 1);
        }
        assert!(
            batches.len() == 1 || r.size() <= max_bytes,
            "{} batches of {} bytes for max_bytes {max_bytes}",
            batches.len(),
            r.size()
        );
        let got: Vec<LogRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(r.next_offset(), offset + got.len() as i64);
        for (i, g) in got.iter().enumerate() {
            let o = offset + i as i64;
            let want = &self.model[o as usize];
            assert!(same(g, want, o), "offset {o}: got {g:?}, want {want:?}");
        }
    }

    /// Reads the whole log in small steps and compares it with the model.
    fn check_all(&self) {
        let mut at = 0;
        while at < self.end() {
            let r = self.log().read(at, 3000).unwrap();
            assert!(!r.is_empty(), "read({at}) empty below the end");
            for (i, g) in r.records().enumerate() {
                let g = g.unwrap();
                let o = at + i as i64;
                assert!(same(&g, &self.model[o as usize], o), "offset {o}: {g:?}");
            }
            at = r.next_offset();
        }
        assert_eq!(at, self.end());
        assert!(self.log().read(at, 100).unwrap().is_empty());
    }

    fn check_offsets(&self) {
        let log = self.log();
        assert_eq!(log.log_end_offset(), self.end(), "log end offset");
        assert_eq!(log.high_watermark(), self.end(), "high watermark");
        assert_eq!(log.log_start_offset(), 0, "log start offset");
        let bases = log.segment_base_offsets();
        assert_eq!(bases[0], 0);
        assert!(bases.windows(2).all(|w| w[0] < w[1]));
    }

    fn crash_recovered(&mut self, expected_end: i64) {
        self.reopen();
        let end = self.log().log_end_offset();
        assert_eq!(end, expected_end, "recovered log end");
        assert!(
            end >= self.durable,
            "recovery lost durable data: end {end} < {}",
            self.durable
        );
        assert!(end <= self.end());
        self.model.truncate(end as usize);
        // Recovery fsyncs what it kept.
        self.durable = end;
        self.check_all();
    }

    fn apply(&mut self, a: &Action) {
        match *a {
            Action::Append {
                count,
                max_value,
                lz4,
                fsync,
                seed,
            } => {
                self.clock += 50;
                let records = (0..count as u64)
                    .map(|i| {
                        let len = (mix(seed.wrapping_add(i)) % (max_value as u64 + 1)) as usize;
                        make_record(seed, i, len, self.clock)
                    })
                    .collect();
                self.append(records, lz4, fsync);
            }
            Action::BigAppend {
                count,
                lz4,
                fsync,
                seed,
            } => {
                self.clock += 50;
                let records = (0..count as u64)
                    .map(|i| {
                        let len = 1000 + (mix(seed ^ i) % 2000) as usize;
                        make_record(seed, i, len, self.clock)
                    })
                    .collect();
                self.append(records, lz4, fsync);
            }
            Action::Read { at, max_bytes } => {
                let offset = i64::from(at) % (self.end() + 6) - 3;
                self.check_read(offset, max_bytes);
            }
            Action::OffsetForTimestamp { at } => {
                let target = BASE_TS - 30 + i64::from(at) % (self.clock - BASE_TS + 60);
                let want = self
                    .model
                    .iter()
                    .position(|r| r.timestamp >= target)
                    .map(|i| (i as i64, self.model[i].timestamp));
                assert_eq!(
                    self.log().offset_for_timestamp(target).unwrap(),
                    want,
                    "offset_for_timestamp({target})"
                );
            }
            Action::Flush => {
                self.log().flush().unwrap();
                self.durable = self.end();
            }
            Action::CloseAndReopen => {
                self.log.take().unwrap().close().unwrap();
                assert!(self.dir.join(".kafka_cleanshutdown").exists());
                self.reopen();
                self.durable = self.end();
                assert!(!self.dir.join(".kafka_cleanshutdown").exists());
                self.check_all();
            }
            Action::CrashAndReopen => {
                drop(self.log.take());
                // A process crash keeps the page cache: nothing is lost.
                self.crash_recovered(self.end());
            }
            Action::CrashCutTail { cut } => {
                drop(self.log.take());
                let (path, base) = last_log_file(&self.dir);
                let bytes = std::fs::read(&path).unwrap();
                let ends = batch_ends(&bytes);
                // Past the last batch, only the zeros durable appends
                // wrote ahead of themselves (the cut may land in them).
                let data_end = ends.last().map_or(0, |e| e.0) as usize;
                assert!(
                    bytes[data_end..].iter().all(|&b| b == 0),
                    "not zeros after the batches"
                );
                let lo = if self.durable <= base {
                    0
                } else {
                    ends.iter()
                        .find(|e| e.1 == self.durable)
                        .unwrap_or_else(|| panic!("no batch ends at durable {}", self.durable))
                        .0
                };
                let len = bytes.len() as u64;
                let at = lo + (len - lo) * u64::from(cut) / u64::from(u16::MAX);
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len(at).unwrap();
                drop(f);
                let expected = ends
                    .iter()
                    .take_while(|e| e.0 <= at)
                    .last()
                    .map_or(base, |e| e.1);
                self.crash_recovered(expected);
            }
        }
        self.check_offsets();
    }
}

fn run(mode: ReadMode, actions: &[Action]) {
    let mut h = Harness::new(mode);
    for a in actions {
        h.apply(a);
    }
    h.check_all();
    h.log.take().unwrap().close().unwrap();
    h.reopen();
    h.check_offsets();
    h.check_all();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_log_matches_the_model_with_mmap_reads(actions in prop::collection::vec(action(), 1..50)) {
        run(ReadMode::Mmap, &actions);
    }

    #[test]
    fn the_log_matches_the_model_with_pread_reads(actions in prop::collection::vec(action(), 1..50)) {
        run(ReadMode::Pread, &actions);
    }
}

/// A fixed sequence that goes through every action at least once, so the
/// model's paths run even if proptest's sampling misses one.
#[test]
fn a_fixed_sequence_of_every_action_matches_the_model() {
    use Action::*;
    let actions = [
        Append {
            count: 30,
            max_value: 300,
            lz4: false,
            fsync: false,
            seed: 1,
        },
        BigAppend {
            count: 3,
            lz4: true,
            fsync: true,
            seed: 2,
        },
        Append {
            count: 10,
            max_value: 50,
            lz4: true,
            fsync: false,
            seed: 3,
        },
        Read {
            at: 7,
            max_bytes: 100,
        },
        CrashCutTail { cut: 0 },
        Append {
            count: 49,
            max_value: 399,
            lz4: false,
            fsync: true,
            seed: 4,
        },
        Append {
            count: 5,
            max_value: 0,
            lz4: false,
            fsync: false,
            seed: 5,
        },
        CrashCutTail { cut: u16::MAX / 2 },
        OffsetForTimestamp { at: 77 },
        Flush,
        CloseAndReopen,
        Append {
            count: 20,
            max_value: 200,
            lz4: true,
            fsync: false,
            seed: 6,
        },
        CrashAndReopen,
        Read {
            at: 3,
            max_bytes: usize::MAX,
        },
    ];
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        run(mode, &actions);
    }
}

/// Values of 0 bytes: `Some(empty)` and `None` stay distinct through the log.
#[test]
fn empty_and_null_values_stay_distinct() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), config(ReadMode::Mmap)).unwrap();
    let recs = [
        Record::new(Bytes::new()),
        Record {
            value: None,
            ..Record::default()
        },
    ];
    log.append_records(&recs, Compression::Lz4, Durability::Written)
        .unwrap();
    let got: Vec<_> = log
        .read(0, 100)
        .unwrap()
        .records()
        .map(|r| r.unwrap().value)
        .collect();
    assert_eq!(got, vec![Some(Bytes::new()), None]);
}
