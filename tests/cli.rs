#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `kafkalite` binary, run as a user would: every subcommand and its
//! error paths, over temporary store directories.

use base64::Engine as _;
use kafkalite::{Compression, Durability, Record, Store, StoreOptions, TopicConfig};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_kafkalite");

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_with(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// `kafkalite --dir DIR args…`, expected to succeed; returns stdout.
fn ok(dir: &Path, args: &[&str]) -> String {
    ok_in(dir, args, b"")
}

fn ok_in(dir: &Path, args: &[&str], stdin: &[u8]) -> String {
    let mut all = vec!["--dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let r = run_with(&all, stdin);
    assert_eq!(r.code, 0, "{args:?} failed: {}", r.stderr);
    r.stdout
}

/// `kafkalite --dir DIR args…`, expected to fail with one `kafkalite:` line.
fn fails(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let r = run_with(&all, b"");
    assert_ne!(r.code, 0, "{args:?} succeeded: {}", r.stdout);
    one_error_line(&r);
    r
}

fn one_error_line(r: &Run) {
    assert_eq!(r.stderr.lines().count(), 1, "stderr: {:?}", r.stderr);
    assert!(
        r.stderr.starts_with("kafkalite: "),
        "stderr: {:?}",
        r.stderr
    );
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn topics_create_list_describe_alter_delete() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(
        dir,
        &[
            "topics",
            "create",
            "a",
            "--partitions",
            "2",
            "--config",
            "retention.ms=60000",
        ],
    );
    ok(dir, &["topics", "create", "b"]);
    assert_eq!(lines(&ok(dir, &["topics", "list"])), ["a", "b"]);
    let desc = ok(dir, &["topics", "describe", "a"]);
    assert!(
        desc.contains("PartitionCount: 2") && desc.contains("retention.ms=60000"),
        "{desc}"
    );
    assert!(
        desc.contains("Partition: 1\tStartOffset: 0\tEndOffset: 0"),
        "{desc}"
    );
    assert_eq!(
        ok(dir, &["topics", "describe"]).matches("Topic: ").count(),
        2
    );
    ok(
        dir,
        &[
            "topics",
            "alter",
            "a",
            "--partitions",
            "3",
            "--config",
            "retention.bytes=1000000",
        ],
    );
    let desc = ok(dir, &["topics", "describe", "a"]);
    assert!(
        desc.contains("PartitionCount: 3") && desc.contains("retention.bytes=1000000"),
        "{desc}"
    );
    ok(dir, &["topics", "delete", "b"]);
    assert_eq!(lines(&ok(dir, &["topics", "list"])), ["a"]);

    let e = fails(dir, &["topics", "create", "a"]);
    assert!(e.stderr.contains("already exists"), "{}", e.stderr);
    let e = fails(dir, &["topics", "create", "c", "--config", "no.such.key=1"]);
    assert!(e.stderr.contains("no.such.key"), "{}", e.stderr);
    fails(
        dir,
        &["topics", "create", "c", "--config", "retention.ms=soon"],
    );
    fails(dir, &["topics", "create", "c", "--config", "retention.ms"]);
    fails(dir, &["topics", "create", "bad/name"]);
    assert_eq!(
        lines(&ok(dir, &["topics", "list"])),
        ["a"],
        "failed creates leave nothing"
    );
    let e = fails(dir, &["topics", "describe", "zzz"]);
    assert!(e.stderr.contains("unknown topic zzz"), "{}", e.stderr);
    fails(dir, &["topics", "delete", "zzz"]);
    fails(dir, &["topics", "alter", "a", "--partitions", "2"]);
    fails(dir, &["topics", "alter", "a"]);
    fails(
        dir,
        &["topics", "alter", "a", "--config", "flush.messages=0"],
    );
}

#[test]
fn read_commands_need_an_existing_store_and_dir() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("nope");
    for args in [
        &["topics", "list"][..],
        &["topics", "describe"],
        &["consume", "t"],
        &["produce", "t"],
        &["groups", "list"],
        &["verify"],
        &["perf", "consume", "--topic", "t"],
    ] {
        let e = fails(&missing, args);
        assert!(
            e.stderr.contains("does not exist"),
            "{args:?}: {}",
            e.stderr
        );
    }
    assert!(!missing.exists(), "no store was created");
    let r = run_with(&["topics", "list"], b"");
    assert_ne!(r.code, 0);
    one_error_line(&r);
    let r = run_with(&["--dir", "x", "topics", "frobnicate"], b"");
    assert_eq!(r.code, 2);
    one_error_line(&r);
    for sub in [
        &["--help"][..],
        &["topics", "--help"],
        &["topics", "create", "--help"],
        &["produce", "--help"],
        &["consume", "--help"],
        &["groups", "reset-offsets", "--help"],
        &["dump", "--help"],
        &["verify", "--help"],
        &["perf", "produce", "--help"],
        &["perf", "consume", "--help"],
    ] {
        let r = run_with(sub, b"");
        assert_eq!(r.code, 0, "{sub:?}");
        assert!(r.stdout.contains("Usage"), "{sub:?}");
    }
}

#[test]
fn produce_prints_offsets_in_input_order_and_consume_reads_them_back() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(dir, &["topics", "create", "t", "--partitions", "3"]);
    let input: String = (0..50).map(|i| format!("k{}:v{i}\n", i % 7)).collect();
    let out = ok_in(
        dir,
        &[
            "produce",
            "t",
            "--key-separator",
            ":",
            "--print-offsets",
            "--durability",
            "fsync",
            "--compression",
            "lz4",
        ],
        input.as_bytes(),
    );
    let printed: Vec<(u32, i64)> = out
        .lines()
        .map(|l| {
            let (p, o) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), o.parse().unwrap())
        })
        .collect();
    assert_eq!(printed.len(), 50);
    let mut next = [0i64; 3];
    for (i, &(p, o)) in printed.iter().enumerate() {
        assert_eq!(
            p,
            kafkalite::partition_for_key(format!("k{}", i % 7).as_bytes(), 3)
        );
        assert_eq!(
            o, next[p as usize],
            "offsets per partition follow the input"
        );
        next[p as usize] += 1;
    }
    // An explicit partition, and a line without the separator (no key).
    let out = ok_in(
        dir,
        &[
            "produce",
            "t",
            "--partition",
            "2",
            "--key-separator",
            ":",
            "--print-offsets",
        ],
        b"plain\nk:v\n",
    );
    assert_eq!(
        lines(&out),
        [format!("2 {}", next[2]), format!("2 {}", next[2] + 1)]
    );

    let all = ok(
        dir,
        &[
            "consume",
            "t",
            "--from-beginning",
            "--print-key",
            "--print-offset",
            "--timeout-ms",
            "200",
        ],
    );
    assert_eq!(all.lines().count(), 52);
    assert!(
        all.contains(&format!("Partition:2\tOffset:{}\tnull\tplain\n", next[2])),
        "{all}"
    );
    assert!(all.contains("\tk3\tv3\n"), "{all}");
    let one = ok(
        dir,
        &[
            "consume",
            "t",
            "--partition",
            "2",
            "--offset",
            &next[2].to_string(),
            "--max-records",
            "1",
        ],
    );
    assert_eq!(one, "plain\n");
    // Without --from-beginning and no group: only new records, none here.
    assert_eq!(ok(dir, &["consume", "t", "--timeout-ms", "100"]), "");

    fails(dir, &["produce", "nosuch"]);
    fails(dir, &["produce", "t", "--partition", "9"]);
    fails(dir, &["consume", "nosuch"]);
    fails(dir, &["consume", "t", "--partition", "9"]);
    let r = run_with(
        &[
            "--dir",
            dir.to_str().unwrap(),
            "consume",
            "t",
            "--offset",
            "3",
        ],
        b"",
    );
    assert_eq!(r.code, 2, "--offset needs --partition");
}

