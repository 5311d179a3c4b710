//! Arbitrary bytes as a segment's `.log` and `.index`, opened after a crash
//! or a clean shutdown: recovery and reads never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kafkalite::log_fuzz::recover_segment_input(data);
});
