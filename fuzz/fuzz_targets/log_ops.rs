//! Arbitrary bytes as a sequence of operations (appends, reads, rolls,
//! close/crash and reopen, tail cuts, retention, delete_records, compaction)
//! on a partition log, checked against an in-memory model after every step.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kafkalite::log_fuzz::log_ops(data);
});