#[test]
fn groups_commit_describe_reset_and_delete() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(dir, &["topics", "create", "t", "--partitions", "2"]);
    let input: String = (0..10).map(|i| format!("v{i}\n")).collect();
    ok_in(dir, &["produce", "t", "--partition", "0"], input.as_bytes());
    ok_in(dir, &["produce", "t", "--partition", "1"], b"x\ny\n");
    let first = ok(
        dir,
        &[
            "consume",
            "t",
            "--group",
            "g",
            "--from-beginning",
            "--partition",
            "0",
            "--max-records",
            "4",
        ],
    );
    assert_eq!(lines(&first), ["v0", "v1", "v2", "v3"]);
    let rest = ok(
        dir,
        &[
            "consume",
            "t",
            "--group",
            "g",
            "--partition",
            "0",
            "--timeout-ms",
            "200",
        ],
    );
    assert_eq!(
        rest.lines().count(),
        6,
        "the group continues where it committed: {rest}"
    );
    assert_eq!(lines(&ok(dir, &["groups", "list"])), ["g"]);
    let desc = ok(dir, &["groups", "describe", "g"]);
    let row = desc.lines().find(|l| l.starts_with("t ")).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols, ["t", "0", "10", "10", "0"], "{desc}");

    let reset = ok(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-offset",
            "3",
        ],
    );
    assert!(
        reset
            .lines()
            .any(|l| l.split_whitespace().eq(["t", "0", "3"])),
        "{reset}"
    );
    assert!(
        reset
            .lines()
            .any(|l| l.split_whitespace().eq(["t", "1", "2"])),
        "clamped: {reset}"
    );
    let desc = ok(dir, &["groups", "describe", "g"]);
    assert!(
        desc.lines()
            .any(|l| l.split_whitespace().eq(["t", "0", "3", "10", "7"])),
        "{desc}"
    );
    ok(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-earliest",
        ],
    );
    assert_eq!(
        ok(
            dir,
            &["consume", "t", "--group", "g", "--timeout-ms", "300"]
        )
        .lines()
        .count(),
        12
    );
    ok(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-latest",
        ],
    );
    assert_eq!(
        ok(
            dir,
            &["consume", "t", "--group", "g", "--timeout-ms", "100"]
        ),
        ""
    );
    let reset = ok(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-datetime",
            "2001-01-01T00:00:00Z",
        ],
    );
    assert!(
        reset
            .lines()
            .any(|l| l.split_whitespace().eq(["t", "0", "0"])),
        "{reset}"
    );
    let reset = ok(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-datetime",
            "4102444800000",
        ],
    );
    assert!(
        reset
            .lines()
            .any(|l| l.split_whitespace().eq(["t", "0", "10"])),
        "{reset}"
    );
    fails(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "t",
            "--to-datetime",
            "yesterday",
        ],
    );
    fails(
        dir,
        &[
            "groups",
            "reset-offsets",
            "g",
            "--topic",
            "nosuch",
            "--to-earliest",
        ],
    );
    ok(dir, &["groups", "delete", "g"]);
    assert_eq!(ok(dir, &["groups", "list"]), "");
    fails(dir, &["groups", "describe", "g"]);
}

/// Writes batches through the library: keys, null values, headers.
fn write_library_records(dir: &Path, compression: Compression) -> Vec<Record> {
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    let mut config = TopicConfig::default();
    config.compression = compression;
    config.log.index_interval_bytes = 100;
    store.create_topic("t", 1, config).unwrap();
    let mut all = Vec::new();
    for b in 0..5 {
        let batch: Vec<Record> = (0..20)
            .map(|i| {
                let n = b * 20 + i;
                let mut r = Record::new(format!("value-{n}-{}", "z".repeat(n % 30)))
                    .timestamp(1_700_000_000_000 + n as i64)
                    .header("h", format!("hv{n}"));
                if n % 3 == 0 {
                    r = r.key(format!("key-{n}"));
                }
                if n % 10 == 7 {
                    r.value = None;
                    r.headers.push(kafkalite::Header {
                        key: "null".into(),
                        value: None,
                    });
                }
                r
            })
            .collect();
        store.append("t", 0, &batch, Durability::Written).unwrap();
        all.extend(batch);
    }
    store.close().unwrap();
    all
}

fn b64(v: &serde_json::Value) -> Option<Vec<u8>> {
    v.as_str()
        .map(|s| base64::engine::general_purpose::STANDARD.decode(s).unwrap())
}

