//! Replays the fuzz corpora and minimised crashes of the log fuzz targets
//! (`fuzz/corpus/<target>/`, `fuzz/regressions/<target>/`) through the same
//! harnesses, on stable, so every past finding stays fixed (plain
//! `cargo test` runs them).

use std::path::Path;

fn replay(target: &str, harness: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for kind in ["corpus", "regressions"] {
        let dir = root.join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files.iter().filter(|f| f.is_file()) {
            let data = std::fs::read(f).unwrap();
            let outcome = std::panic::catch_unwind(|| harness(&data));
            assert!(outcome.is_ok(), "{} panicked", f.display());
            n += 1;
        }
    }
    n
}

#[test]
fn the_recover_segment_corpus_replays_without_panics() {
    let n = replay("recover_segment", super::recover_segment_input);
    assert!(n > 0, "no corpus found");
}

#[test]
fn the_index_loader_corpus_replays_without_panics() {
    let n = replay("index_loader", super::index_loader);
    assert!(n > 0, "no corpus found");
}

#[test]
fn the_log_ops_corpus_replays_without_panics() {
    let n = replay("log_ops", super::log_ops);
    assert!(n > 0, "no corpus found");
}
