//! Integration tests: one crate, one module per area.

mod codec_roundtrip;
mod decode_errors;
mod fuzz_corpus;
mod kafka_protocol_interop;
mod vectors;