#[test]
fn dump_json_matches_records_written_by_the_library() {
    for compression in Compression::ALL {
        let d = tempfile::tempdir().unwrap();
        let written = write_library_records(d.path(), compression);
        let log = d.path().join("t-0/00000000000000000000.log");
        let r = run_with(
            &["dump", "--json", "--verify-index", log.to_str().unwrap()],
            b"",
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let got: Vec<serde_json::Value> = r
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(got.len(), written.len());
        for (i, (j, w)) in got.iter().zip(&written).enumerate() {
            assert_eq!(j["offset"], i as u64);
            assert_eq!(j["timestamp"], w.timestamp);
            assert_eq!(b64(&j["key"]), w.key.as_ref().map(|k| k.to_vec()));
            assert_eq!(b64(&j["value"]), w.value.as_ref().map(|v| v.to_vec()));
            let headers = j["headers"].as_array().unwrap();
            assert_eq!(headers.len(), w.headers.len());
            for (h, wh) in headers.iter().zip(&w.headers) {
                assert_eq!(h[0], wh.key.as_str());
                assert_eq!(b64(&h[1]), wh.value.as_ref().map(|v| v.to_vec()));
            }
            assert_eq!(j["compression"], compression.name());
        }
        // The text form shows the batch headers and every record.
        let text = run_with(&["dump", "--verify-index", log.to_str().unwrap()], b"");
        assert_eq!(text.code, 0, "{}", text.stderr);
        assert_eq!(text.stdout.matches("baseOffset: ").count(), 5);
        assert_eq!(text.stdout.matches("| offset: ").count(), written.len());
        assert!(text
            .stdout
            .contains(&format!("compresscodec: {}", compression.name())));
        assert!(text.stdout.contains("isvalid: true"));
        let idx = log.with_extension("index");
        let entries = run_with(&["dump", idx.to_str().unwrap(), "--verify-index"], b"");
        assert_eq!(entries.code, 0, "{}", entries.stderr);
        assert!(
            entries.stdout.contains("offset: "),
            "indexed: {}",
            entries.stdout
        );
    }
}

#[test]
fn dump_stops_non_zero_at_a_corrupt_batch_after_printing_the_earlier_ones() {
    let d = tempfile::tempdir().unwrap();
    write_library_records(d.path(), Compression::None);
    let log = d.path().join("t-0/00000000000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let first = kafkalite::BatchHeader::parse(&bytes).unwrap().size();
    let second = kafkalite::BatchHeader::parse(&bytes[first..])
        .unwrap()
        .size();
    let at = first + second + 70; // inside the third batch's records
    bytes[at] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let r = run_with(&["dump", "--json", log.to_str().unwrap()], b"");
    assert_ne!(r.code, 0);
    one_error_line(&r);
    assert!(
        r.stderr.contains(&format!("position {}", first + second)),
        "{}",
        r.stderr
    );
    assert_eq!(
        r.stdout.lines().count(),
        40,
        "the two good batches are printed"
    );
    let r = run_with(&["dump", log.to_str().unwrap()], b"");
    assert_ne!(r.code, 0);
    assert!(r.stdout.contains("isvalid: false"), "{}", r.stdout);
    // A damaged index entry is found by --verify-index.
    let d = tempfile::tempdir().unwrap();
    write_library_records(d.path(), Compression::None);
    let log = d.path().join("t-0/00000000000000000000.log");
    let idx = log.with_extension("index");
    let mut ib = std::fs::read(&idx).unwrap();
    assert!(ib.len() >= 8, "the index has entries");
    ib[7] ^= 0x01; // the first entry's position
    std::fs::write(&idx, &ib).unwrap();
    assert_eq!(run_with(&["dump", log.to_str().unwrap()], b"").code, 0);
    let r = run_with(&["dump", "--verify-index", log.to_str().unwrap()], b"");
    assert_ne!(r.code, 0);
    one_error_line(&r);
    assert!(
        r.stderr.contains("not the start of a valid batch"),
        "{}",
        r.stderr
    );
    let r = run_with(&["dump", d.path().join("nope.log").to_str().unwrap()], b"");
    assert_ne!(r.code, 0);
    one_error_line(&r);
}

/// Every file's bytes under `dir`.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn verify_reports_torn_tails_and_corruption_without_writing() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    let mut config = TopicConfig::default();
    config.log.segment_bytes = 1024;
    store.create_topic("t", 1, config).unwrap();
    for i in 0..20 {
        let batch: Vec<Record> = (0..5)
            .map(|j| Record::new(format!("r{i}-{j}-{}", "p".repeat(40))))
            .collect();
        store.append("t", 0, &batch, Durability::Written).unwrap();
    }
    store.close().unwrap();
    let before = snapshot(dir);
    let out = ok(dir, &["verify"]);
    assert!(out.contains("0 problems"), "{out}");
    assert_eq!(snapshot(dir), before, "verify writes nothing");

    // A torn tail on the active segment of a store that crashed.
    let pdir = dir.join("t-0");
    let mut logs: Vec<_> = std::fs::read_dir(&pdir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() > 2, "several segments");
    std::fs::remove_file(pdir.join(".kafka_cleanshutdown")).unwrap();
    let checkpoint = std::fs::read(pdir.join("partition.checkpoint")).unwrap();
    std::fs::remove_file(pdir.join("partition.checkpoint")).unwrap();
    let last = logs.last().unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(last).unwrap();
    f.write_all(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 1]).unwrap();
    drop(f);
    let out = ok(dir, &["verify"]);
    assert!(
        out.contains("torn tail") && out.contains("recovery would cut 11 bytes"),
        "{out}"
    );

    // Damage in a sealed segment above the recovery point (there is no
    // checkpoint now) is a tail that may not have been flushed: recovery
    // cuts it there and deletes the later segments.
    let mut b = std::fs::read(&logs[0]).unwrap();
    b[80] ^= 0x55;
    std::fs::write(&logs[0], &b).unwrap();
    let out = ok(dir, &["verify"]);
    assert!(
        out.contains("00000000000000000000.log: torn tail at position 0 in a sealed segment above the recovery point"),
        "{out}"
    );
    // Below the recovery point (the clean close checkpointed the log end),
    // the same damage is corruption.
    std::fs::write(pdir.join("partition.checkpoint"), &checkpoint).unwrap();
    let r = fails(dir, &["verify"]);
    assert!(
        r.stdout.contains("CORRUPT") && r.stdout.contains("00000000000000000000.log"),
        "{}",
        r.stdout
    );
    // The store agrees: the damaged batch is reported, never dropped.
    drop(store);
    let s = Store::open(dir, StoreOptions::default()).unwrap();
    assert!(matches!(
        s.fetch("t", 0, 0, 1 << 20),
        Err(kafkalite::Error::Corrupt { .. })
    ));
}

#[test]
fn verify_and_dump_take_zeros_written_ahead_of_durable_appends_as_the_end() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    for i in 0..10 {
        let batch: Vec<Record> = (0..100)
            .map(|j| Record::new(format!("r{i}-{j}-{}", "p".repeat(90))))
            .collect();
        store.append("t", 0, &batch, Durability::Fsync).unwrap();
    }
    // The store is open (or crashed): its active segment ends in zeros.
    let log = dir.join("t-0").join("00000000000000000000.log");
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(bytes.last(), Some(&0));
    let text = run_with(&["dump", log.to_str().unwrap()], b"");
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(text.stdout.matches("baseOffset:").count(), 10);
    assert!(
        text.stdout
            .contains("as durable appends write ahead of themselves"),
        "{}",
        text.stdout
    );
    let json = run_with(&["dump", "--json", log.to_str().unwrap()], b"");
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert_eq!(lines(&json.stdout).len(), 1000);
    let out = ok(dir, &["verify"]);
    assert!(out.contains("0 problems"), "{out}");
    assert!(
        out.contains("zeros written ahead of durable appends")
            && out.contains("the next open cuts"),
        "{out}"
    );
    store.close().unwrap();
    let out = ok(dir, &["verify"]);
    assert!(!out.contains("zeros written ahead"), "{out}");
}

