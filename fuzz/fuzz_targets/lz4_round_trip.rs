//! Decodes arbitrary bytes as an LZ4 block with kafkalite's decoder and
//! lz4_flex's, which must agree; compresses them (and a run-rich expansion
//! of them) as lz4 frames, which must decode to their input with every
//! block keeping the LZ4 block format's rules. The logic lives in the library
//! (`src/record/fuzz.rs`, built under `--cfg fuzzing`) so its corpus replay
//! unit test runs the same code on stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kafkalite::record::fuzz_lz4_round_trip(data);
});
