//! kafkalite's LZ4 block compressor against the C library that raft-engine
//! links (`lz4-sys`, `LZ4_compress_default` / `LZ4_decompress_safe`) and
//! `lz4_flex` (safe, as kafkalite builds it), on the record bytes of
//! uncompressed kafkalite segments, in 64 KiB blocks as Kafka's frames hold
//! them. Prints each codec's compressed size over input and MB/s, and how
//! fast kafkalite's decoder, `lz4_flex`'s and the C library's decode
//! kafkalite's blocks: medians of 15 passes, the codecs taking turns.
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
#[path = "../../../../src/record/lz4/decompress.rs"]
#[allow(dead_code, reason = "the bench decodes whole blocks only")]
mod decompress;

use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The record bytes (after the 61-byte header) of every batch of a log.
fn batches(path: &str) -> Res<Vec<Vec<u8>>> {
    let data = std::fs::read(path)?;
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(len) = data.get(pos + 8..pos + 12) {
        let len = i32::from_be_bytes(len.try_into()?) as usize;
        let body = data
            .get(pos + 61..pos + 12 + len)
            .ok_or("a batch runs past the file")?;
        out.push(body.to_vec());
        pos += 12 + len;
    }
    Ok(out)
}

/// Runs each of `fs` (which return a byte count) 15 times, taking turns;
/// the median seconds of each.
fn medians(fs: &mut [&mut dyn FnMut() -> usize]) -> Vec<f64> {
    let mut times = vec![Vec::new(); fs.len()];
    for _ in 0..15 {
        for (f, t) in fs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            std::hint::black_box(f());
            t.push(start.elapsed().as_secs_f64());
        }
    }
    times
        .into_iter()
        .map(|mut t| kafkalite_peers::median(&mut t))
        .collect()
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
        let sizes = [
            blocks
                .iter()
                .map(|b| compress::compress_block(b, &mut table, &mut dst))
                .sum::<usize>(),
            blocks
                .iter()
                .map(|b| lz4_flex::block::compress_into(b, &mut dst).unwrap_or(0))
                .sum(),
            blocks.iter().map(|b| c_compress(b, &mut dst)).sum(),
        ];
        let (mut d1, mut d2, mut d3) = (dst.clone(), dst.clone(), dst.clone());
        let c = medians(&mut [
            &mut || {
                blocks
                    .iter()
                    .map(|b| compress::compress_block(b, &mut table, &mut d1))
                    .sum()
            },
            &mut || {
                blocks
                    .iter()
                    .map(|b| lz4_flex::block::compress_into(b, &mut d2).unwrap_or(0))
                    .sum()
            },
            &mut || blocks.iter().map(|b| c_compress(b, &mut d3)).sum(),
        ]);
        let mut table = compress::Table::new();
        let ours_blocks: Vec<(Vec<u8>, usize)> = blocks
            .iter()
            .map(|b| {
                let n = compress::compress_block(b, &mut table, &mut dst);
                (dst[..n].to_vec(), b.len())
            })
            .collect();
        let mut out = vec![0u8; 1 << 16];
        let decoded = |f: &mut dyn FnMut(&[u8], &mut [u8]) -> usize, out: &mut [u8]| -> usize {
            ours_blocks.iter().map(|(c, n)| f(c, &mut out[..*n])).sum()
        };
        for (name, n) in [
            (
                "kafkalite",
                decoded(
                    &mut |c, o| decompress::decompress_block(c, o).unwrap_or(0),
                    &mut out,
                ),
            ),
            (
                "lz4_flex",
                decoded(
                    &mut |c, o| lz4_flex::block::decompress_into(c, o).unwrap_or(0),
                    &mut out,
                ),
            ),
            ("C", decoded(&mut |c, o| c_decompress(c, o), &mut out)),
        ] {
            if n != total {
                return Err(
                    format!("{path}: the {name} decoder returned {n} of {total} bytes").into(),
                );
            }
        }
        let (mut o1, mut o2, mut o3) = (out.clone(), out.clone(), out);
        let d = medians(&mut [
            &mut || {
                decoded(
                    &mut |c, o| decompress::decompress_block(c, o).unwrap_or(0),
                    &mut o1,
                )
            },
            &mut || {
                decoded(
                    &mut |c, o| lz4_flex::block::decompress_into(c, o).unwrap_or(0),
                    &mut o2,
                )
            },
            &mut || decoded(&mut |c, o| c_decompress(c, o), &mut o3),
        ]);
        println!("{path} ({total} bytes in {} blocks)", blocks.len());
        println!(
            "  compress  kafkalite {:.4} {:>5.0} MB/s | lz4_flex {:.4} {:>5.0} MB/s | C {:.4} {:>5.0} MB/s",
            ratio(sizes[0]), mb(c[0]), ratio(sizes[1]), mb(c[1]), ratio(sizes[2]), mb(c[2])
        );
        println!(
            "  decode kafkalite's blocks: kafkalite {:>5.0} MB/s | lz4_flex {:>5.0} MB/s | C {:>5.0} MB/s",
            mb(d[0]), mb(d[1]), mb(d[2])
        );
    }
    Ok(())
}