#[test]
fn perf_produce_and_consume_report_figures() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let out = ok(
        dir,
        &[
            "perf",
            "produce",
            "--topic",
            "p",
            "--partitions",
            "2",
            "--records",
            "3000",
            "--record-size",
            "300",
            "--threads",
            "2",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["records"], 3000);
    assert_eq!(j["bytes"], 900_000);
    for k in [
        "seconds",
        "records_per_sec",
        "mb_per_sec",
        "latency_ms_avg",
        "latency_ms_p50",
        "latency_ms_p99",
        "latency_ms_p999",
        "latency_ms_max",
    ] {
        assert!(j[k].as_f64().is_some(), "{k} in {out}");
    }
    // The percentiles rise to the maximum, which the average is below.
    let ms = |k: &str| j[k].as_f64().unwrap();
    let ladder = [
        "latency_ms_p50",
        "latency_ms_p99",
        "latency_ms_p999",
        "latency_ms_max",
    ];
    for w in ladder.windows(2) {
        assert!(ms(w[0]) <= ms(w[1]), "{} above {} in {out}", w[0], w[1]);
    }
    assert!(ms("latency_ms_avg") <= ms("latency_ms_max"), "{out}");
    let payloads = dir.join("payloads.txt");
    std::fs::write(&payloads, "alpha\nbeta\n").unwrap();
    let text = ok(
        dir,
        &[
            "perf",
            "produce",
            "--topic",
            "p",
            "--records",
            "10",
            "--payload-file",
            payloads.to_str().unwrap(),
            "--compression",
            "lz4",
            "--durability",
            "fsync",
            "--linger-ms",
            "0",
        ],
    );
    assert!(
        text.contains("10 records sent") && text.contains("99.9th"),
        "{text}"
    );
    let out = ok(
        dir,
        &[
            "perf",
            "consume",
            "--topic",
            "p",
            "--json",
            "--threads",
            "2",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["records"], 3010);
    assert!(j["records_per_sec"].as_f64().unwrap() > 0.0 && j["mb_per_sec"].as_f64().is_some());
    let text = ok(dir, &["perf", "consume", "--topic", "p", "--group", "pg"]);
    assert!(text.starts_with("3010 records"), "{text}");
    let desc = ok(dir, &["groups", "describe", "pg"]);
    assert!(
        desc.lines()
            .filter(|l| l.starts_with("p "))
            .all(|l| l.ends_with(" 0")),
        "committed: {desc}"
    );
    fails(dir, &["perf", "consume", "--topic", "nosuch"]);
    let r = run_with(
        &[
            "--dir",
            dir.to_str().unwrap(),
            "perf",
            "produce",
            "--topic",
            "p",
            "--records",
            "5",
        ],
        b"",
    );
    assert_eq!(r.code, 2, "a payload source is required");
}

/// `--baseline` runs the plain `std::fs` counterpart in the same process
/// and reports kafkalite's ratio to it, leaving nothing behind.
#[test]
fn perf_baseline_reports_a_same_run_ratio() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let args = [
        "perf",
        "produce",
        "--topic",
        "b",
        "--partitions",
        "3",
        "--records",
        "5000",
        "--record-size",
        "200",
        "--compression",
        "lz4",
        "--baseline",
        "--json",
    ];
    let check = |out: &str, records: u64| -> serde_json::Value {
        let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(j["baseline_records"], records, "{out}");
        let (mbps, base) = (
            j["mb_per_sec"].as_f64().unwrap(),
            j["baseline_mb_per_sec"].as_f64().unwrap(),
        );
        assert!(base > 0.0 && j["baseline_records_per_sec"].as_f64().unwrap() > 0.0);
        let ratio = j["ratio"].as_f64().unwrap();
        // Printed to three decimals.
        assert!((ratio - mbps / base).abs() <= 0.0011, "{out}");
        j
    };
    check(&ok(dir, &args), 5000);
    // The baseline's file is gone: the store directory holds what it held.
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.iter().all(|n| !n.starts_with(".perf-baseline")),
        "{names:?}"
    );
    // The read baseline walks every batch of the three partitions.
    let out = ok(
        dir,
        &["perf", "consume", "--topic", "b", "--baseline", "--json"],
    );
    let j = check(&out, 5000);
    assert_eq!(j["records"], 5000);
    let text = ok(dir, &["perf", "consume", "--topic", "b", "--baseline"]);
    assert!(
        text.contains("baseline: the topic's .log files read with std::fs")
            && text.contains("kafkalite / baseline = "),
        "{text}"
    );
    // Nothing to consume: no ratio, rather than NaN.
    ok(dir, &["topics", "create", "empty"]);
    let args = ["perf", "consume", "--topic", "empty", "--baseline"];
    let out = ok(dir, &[&args[..], &["--json"]].concat());
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (j["records"].as_u64(), j["baseline_records"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(j["ratio"].is_null(), "{out}");
    let text = ok(dir, &args);
    assert!(text.contains("kafkalite / baseline = n/a"), "{text}");
}

#[test]
fn clean_applies_retention_and_delete_records_moves_the_log_start() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(
        dir,
        &[
            "topics",
            "create",
            "r",
            "--config",
            "segment.bytes=1024",
            "--config",
            "retention.bytes=2048",
        ],
    );
    let input: String = (0..200)
        .map(|i| format!("{i}-{}\n", "x".repeat(40)))
        .collect();
    ok_in(
        dir,
        &["produce", "r", "--linger-ms", "0", "--batch-size", "200"],
        input.as_bytes(),
    );
    let out = ok(dir, &["clean", "r"]);
    assert!(
        out.contains("r-0: ") && !out.starts_with("0 segments"),
        "{out}"
    );
    let desc = ok(dir, &["topics", "describe", "r"]);
    let start: i64 = desc
        .split("StartOffset: ")
        .nth(1)
        .and_then(|s| s.split('\t').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(start > 0, "{desc}");
    assert!(ok(dir, &["clean"]).starts_with("0 segments deleted"));
    let out = ok(
        dir,
        &["delete-records", "r", "--partition", "0", "--before", "195"],
    );
    assert_eq!(out.trim(), "r-0: log start offset is now 195");
    let rest = ok(
        dir,
        &["consume", "r", "--from-beginning", "--timeout-ms", "200"],
    );
    assert_eq!(rest.lines().count(), 5);
    assert!(rest.starts_with("195-"), "{rest}");
    let e = fails(
        dir,
        &[
            "delete-records",
            "r",
            "--partition",
            "0",
            "--before",
            "1000",
        ],
    );
    assert!(e.stderr.contains("out of range"), "{}", e.stderr);
    fails(
        dir,
        &["delete-records", "r", "--partition", "3", "--before", "1"],
    );
    fails(dir, &["clean", "nosuch"]);
    assert!(ok(dir, &["verify"]).contains("0 problems"));
}

#[test]
fn read_commands_work_on_a_store_another_process_has_open() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    store
        .create_topic("live", 1, TopicConfig::default())
        .unwrap();
    store
        .append(
            "live",
            0,
            &[Record::new("one"), Record::new("two")],
            Durability::Written,
        )
        .unwrap();
    store
        .reset_group_offsets("g", "live", kafkalite::ResetTo::Offset(1))
        .unwrap();
    // The writer holds the lock: read commands open read-only.
    assert!(ok(d.path(), &["topics", "list"]).contains("live"));
    assert!(ok(d.path(), &["topics", "describe", "live"]).contains("live"));
    assert!(ok(d.path(), &["groups", "list"]).contains('g'));
    assert!(ok(d.path(), &["groups", "describe", "g"]).contains("live"));
    let out = ok(
        d.path(),
        &["consume", "live", "--from-beginning", "--timeout-ms", "300"],
    );
    assert_eq!(lines(&out), vec!["one", "two"]);
    // Commands that write still need the lock.
    let r = fails(
        d.path(),
        &["topics", "create", "other", "--partitions", "1"],
    );
    assert!(r.stderr.contains("locked"), "{}", r.stderr);
    store.close().unwrap();
}

