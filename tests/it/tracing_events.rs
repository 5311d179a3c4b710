//! The `tracing` feature: spans for recovery, compaction and rebalances;
//! warn events when corrupt data is refused and when an fsync fails.

use kafkalite::{
    CompactionPolicy, Compression, Consumer, ConsumerConfig, Durability, Error, LogConfig,
    OffsetReset, PartitionLog, Record, Store, StoreOptions, TopicConfig,
};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record as SpanRecord};
use tracing::{Event, Metadata};

/// Writes down every span (`span NAME field=value`) and event
/// (`LEVEL field=value`) of the thread it captures.
#[derive(Clone, Default)]
struct Capture {
    lines: Arc<Mutex<Vec<String>>>,
    next: Arc<AtomicU64>,
}

#[derive(Default)]
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Capture {
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut f = Fields::default();
        span.record(&mut f);
        let line = format!("span {}{}", span.metadata().name(), f.0);
        self.lines.lock().unwrap().push(line);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn event(&self, event: &Event<'_>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let line = format!("{}{}", event.metadata().level(), f.0);
        self.lines.lock().unwrap().push(line);
    }
}

thread_local! {
    /// The capture of the test running `captured` on this thread.
    static CURRENT: std::cell::RefCell<Option<Capture>> = const { std::cell::RefCell::new(None) };
}

/// The process's one subscriber: hands each span and event to the capture
/// of the thread it happens on, if any. A scoped subscriber per test
/// (`with_default`) lost events under the full suite: a test thread that
/// first reached a callsite with no subscriber could cache "never" for it
/// just after another thread's capture had been counted in. This one says
/// "sometimes" for every callsite, so each event asks `enabled`.
struct Router;

impl tracing::Subscriber for Router {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        CURRENT.with(|c| c.borrow().is_some())
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        CURRENT
            .with(|c| c.borrow().as_ref().map(|c| c.new_span(span)))
            .unwrap_or_else(|| Id::from_u64(u64::MAX))
    }
    fn record(&self, _: &Id, _: &SpanRecord<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        CURRENT.with(|c| {
            if let Some(c) = c.borrow().as_ref() {
                c.event(event);
            }
        });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` with a capturing subscriber; returns what it captured.
fn captured(f: impl FnOnce()) -> Vec<String> {
    static ROUTER: std::sync::Once = std::sync::Once::new();
    ROUTER.call_once(|| {
        tracing::subscriber::set_global_default(Router).expect("no other global subscriber");
    });
    let c = Capture::default();
    CURRENT.with(|cur| *cur.borrow_mut() = Some(c.clone()));
    f();
    CURRENT.with(|cur| *cur.borrow_mut() = None);
    let lines = c.lines.lock().unwrap().clone();
    lines
}

fn has(lines: &[String], prefix: &str, contains: &str) -> bool {
    lines
        .iter()
        .any(|l| l.starts_with(prefix) && l.contains(contains))
}

#[test]
fn opening_a_log_runs_in_a_recovery_span_naming_its_directory() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let lines = captured(|| {
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        log.append_records(&[Record::new("a")], Compression::None, Durability::Written)
            .unwrap();
    });
    assert!(has(&lines, "span kafkalite.recovery", "t-0"), "{lines:#?}");
}

#[test]
fn compaction_runs_in_a_compaction_span() {
    let d = tempfile::tempdir().unwrap();
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 4096;
    let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
    for i in 0..200 {
        let r = Record::new(format!("{i:>40}")).key(format!("k{}", i % 5));
        log.append_records(&[r], Compression::None, Durability::Written)
            .unwrap();
    }
    let lines = captured(|| {
        let out = log.compact(&CompactionPolicy::default(), 0, true).unwrap();
        assert!(out.records_removed > 0);
    });
    assert!(
        has(&lines, "span kafkalite.compaction", "t-0"),
        "{lines:#?}"
    );
    // And the summary event inside it.
    assert!(has(&lines, "INFO", "compacted"), "{lines:#?}");
}

#[test]
fn a_completed_rebalance_runs_in_a_rebalance_span_naming_the_group() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 2, TopicConfig::default()).unwrap();
    let lines = captured(|| {
        let mut cfg = ConsumerConfig::with_group("workers");
        cfg.auto_offset_reset = OffsetReset::Earliest;
        let mut c = Consumer::new(&s, cfg).unwrap();
        c.subscribe(&["t"]).unwrap();
        c.poll(Duration::from_millis(50)).unwrap();
        assert_eq!(c.assignment().len(), 2);
    });
    assert!(
        has(&lines, "span kafkalite.rebalance", "workers"),
        "{lines:#?}"
    );
}

#[test]
fn refusing_corrupt_data_is_a_warn_event_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    {
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        for i in 0..10 {
            log.append_records(
                &[Record::new(format!("v{i}"))],
                Compression::None,
                Durability::Written,
            )
            .unwrap();
        }
        log.close().unwrap();
    }
    let f = dir.join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&f).unwrap();
    let at = bytes.len() - 3; // inside the last batch's records
    bytes[at] ^= 0x40;
    std::fs::write(&f, bytes).unwrap();
    // A clean close skips recovery; the read of the damaged batch refuses.
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    let lines = captured(|| {
        let r = log.read(9, 1);
        assert!(matches!(r, Err(Error::Corrupt { .. })), "{r:?}");
    });
    assert!(has(&lines, "WARN", "refusing corrupt data"), "{lines:#?}");
    assert!(
        has(&lines, "WARN", "00000000000000000000.log"),
        "{lines:#?}"
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn a_failed_fsync_is_a_warn_event() {
    use kafkalite::io::{Fault, Op, SimFs};
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimFs::new(d.path()).unwrap();
    let mut c = LogConfig::default();
    c.file_system = Arc::clone(&sim).into();
    let log = PartitionLog::open(&dir, c).unwrap();
    log.append_records(&[Record::new("a")], Compression::None, Durability::Fsync)
        .unwrap();
    sim.inject(Fault::error(Op::SyncData, &dir, libc::EIO));
    let lines = captured(|| {
        let r = log.append_records(&[Record::new("b")], Compression::None, Durability::Fsync);
        assert!(r.is_err());
    });
    assert!(has(&lines, "WARN", "fsync of"), "{lines:#?}");
    assert!(has(&lines, "WARN", "poisoned until reopened"), "{lines:#?}");
}
