//! kafkalite's LZ4 block compressor against the C library that raft-engine
//! links (`lz4-sys`, `LZ4_compress_default` / `LZ4_decompress_safe`) and
//! `lz4_flex` (safe, as kafkalite builds it), on the record bytes of
//! uncompressed kafkalite segments, in 64 KiB blocks as Kafka's frames hold
//! them. Prints each codec's compressed size over input and MB/s (the best
//! of 5 passes), and how fast `lz4_flex` and the C library decode
//! kafkalite's blocks.
//!
//! ```sh
//! cargo build --release
//! ./target/release/kafkalite-peers --child S1 kafkalite /tmp/u0 0 100000 0
//! ./target/release/lz4_codecs /tmp/u0/t-0/00000000000000000000.log
//! ```
#![allow(missing_docs, reason = "a bench binary")]

// The compressor itself, compiled here from the crate's source (it is
// crate-private there and depends on nothing).
#[path = "../../../../src/record/lz4/compress.rs"]
#[allow(dead_code, reason = "the bench uses the block compressor only")]
mod compress;

use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The record bytes (after the 61-byte header) of every batch of a log.
fn batches(path: &str) -> Res<Vec<Vec<u8>>> {
    let data = std::fs::read(path)?;
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(len) = data.get(pos + 8..pos + 12) {
        let len = i32::from_be_bytes(len.try_into()?) as usize;
        let body = data.get(pos + 61..pos + 12 + len).ok_or("a batch runs past the file")?;
        out.push(body.to_vec());
        pos += 12 + len;
    }
    Ok(out)
}

/// The best of 5 passes of `f` (which returns a byte count), in seconds.
fn best_of_5(mut f: impl FnMut() -> usize) -> (usize, f64) {
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..5 {
        let t = Instant::now();
        n = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (n, best)
}

fn c_compress(src: &[u8], dst: &mut [u8]) -> usize {
    // SAFETY: both pointers are valid for the lengths passed, which fit an
    // i32 (blocks of 64 KiB), and the C function writes at most dst.len().
    let n = unsafe {
        lz4_sys::LZ4_compress_default(
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            src.len() as i32,
            dst.len() as i32,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

fn c_decompress(src: &[u8], dst: &mut [u8]) -> usize {
    // SAFETY: as in c_compress; LZ4_decompress_safe never writes past
    // dst.len() and returns a negative number on bad input.
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            src.len() as i32,
            dst.len() as i32,
        )
    };
    usize::try_from(n).unwrap_or(0)
}

fn main() -> Res<()> {
    for path in std::env::args().skip(1) {
        let bs = batches(&path)?;
        let blocks: Vec<&[u8]> = bs.iter().flat_map(|b| b.chunks(1 << 16)).collect();
        let total: usize = blocks.iter().map(|b| b.len()).sum();
        let mb = |t: f64| total as f64 / t / 1e6;
        let ratio = |n: usize| n as f64 / total as f64;
        let mut dst = vec![0u8; lz4_flex::block::get_maximum_output_size(1 << 16)];
        let mut table = compress::Table::new();
        let (ours, t_ours) = best_of_5(|| {
            blocks.iter().map(|b| compress::compress_block(b, &mut table, &mut dst)).sum()
        });
        let (flex, t_flex) = best_of_5(|| {
            blocks
                .iter()
                .map(|b| lz4_flex::block::compress_into(b, &mut dst).unwrap_or(0))
                .sum()
        });
        let (c, t_c) = best_of_5(|| blocks.iter().map(|b| c_compress(b, &mut dst)).sum());
        let ours_blocks: Vec<(Vec<u8>, usize)> = blocks
            .iter()
            .map(|b| {
                let n = compress::compress_block(b, &mut table, &mut dst);
                (dst[..n].to_vec(), b.len())
            })
            .collect();
        let mut out = vec![0u8; 1 << 16];
        let (flex_out, d_flex) = best_of_5(|| {
            ours_blocks
                .iter()
                .map(|(c, n)| lz4_flex::block::decompress_into(c, &mut out[..*n]).unwrap_or(0))
                .sum()
        });
        let (c_out, d_c) = best_of_5(|| {
            ours_blocks.iter().map(|(c, n)| c_decompress(c, &mut out[..*n])).sum()
        });
        if flex_out != total || c_out != total {
            return Err(format!("{path}: a decoder returned {flex_out} / {c_out} of {total} bytes").into());
        }
        println!("{path} ({total} bytes in {} blocks)", blocks.len());
        println!("  compress  kafkalite {:.4} {:>5.0} MB/s | lz4_flex {:.4} {:>5.0} MB/s | C {:.4} {:>5.0} MB/s",
            ratio(ours), mb(t_ours), ratio(flex), mb(t_flex), ratio(c), mb(t_c));
        println!("  decode kafkalite's blocks: lz4_flex {:>5.0} MB/s | C {:>5.0} MB/s", mb(d_flex), mb(d_c));
    }
    Ok(())
}