#[test]
fn perf_append_alternates_with_its_baseline_and_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let args = [
        "perf",
        "append",
        "--record-size",
        "100",
        "--batch-records",
        "50",
        "--batches",
        "40",
        "--distinct-batches",
        "3",
        "--rounds",
        "3",
        "--json",
    ];
    let out = ok(dir, &args);
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let f = |k: &str| j[k].as_f64().unwrap_or_else(|| panic!("{k} in {out}"));
    assert_eq!(
        (&j["durability"], &j["rounds"], &j["distinct_batches"]),
        (
            &serde_json::json!("written"),
            &serde_json::json!(3),
            &serde_json::json!(3)
        )
    );
    // A batch: a 61-byte header, then 50 records of 100 value bytes with a
    // few bytes of framing each.
    let batch = f("batch_bytes");
    assert!(
        (61.0 + 50.0 * 100.0..61.0 + 50.0 * 112.0).contains(&batch),
        "{out}"
    );
    // Records/s and MB/s describe the same batches, on both sides (MB/s is
    // printed to three decimals).
    for (rps, mbps) in [
        ("records_per_sec", "mb_per_sec"),
        ("baseline_records_per_sec", "baseline_mb_per_sec"),
    ] {
        let per_record = f(mbps) * 1024.0 * 1024.0 / f(rps);
        let slack = 0.0006 * 1024.0 * 1024.0 / f(rps);
        assert!((per_record - batch / 50.0).abs() <= slack, "{out}");
    }
    assert!(f("ratio_min") > 0.0 && f("ratio_min") <= f("ratio") && f("ratio") <= f("ratio_max"));
    // The scratch files are gone.
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
    // One round: the ratio is kafkalite's rate over the baseline's.
    let out = ok(
        dir,
        &[
            "perf",
            "append",
            "--batches",
            "20",
            "--rounds",
            "1",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let f = |k: &str| j[k].as_f64().unwrap_or_else(|| panic!("{k} in {out}"));
    let expected = f("records_per_sec") / f("baseline_records_per_sec");
    assert!((f("ratio") - expected).abs() <= 0.0006, "{out}");
    assert_eq!((f("ratio_min"), f("ratio_max")), (f("ratio"), f("ratio")));
    // The log's write-behind: the library's default, or --writeback-bytes.
    assert_eq!(
        j["writeback_bytes"],
        serde_json::json!(StoreOptions::default().writeback_bytes),
        "{out}"
    );
    let out = ok(
        dir,
        &[
            "perf",
            "append",
            "--batches",
            "20",
            "--rounds",
            "1",
            "--writeback-bytes",
            "0",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(j["writeback_bytes"], serde_json::json!(0), "{out}");
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);

    let text = ok(
        dir,
        &[
            "perf",
            "append",
            "--batches",
            "4",
            "--rounds",
            "1",
            "--durability",
            "fsync",
        ],
    );
    assert!(
        text.contains("durability fsync")
            && text.contains("baseline write() + fdatasync of each batch")
            && text.contains("kafkalite / baseline = "),
        "{text}"
    );
    for bad in [
        "--record-size",
        "--batch-records",
        "--batches",
        "--distinct-batches",
        "--rounds",
    ] {
        let r = fails(dir, &["perf", "append", bad, "0"]);
        assert!(
            r.stderr.contains(&format!("{bad} must be positive")),
            "{}",
            r.stderr
        );
    }
    // Sizes refused before anything is generated: a batch over 2 GiB, and
    // batches over 4 GiB in all.
    let too_big = [
        (
            &["--record-size", "1000000", "--batch-records", "5000"][..],
            "larger than a batch can be",
        ),
        (
            &[
                "--record-size",
                "100000",
                "--batch-records",
                "1000",
                "--distinct-batches",
                "100",
            ][..],
            "would hold more than 4 GiB in memory",
        ),
    ];
    for (args, says) in too_big {
        let r = fails(dir, &[&["perf", "append"][..], args].concat());
        assert!(r.stderr.contains(says), "{}", r.stderr);
    }
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
    // A --dir that is a file: the scratch directory cannot be made.
    let file = dir.join("plain");
    std::fs::write(&file, b"x").unwrap();
    let r = fails(
        &file,
        &["perf", "append", "--batches", "1", "--rounds", "1"],
    );
    assert!(r.stderr.contains("cannot create"), "{}", r.stderr);
}

/// A store whose topic `t` holds the kafka-python transactional vector as
/// its one partition.
fn store_with_transactional_vector(dir: &Path) {
    ok(dir, &["topics", "create", "t", "--partitions", "1"]);
    let pdir = dir.join("t-0");
    for e in std::fs::read_dir(&pdir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::remove_file(p).unwrap();
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/transactional/00000000000000000000.log");
    std::fs::copy(src, pdir.join("00000000000000000000.log")).unwrap();
}

#[test]
fn consume_never_prints_transaction_markers_and_read_committed_skips_aborted_records() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    store_with_transactional_vector(dir);
    let offsets = |level: &str| -> Vec<i64> {
        let out = ok(
            dir,
            &[
                "consume",
                "t",
                "--from-beginning",
                "--print-offset",
                "--timeout-ms",
                "300",
                "--isolation-level",
                level,
            ],
        );
        out.lines()
            .map(|l| {
                let o = l.split('\t').nth(1).unwrap();
                o.strip_prefix("Offset:").unwrap().parse().unwrap()
            })
            .collect()
    };
    assert_eq!(
        offsets("read-uncommitted"),
        vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12]
    );
    assert_eq!(offsets("read-committed"), vec![0, 1, 2, 3, 4, 7, 8, 12]);
}

#[test]
fn dump_shows_control_batches_as_markers_and_producer_fields() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    store_with_transactional_vector(dir);
    let log = dir.join("t-0/00000000000000000000.log");
    let text = run_with(&["dump", log.to_str().unwrap()], b"");
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert_eq!(text.stdout.matches("isControl: true").count(), 2);
    assert!(text
        .stdout
        .contains("| offset: 9 CreateTime: 1710000000016 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7"));
    assert!(text
        .stdout
        .contains("endTxnMarker: ABORT coordinatorEpoch: 7"));
    assert!(text.stdout.contains("producerId: 2000 producerEpoch: 5"));
    let json = run_with(&["dump", "--json", log.to_str().unwrap()], b"");
    assert_eq!(json.code, 0, "{}", json.stderr);
    let rows: Vec<serde_json::Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 13);
    let commit = &rows[9];
    assert_eq!(commit["control"]["type"], "COMMIT");
    assert_eq!(commit["control"]["coordinator_epoch"], 7);
    assert_eq!(rows[11]["control"]["type"], "ABORT");
    assert!(rows[0]["control"].is_null());
    // Producer 1000's second batch (offset 8) has base sequence 2.
    assert_eq!(rows[8]["producer_id"], 1000);
    assert_eq!(rows[8]["producer_epoch"], 2);
    assert_eq!(rows[8]["sequence"], 2);
    assert_eq!(rows[8]["is_transactional"], true);
    assert_eq!(rows[8]["compression"], "zstd");
    assert_eq!(rows[7]["producer_id"], 3000);
    assert_eq!(rows[7]["is_transactional"], false);
    assert_eq!(rows[0]["producer_id"], -1);
    assert_eq!(rows[0]["sequence"], -1);
}

