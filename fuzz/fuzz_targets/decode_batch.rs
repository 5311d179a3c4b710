//! Decodes arbitrary bytes as a record batch (magic fixed, CRC re-stamped) and
//! all of its records. Must never panic. The logic lives in the library so the
//! corpus replay test (`tests/it/fuzz_corpus.rs`) runs the same code on stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kafkalite::record::fuzz_decode_batch(data);
});
