//! Arbitrary bytes as the `.index` and `.timeindex` of a valid segment,
//! trusted after a clean shutdown: loading never panics and point reads
//! return the right record or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kafkalite::log_fuzz::index_loader(data);
});