#[test]
fn produce_writes_every_codec_and_consume_reads_it_back() {
    for codec in ["gzip", "snappy", "zstd"] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        ok(dir, &["topics", "create", "t", "--partitions", "1"]);
        let input: String = (0..200)
            .map(|i| format!("record {i} of {codec}\n"))
            .collect();
        ok_in(
            dir,
            &["produce", "t", "--compression", codec],
            input.as_bytes(),
        );
        let out = ok(
            dir,
            &["consume", "t", "--from-beginning", "--timeout-ms", "300"],
        );
        assert_eq!(out, input, "{codec}");
        let log = dir.join("t-0/00000000000000000000.log");
        let text = run_with(&["dump", log.to_str().unwrap()], b"");
        assert!(
            text.stdout.contains(&format!("compresscodec: {codec}")),
            "{}",
            text.stdout
        );
    }
}

#[test]
fn perf_produce_prints_a_line_per_reporting_interval() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // Durable sends of 200,000 records take well over 100 ms here.
    let args = [
        "perf",
        "produce",
        "--topic",
        "p",
        "--records",
        "200000",
        "--record-size",
        "100",
        "--durability",
        "fsync",
        "--reporting-interval",
        "50",
    ];
    let out = ok(dir, &args);
    let intervals: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" records sent, ") && l.ends_with("ms max latency."))
        .collect();
    assert!(intervals.len() >= 2, "{out}");
    let mut total = 0u64;
    for line in &intervals {
        let n: u64 = line.split(' ').next().unwrap().parse().unwrap();
        total += n;
        for field in ["records/sec (", "MB/sec), ", "ms avg latency, "] {
            assert!(line.contains(field), "{line}");
        }
    }
    assert!(total <= 200_000);
    // The summary line comes last.
    assert!(out
        .lines()
        .last()
        .unwrap()
        .starts_with("200000 records sent in "));
    // With --json, stdout is one JSON object and the intervals go to stderr.
    let mut all = vec!["--dir", dir.to_str().unwrap()];
    all.extend_from_slice(&args);
    all.push("--json");
    let r = run_with(&all, b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(j["records"], 200_000);
    assert!(r.stderr.contains(" records sent, "), "{}", r.stderr);
}

/// Writes `body` as a sealed metadata file (with the CRC-32 line the store
/// appends).
fn write_sealed(path: &Path, body: &str) {
    let text = format!("{body}crc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
    std::fs::write(path, text).unwrap();
}

/// Issue 17, finding 5: `verify` said "0 problems" for stores that cannot
/// open (a config saved that the store refuses, a damaged offset record).
#[test]
fn verify_finds_every_problem_that_makes_open_fail() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    store.close().unwrap();
    drop(store);
    assert!(ok(dir, &["verify"]).contains("0 problems"));
    let meta = dir.join("topics.meta");
    let good = std::fs::read(&meta).unwrap();
    // Configs an older version saved but the store refuses to open with.
    for line in [
        "config t segment.ms=0",
        "config t min.cleanable.dirty.ratio=2.00",
        "config t kafkalite.retain.for.groups=a\u{1}b",
    ] {
        write_sealed(&meta, &format!("kafkalite-topics 1\ntopic t 1\n{line}\n"));
        assert!(Store::open(dir, StoreOptions::default()).is_err(), "{line}");
        let r = fails(dir, &["verify"]);
        assert!(
            r.stdout.contains("CORRUPT") && r.stdout.contains("topics.meta"),
            "{line}: {}",
            r.stdout
        );
    }
    std::fs::write(&meta, &good).unwrap();
    // An offset record the offset store cannot have written: a group id
    // with a newline (its length and the rest well formed).
    {
        let log = kafkalite::PartitionLog::open(
            dir.join("__consumer_offsets-0"),
            kafkalite::LogConfig::default(),
        )
        .unwrap();
        let mut key = vec![0, 1, 0, 3];
        key.extend_from_slice(b"a\nb");
        key.extend_from_slice(&[0, 1, b't', 0, 0, 0, 0]);
        let mut value = vec![0, 3];
        value.extend_from_slice(&5i64.to_be_bytes());
        value.extend_from_slice(&(-1i32).to_be_bytes());
        value.extend_from_slice(&[0, 0]);
        value.extend_from_slice(&0i64.to_be_bytes());
        log.append_records(
            &[Record::new(value).key(key)],
            Compression::None,
            Durability::Fsync,
        )
        .unwrap();
        log.close().unwrap();
    }
    assert!(Store::open(dir, StoreOptions::default()).is_err());
    let r = fails(dir, &["verify"]);
    assert!(
        r.stdout.contains("CORRUPT") && r.stdout.contains("__consumer_offsets-0"),
        "{}",
        r.stdout
    );
}

/// Issue 17 ("smaller"): `consume --offset -5` was a parse failure
/// (`unexpected argument '-5'`); a negative offset is a documented error.
#[test]
fn consume_with_a_negative_offset_is_a_documented_error_not_a_parse_failure() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(dir, &["topics", "create", "t", "--partitions", "1"]);
    let r = fails(dir, &["consume", "t", "--partition", "0", "--offset", "-5"]);
    assert_eq!(
        r.code, 1,
        "a runtime error, not a usage error: {}",
        r.stderr
    );
    assert!(r.stderr.contains("offset -5 out of range"), "{}", r.stderr);
}

