//! Decodes arbitrary bytes as a record batch (magic fixed, CRC re-stamped) and
//! all of its records. Must never panic. The logic lives in the library
//! (`src/record/fuzz.rs`, built under `--cfg fuzzing`) so its corpus replay
//! unit test runs the same code on stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kafkalite::record::fuzz_decode_batch(data);
});