/// Issue 17 ("smaller"): `kafkalite dump … | head` printed `Broken pipe
/// (os error 32)`; a closed stdout ends the command quietly.
#[test]
fn dump_into_a_closed_pipe_ends_quietly() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    for i in 0..2000 {
        store
            .append(
                "t",
                0,
                &[Record::new(format!("record {i} {}", "x".repeat(100)))],
                Durability::Written,
            )
            .unwrap();
    }
    store.close().unwrap();
    let log = d.path().join("t-0").join("00000000000000000000.log");
    let mut child = Command::new(BIN)
        .args(["dump", log.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then close the pipe, as `head -1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(out.status.code(), Some(0));
}

/// Issue 17, "Done when": arbitrary strings fed to every name and value that
/// reaches store metadata (topic names, group ids, config values, offset
/// metadata): whatever is accepted or refused, the store reopens (writable
/// and read-only), `verify` agrees with open, and nothing outside the
/// store's directory is created or removed.
mod hostile_strings {
    use super::*;
    use kafkalite::{
        Consumer, ConsumerConfig, Error, OffsetAndMetadata, ResetTo, TopicPartition, TOPIC_KEYS,
    };
    use proptest::prelude::*;

    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            ".{0,24}",
            "[a-z._-]{1,12}",
            Just("ops\ntopic ../../victim 1".to_owned()),
            Just("../../victim".to_owned()),
            Just("a,b".to_owned()),
            Just("x=y\rconfig t segment.ms=0".to_owned()),
            Just("__consumer_offsets".to_owned()),
            Just("\0".to_owned()),
            Just("m".repeat(5000)),
            Just(String::new()),
        ]
    }

    /// Every path under `dir`, skipping `skip`.
    fn tree(dir: &Path, skip: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p == skip {
                continue;
            }
            if p.is_dir() {
                tree(&p, skip, out);
            }
            out.push(p);
        }
    }

    fn outside(tmp: &Path, store: &Path) -> Vec<std::path::PathBuf> {
        let mut v = Vec::new();
        tree(tmp, store, &mut v);
        v.sort();
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_metadata_strings_never_break_the_store_or_reach_outside_it(
            topic in hostile(),
            group in hostile(),
            key in proptest::sample::select(TOPIC_KEYS),
            value in hostile(),
            metadata in hostile(),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let victim = tmp.path().join("victim-0");
            std::fs::create_dir(&victim).unwrap();
            std::fs::write(victim.join("precious"), b"keep").unwrap();
            let store_dir = tmp.path().join("a").join("store");
            std::fs::create_dir_all(&store_dir).unwrap();
            let before = outside(tmp.path(), &store_dir);
            {
                let store = Store::open(&store_dir, StoreOptions::default()).unwrap();
                let _ = store.create_topic(&topic, 1, TopicConfig::default());
                let mut config = TopicConfig::default();
                if config.set(key, &value).is_ok() {
                    let _ = store.create_topic("t", 1, config.clone());
                    let _ = store.alter_topic_config("t", config);
                }
                let _ = store.create_topic("t", 1, TopicConfig::default());
                store.append("t", 0, &[Record::new("x")], Durability::Written).unwrap();
                if let Ok(mut c) = Consumer::new(&store, ConsumerConfig::with_group(group.clone())) {
                    let tp = TopicPartition::new("t", 0);
                    c.assign(std::slice::from_ref(&tp)).unwrap();
                    let o = OffsetAndMetadata { metadata: metadata.clone(), ..OffsetAndMetadata::new(1) };
                    match c.commit_offsets(&[(tp, o)]) {
                        Ok(()) | Err(Error::OffsetMetadataTooLarge { .. }) => {}
                        Err(e) => prop_assert!(false, "commit: {e:?}"),
                    }
                }
                let _ = store.reset_group_offsets(&group, "t", ResetTo::Earliest);
                let _ = store.reset_group_offsets(&group, &topic, ResetTo::Latest);
                let _ = store.delete_topic(&topic);
                store.close().unwrap();
            }
            let reopened = Store::open(&store_dir, StoreOptions::default());
            prop_assert!(reopened.is_ok(), "{:?}", reopened.err());
            drop(reopened);
            prop_assert!(Store::open_read_only(&store_dir, StoreOptions::default()).is_ok());
            let r = run_with(&["--dir", store_dir.to_str().unwrap(), "verify"], b"");
            prop_assert_eq!(r.code, 0, "verify disagrees with open: {}", r.stdout);
            prop_assert_eq!(outside(tmp.path(), &store_dir), before);
            prop_assert_eq!(std::fs::read(victim.join("precious")).unwrap(), b"keep".to_vec());
        }
    }
}

fn parse(out: &str) -> serde_json::Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn every_inspecting_subcommand_prints_json_that_parses_with_output_json_or_json() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(
        dir,
        &[
            "topics",
            "create",
            "t",
            "--partitions",
            "2",
            "--config",
            "retention.ms=60000",
        ],
    );
    ok(dir, &["topics", "create", "u"]);
    // Quotes, backslashes and control characters must survive the JSON.
    let input = "k\"1:v\\1\nk2:v\t2\nk3:v3\n";
    ok_in(
        dir,
        &["produce", "t", "--key-separator", ":"],
        input.as_bytes(),
    );
    ok(
        dir,
        &["consume", "t", "--group", "g\"q", "--from-beginning"],
    );

    for flag in [&["--output", "json"][..], &["--json"][..]] {
        let one = parse(&ok(dir, &[&["topics", "describe", "t"][..], flag].concat()));
        let t = &one[0];
        assert_eq!(t["name"], "t");
        assert_eq!(t["config"]["retention_ms"], 60000);
        let parts = t["partitions"].as_array().unwrap();
        assert_eq!(parts.len(), 2);
        let ends: i64 = parts
            .iter()
            .map(|p| p["log_end_offset"].as_i64().unwrap())
            .sum();
        assert_eq!(ends, 3);
        let all = parse(&ok(dir, &[&["topics", "describe"][..], flag].concat()));
        let names: Vec<&str> = all
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["t", "u"]);

        let g = parse(&ok(
            dir,
            &[&["groups", "describe", "g\"q"][..], flag].concat(),
        ));
        assert_eq!(g["group"], "g\"q");
        let committed: i64 = g["offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["committed"].as_i64().unwrap_or(0))
            .sum();
        assert_eq!(committed, 3);

        let v = parse(&ok(dir, &[&["verify"][..], flag].concat()));
        assert_eq!(v["problems"], serde_json::json!([]));
        assert!(v["partitions"].as_u64().unwrap() >= 3, "{v}");
        assert!(v["notes"].is_array());
    }

    // dump: one object per record, keys and values in base64.
    let log = dir.join("t-0").join(format!("{:020}.log", 0));
    let log1 = dir.join("t-1").join(format!("{:020}.log", 0));
    let mut keys = Vec::new();
    for f in [&log, &log1] {
        let out = ok(dir, &["dump", "--output", "json", f.to_str().unwrap()]);
        for line in out.lines() {
            let row = parse(line);
            keys.push(String::from_utf8(b64(&row["key"]).unwrap()).unwrap());
        }
    }
    keys.sort();
    assert_eq!(keys, ["k\"1", "k2", "k3"]);

    // perf: one object each.
    let p = parse(&ok(
        dir,
        &[
            "perf",
            "produce",
            "--topic",
            "p",
            "--records",
            "200",
            "--record-size",
            "50",
            "--output",
            "json",
        ],
    ));
    assert_eq!(p["records"], 200);
    let c = parse(&ok(
        dir,
        &["perf", "consume", "--topic", "p", "--output", "json"],
    ));
    assert_eq!(c["records"], 200);
    let a = parse(&ok(
        dir,
        &[
            "perf",
            "append",
            "--record-size",
            "50",
            "--batch-records",
            "10",
            "--batches",
            "5",
            "--distinct-batches",
            "2",
            "--rounds",
            "1",
            "--output",
            "json",
        ],
    ));
    assert!(a["ratio"].as_f64().is_some(), "{a}");

    // Text stays the default, and an unknown format is a usage error.
    assert!(ok(dir, &["verify"]).starts_with("verified "));
    let r = fails(dir, &["verify", "--output", "yaml"]);
    assert_eq!(r.code, 2);
}

#[test]
fn verify_output_json_lists_the_corruption_and_still_fails() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    let recs: Vec<Record> = (0..20).map(|i| Record::new(format!("v{i}"))).collect();
    store
        .append("t", 0, &recs[..10], Durability::Written)
        .unwrap();
    store
        .append("t", 0, &recs[10..], Durability::Written)
        .unwrap();
    store.close().unwrap();
    let log = dir.join("t-0").join(format!("{:020}.log", 0));
    let mut b = std::fs::read(&log).unwrap();
    b[70] ^= 0x10; // inside the first batch, below the recovery point
    std::fs::write(&log, &b).unwrap();
    let r = fails(dir, &["verify", "--output", "json"]);
    let v = parse(&r.stdout);
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v}");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .contains("00000000000000000000.log"),
        "{v}"
    );
}

#[test]
fn produce_and_verify_show_no_progress_line_when_stderr_is_not_a_terminal() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let r = run_with(&["--dir", dir, "topics", "create", "t"], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let input: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let r = run_with(&["--dir", dir, "produce", "t"], input.as_bytes());
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let r = run_with(&["--dir", dir, "verify"], b"");
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    assert!(r.stdout.contains("0 problems"), "{}", r.stdout);
}

/// `migrate` without a reachable broker: clear one-line errors, nothing
/// written to the store (no offset map), the store untouched.
#[cfg(feature = "migrate")]
#[test]
fn migrate_refuses_unreachable_and_non_kafka_targets_and_writes_no_map() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    ok(dir, &["topics", "create", "t", "--partitions", "2"]);
    ok_in(dir, &["produce", "t"], b"a\nb\nc\n");
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let r = fails(dir, &["migrate", "--bootstrap-server", &addr]);
    assert!(
        r.stderr
            .contains(&format!("cannot connect to the Kafka broker at {addr}")),
        "{}",
        r.stderr
    );
    // Something that accepts and hangs up at once: not a Kafka broker.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let t = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        drop(s);
    });
    let r = fails(dir, &["migrate", "--bootstrap-server", &addr]);
    t.join().unwrap();
    assert!(
        r.stderr
            .contains(&format!("connection to the Kafka broker at {addr} failed")),
        "{}",
        r.stderr
    );
    // A topic the store does not have.
    let r = fails(
        dir,
        &["migrate", "--bootstrap-server", &addr, "--topic", "nope"],
    );
    assert!(r.stderr.contains("nope"), "{}", r.stderr);
    let maps: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("migrate-"))
        .collect();
    assert!(maps.is_empty());
    // Import needs a topic.
    let r = run_with(
        &[
            "--dir",
            dir.to_str().unwrap(),
            "import",
            "--bootstrap-server",
            &addr,
        ],
        b"",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn a_store_given_as_a_relative_one_component_path_opens_and_takes_records() {
    // "store" has the empty parent: syncing "its directory" must sync the
    // current one, not fail on the empty path.
    let d = tempfile::tempdir().unwrap();
    let run_in = |args: &[&str], stdin: &[u8]| {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(d.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run_in(&["--dir", "store", "topics", "create", "t"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_in(&["--dir", "store", "produce", "t"], b"a\nb\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run_in(
        &[
            "--dir",
            "store",
            "consume",
            "t",
            "--from-beginning",
            "--timeout-ms",
            "200",
        ],
        b"",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nb\n");
    assert!(d.path().join("store/t-0").is_dir());
}

/// `perf produce --keys N`: record i keyed `key-{i mod N}`, whichever
/// thread sends it, in the partition murmur2 gives its key.
#[test]
fn perf_produce_with_keys_sends_each_key_to_its_murmur2_partition() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    ok(
        dir,
        &[
            "perf",
            "produce",
            "--topic",
            "k",
            "--partitions",
            "4",
            "--records",
            "600",
            "--record-size",
            "50",
            "--keys",
            "5",
            "--threads",
            "2",
            "--reporting-interval",
            "0",
        ],
    );
    let s = Store::open(dir, StoreOptions::default()).unwrap();
    let mut per_key = std::collections::HashMap::new();
    for p in 0..4 {
        let read = s.fetch("k", p, 0, 1 << 20).unwrap();
        for r in read.records() {
            let r = r.unwrap();
            let key = r.key.expect("every record has a key");
            assert_eq!(kafkalite::partition_for_key(&key, 4), p);
            *per_key
                .entry(String::from_utf8(key.to_vec()).unwrap())
                .or_insert(0) += 1;
        }
    }
    // 600 records cycling over 5 keys, shared by two threads: 120 each.
    let want: std::collections::HashMap<String, i32> =
        (0..5).map(|k| (format!("key-{k}"), 120)).collect();
    assert_eq!(per_key, want);
}

/// `perf produce --threads`: the threads claim the records a run at a
/// time, and every record is sent once, whatever thread claims it (record
/// i takes payload i of the file: 2,500 distinct payloads, three threads,
/// runs of 1,024, the last one partial).
#[test]
fn perf_produce_threads_send_every_record_once() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let payloads = dir.join("payloads.txt");
    let want: Vec<String> = (0..2500).map(|i| format!("record-{i}")).collect();
    std::fs::write(&payloads, want.join("\n")).unwrap();
    ok(
        dir,
        &[
            "perf",
            "produce",
            "--topic",
            "c",
            "--partitions",
            "3",
            "--records",
            "2500",
            "--payload-file",
            payloads.to_str().unwrap(),
            "--threads",
            "3",
            "--reporting-interval",
            "0",
        ],
    );
    let s = Store::open(dir, StoreOptions::default()).unwrap();
    let mut got = Vec::new();
    for p in 0..3 {
        let read = s.fetch("c", p, 0, 1 << 20).unwrap();
        for r in read.records() {
            let v = r.unwrap().value.expect("a payload");
            got.push(String::from_utf8(v.to_vec()).unwrap());
        }
    }
    got.sort();
    let mut want = want;
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn perf_produce_takes_the_stores_writeback_bytes() {
    let default = StoreOptions::default().writeback_bytes.to_string();
    for wb in [None, Some("0"), Some("4096")] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        let mut args = vec![
            "perf",
            "produce",
            "--topic",
            "w",
            "--records",
            "3000",
            "--record-size",
            "100",
            "--reporting-interval",
            "0",
        ];
        if let Some(wb) = wb {
            args.extend(["--writeback-bytes", wb]);
        }
        let out = ok(dir, &args);
        assert!(out.contains("3000 records sent"), "{out}");
        let s = Store::open(dir, StoreOptions::default()).unwrap();
        assert_eq!(s.partition("w", 0).unwrap().log_end_offset(), 3000);
        drop(s);
        // The store the run opened had the setting.
        let d = tempfile::tempdir().unwrap();
        args.extend(["--output", "json"]);
        let j: serde_json::Value = serde_json::from_str(&ok(d.path(), &args)).unwrap();
        assert_eq!(
            j["writeback_bytes"].to_string(),
            wb.unwrap_or(&default),
            "{j}"
        );
    }
}
