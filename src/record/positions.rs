//! Where the records of a batch start, for point reads.
//!
//! - Uncompressed: the start of every `stride`-th record, so a point read
//!   into a batch of a thousand records jumps to the nearest one below its
//!   target and walks at most `stride - 1` record lengths, instead of the
//!   lengths of every record before it (each on its own cache line for
//!   ~300-byte records). The stride spans about [`STRIDE_BYTES`] (2 KiB)
//!   of records, at most [`STRIDE`] records (2 for 1 KiB records, 5 for
//!   376-byte ones, 16 for 100-byte ones): a walk touches about 2 KiB, and
//!   the positions take 4 bytes per 2 KiB of records (0.2 %), or per
//!   [`STRIDE`] smaller records.
//! - lz4: where each block of the frame starts and which record is the
//!   first to start in it. The frame's blocks are independent, so a point
//!   read decompresses from the block holding its record's start (one
//!   64 KiB block, mostly) instead of every block before it.
//!
//! Built by one walk over the batch's (decompressed) bytes, and only for
//! batches whose offset deltas run 0, 1, 2, … (every batch an append
//! validated), so record `i` has offset `base + i`.

use super::lz4::BlockStart;
use super::varint::varint_raw_at;

/// At most every how many records a start position is kept.
pub(crate) const STRIDE: i32 = 16;

/// About how many bytes of records lie between kept start positions.
const STRIDE_BYTES: usize = 2048;

/// Where records start in one batch.
#[derive(Debug)]
pub(crate) enum RecordPositions {
    /// The start, within an uncompressed batch's records section, of
    /// records 0, stride, 2·stride, …
    Plain { stride: i32, starts: Box<[u32]> },
    /// Per block of an lz4 batch's frame, in order.
    Lz4(Box<[Lz4Block]>),
}

/// One block of an lz4 frame, and the first record that starts in it or
/// after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lz4Block {
    pub(crate) start: BlockStart,
    /// The record's index in the batch (the record count when none starts
    /// at or after the block).
    pub(crate) first_record: i32,
    /// Its start in the uncompressed data.
    pub(crate) first_pos: u32,
}

/// The walk over an lz4 batch's records that builds its block map: by
/// their lengths, as far as the bytes decoded so far go, until every block
/// has its first record (so the bytes of the last block past that one's
/// length are not needed).
pub(crate) struct Lz4MapWalk {
    count: i32,
    /// The next record's start, and its index.
    at: usize,
    index: i32,
    map: Vec<Lz4Block>,
    malformed: bool,
}

impl Lz4MapWalk {
    pub(crate) fn new(count: i32) -> Lz4MapWalk {
        Lz4MapWalk {
            count,
            at: 0,
            index: 0,
            map: Vec::new(),
            malformed: false,
        }
    }

    /// Walks on over `data` (the batch's bytes decoded so far, from its
    /// start; they only grow between calls), `blocks` being where the
    /// frame's blocks start: `None` once it is done (every block has its
    /// entry, every record was walked, or a length is malformed), else how
    /// many bytes it needs decoded to go on.
    pub(crate) fn walk(&mut self, data: &[u8], blocks: &[BlockStart]) -> Option<usize> {
        while !self.malformed && self.index < self.count {
            // Every block starting at or before this record (and after the
            // previous one) has it as its first.
            while let Some(b) = blocks.get(self.map.len()) {
                if b.out_start as usize > self.at {
                    break;
                }
                let Ok(first_pos) = u32::try_from(self.at) else {
                    self.malformed = true;
                    return None;
                };
                self.map.push(Lz4Block {
                    start: *b,
                    first_record: self.index,
                    first_pos,
                });
            }
            if self.map.len() == blocks.len() {
                return None;
            }
            // The length, raw: odd is negative (malformed), else twice it.
            let mut p = self.at;
            match varint_raw_at(data, &mut p) {
                Some(z) if z & 1 == 0 => {
                    self.at = p.saturating_add((z >> 1) as usize);
                    self.index += 1;
                }
                Some(_) => self.malformed = true,
                // Cut by the end of the bytes (a length takes at most 5).
                None if data.len() < self.at.saturating_add(5) => {
                    return Some(self.at.saturating_add(5));
                }
                None => self.malformed = true,
            }
        }
        None
    }

    /// As [`RecordPositions::lz4_block_for`], over the blocks mapped so
    /// far.
    pub(crate) fn block_for(&self, index: i32) -> Option<(Lz4Block, Option<Lz4Block>)> {
        block_for(&self.map, index)
    }

    /// The map walked, `done` saying whether the walk finished (else the
    /// bytes ran out before it did: the batch is malformed); `None` for a
    /// malformed batch, or a frame of one block (nothing to skip).
    pub(crate) fn finish(self, done: bool, blocks: &[BlockStart]) -> Option<RecordPositions> {
        // Blocks after the last record's start get no entry: a read never
        // begins there.
        (done && !self.malformed && blocks.len() >= 2)
            .then(|| RecordPositions::Lz4(self.map.into_boxed_slice()))
    }
}

/// The block of `blocks` (a block map) holding the start of record
/// `index`: the last whose first record is at or below it; with the block
/// after it, if any.
fn block_for(blocks: &[Lz4Block], index: i32) -> Option<(Lz4Block, Option<Lz4Block>)> {
    let n = blocks.partition_point(|b| b.first_record <= index);
    let block = blocks.get(n.checked_sub(1)?).copied()?;
    Some((block, blocks.get(n).copied()))
}

/// Calls `each(index, start)` for the `count` records of `data`, walking
/// them by their lengths; `None` when a length is malformed or runs past
/// the data.
fn walk(data: &[u8], count: i32, mut each: impl FnMut(i32, usize)) -> Option<()> {
    let mut at = 0usize;
    for i in 0..count {
        each(i, at);
        // The length, raw: odd is negative (malformed), else twice it.
        let len = varint_raw_at(data, &mut at).filter(|z| z & 1 == 0)?;
        at = at.checked_add((len >> 1) as usize)?;
        if at > data.len() {
            return None;
        }
    }
    Some(())
}

/// Every how many of a batch's `count` records, `bytes` in all, a start
/// is kept: about [`STRIDE_BYTES`] of records (rounded to the nearest
/// record), at least 1, at most [`STRIDE`].
fn stride_for(bytes: usize, count: i32) -> i32 {
    let average = (bytes / usize::try_from(count.max(1)).unwrap_or(1)).max(1);
    i32::try_from((STRIDE_BYTES + average / 2) / average)
        .unwrap_or(STRIDE)
        .clamp(1, STRIDE)
}

impl RecordPositions {
    /// Walks the `count` records of `data` by their lengths. `None` when a
    /// length is malformed or runs past the data (the decoder then reports
    /// the damage where it is), or when the batch is too small to gain.
    pub(crate) fn build(data: &[u8], count: i32) -> Option<RecordPositions> {
        if count <= STRIDE || data.len() > u32::MAX as usize {
            return None;
        }
        let stride = stride_for(data.len(), count);
        let mut starts = Vec::with_capacity((count / stride + 1) as usize);
        let mut fits = true;
        walk(data, count, |i, at| {
            if i % stride == 0 {
                match u32::try_from(at) {
                    Ok(at) => starts.push(at),
                    Err(_) => fits = false,
                }
            }
        })?;
        fits.then(|| RecordPositions::Plain {
            stride,
            starts: starts.into_boxed_slice(),
        })
    }

    /// The nearest kept record at or below `index`: its index and start
    /// (uncompressed batches).
    pub(crate) fn at_or_below(&self, index: i32) -> Option<(i32, usize)> {
        let RecordPositions::Plain { stride, starts } = self else {
            return None;
        };
        let k = usize::try_from(index / stride).ok()?;
        let k = k.min(starts.len().checked_sub(1)?);
        let start = *starts.get(k)?;
        Some((i32::try_from(k).ok()? * stride, start as usize))
    }

    /// The lz4 block holding the start of record `index`: the last whose
    /// first record is at or below it (lz4 batches); with the block after
    /// it, if any.
    pub(crate) fn lz4_block_for(&self, index: i32) -> Option<(Lz4Block, Option<Lz4Block>)> {
        let RecordPositions::Lz4(blocks) = self else {
            return None;
        };
        block_for(blocks, index)
    }

    /// Bytes held, as a cache of these counts them: the entries (rounded up
    /// to the allocator's 16-byte granules), this value in its `Arc`, and
    /// a map slot (key, pointer and control byte, with load-factor slack).
    pub(crate) fn heap_bytes(&self) -> usize {
        let entries = match self {
            RecordPositions::Plain { starts, .. } => std::mem::size_of_val::<[u32]>(starts),
            RecordPositions::Lz4(b) => std::mem::size_of_val::<[Lz4Block]>(b),
        };
        entries.div_ceil(16) * 16 + std::mem::size_of::<Self>() + 16 + 64
    }
}

#[cfg(test)]
mod tests {
    use crate::record::{BatchBuilder, Compression, RecordBatch};
    use std::sync::Arc;

    #[test]
    fn skipping_with_positions_lands_on_every_record_of_a_batch_of_varied_sizes() {
        let mut b = BatchBuilder::new(Compression::None).base_offset(7_000);
        for i in 0..1000usize {
            // Record sizes from 1 to ~700 bytes, so varints of 1 and 2 bytes.
            let value = "v".repeat((i * 37) % 700);
            b.push_parts(
                i as i64,
                Some(format!("k{i}").as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
        }
        let batch = RecordBatch::decode(&b.build()).unwrap();
        let positions = Arc::new(batch.build_positions().unwrap());
        let with = batch.clone().with_positions(positions);
        for target in 0..1000i64 {
            let mut rs = with.records().unwrap();
            rs.skip_to(7_000 + target);
            let r = rs.next().unwrap().unwrap();
            assert_eq!(r.offset, 7_000 + target);
            assert_eq!(r.value.unwrap().len(), (target as usize * 37) % 700);
            // From a position part-way in, too.
            let mut rs = with.records().unwrap();
            rs.skip_to(7_000 + target / 2);
            rs.skip_to(7_000 + target);
            assert_eq!(rs.next().unwrap().unwrap().offset, 7_000 + target);
        }
    }

    #[test]
    fn lz4_point_reads_from_the_block_map_land_on_every_record() {
        let mut b = BatchBuilder::new(Compression::Lz4).base_offset(9_000);
        let mut values = Vec::new();
        for i in 0..600usize {
            // Incompressible-ish values of 1 B to ~3 KiB, and one of 200 KiB
            // that spans several 64 KiB blocks.
            let n = if i == 300 {
                200_000
            } else {
                (i * 97) % 3_000 + 1
            };
            let value: Vec<u8> = (0..n).map(|j| ((j * 31 + i * 7) % 251) as u8).collect();
            b.push_parts(
                i as i64,
                Some(format!("k{i}").as_bytes()),
                Some(&value),
                &[],
            );
            values.push(value);
        }
        let batch = RecordBatch::decode(&b.build()).unwrap();
        assert!(batch.wants_positions());
        let positions = batch.build_positions().unwrap();
        let super::RecordPositions::Lz4(blocks) = &positions else {
            panic!("an lz4 batch gets a block map");
        };
        assert!(blocks.len() > 8, "{} blocks", blocks.len());
        // 16 bytes a 64 KiB block (its start and first record).
        assert!(
            positions.heap_bytes() < blocks.len() * 16 + 128,
            "{}",
            positions.heap_bytes()
        );
        // The first point read builds the same map from its own decode; one
        // of the batch's first record needs none.
        let (r, map) = batch.record_at_building(9_000).unwrap();
        assert_eq!(r.unwrap().value.as_deref(), Some(&values[0][..]));
        assert!(map.is_none());
        for i in [1usize, 2, 299, 599] {
            let (r, map) = batch.record_at_building(9_000 + i as i64).unwrap();
            assert_eq!(r.unwrap().value.as_deref(), Some(&values[i][..]));
            let Some(super::RecordPositions::Lz4(built)) = map else {
                panic!("a block map");
            };
            assert_eq!(built, *blocks);
        }
        let with = batch.clone().with_positions(Arc::new(positions));
        for (i, value) in values.iter().enumerate() {
            let offset = 9_000 + i as i64;
            let r = with.record_at(offset).unwrap().unwrap();
            assert_eq!(r.offset, offset);
            assert_eq!(r.key.as_deref(), Some(format!("k{i}").as_bytes()));
            assert_eq!(r.value.as_deref(), Some(&value[..]), "record {i}");
            assert_eq!(r, batch.record_at(offset).unwrap().unwrap());
            // The thread's decode scratch stays within its bound, also
            // after the read of the 200 KB record (decoded into more).
            assert!(crate::record::lz4::scratch_capacity() <= crate::record::lz4::SCRATCH_KEEP);
        }
        // Backwards and striding, so each decode lands in scratch holding
        // another block's bytes.
        for i in (0..600usize).rev().chain((0..600).step_by(7)) {
            let r = with.record_at(9_000 + i as i64).unwrap().unwrap();
            assert_eq!(r.value.as_deref(), Some(&values[i][..]), "record {i}");
        }
        assert!(
            crate::record::lz4::scratch_capacity() > 0,
            "the scratch is kept"
        );
        assert_eq!(with.record_at(9_600).unwrap(), None);
        assert_eq!(with.record_at(8_999).unwrap(), None);
    }

    #[test]
    fn an_lz4_batch_of_one_block_gets_no_map() {
        let mut b = BatchBuilder::new(Compression::Lz4);
        for i in 0..100 {
            b.push_parts(0, None, Some(format!("{i}").as_bytes()), &[]);
        }
        let batch = RecordBatch::decode(&b.build()).unwrap();
        assert!(batch.wants_positions());
        assert!(batch.build_positions().is_none());
        // Its point reads, first or not, find their record without one.
        for i in [1i64, 57, 99] {
            let (r, map) = batch.record_at_building(i).unwrap();
            assert_eq!(r.unwrap().value.as_deref(), Some(format!("{i}").as_bytes()));
            assert!(map.is_none());
        }
    }

    #[test]
    fn the_stride_keeps_about_2_kib_of_records_between_starts() {
        for (value, stride) in [(10usize, 16), (370, 5), (1018, 2), (5000, 1)] {
            let mut b = BatchBuilder::new(Compression::None);
            for _ in 0..200 {
                b.push_parts(0, None, Some(&vec![b'x'; value]), &[]);
            }
            let batch = RecordBatch::decode(&b.build()).unwrap();
            let p = batch.build_positions().unwrap();
            let super::RecordPositions::Plain {
                stride: got,
                starts,
            } = &p
            else {
                panic!("plain positions");
            };
            assert_eq!(
                (*got, starts.len()),
                (stride, 200usize.div_ceil(stride as usize)),
                "{value}-byte values"
            );
            // Each kept start lands on its record.
            let with = batch.clone().with_positions(Arc::new(p));
            for i in [0i64, 1, 99, 198, 199] {
                assert_eq!(with.record_at(i).unwrap().unwrap().offset, i);
            }
        }
    }

    #[test]
    fn malformed_lengths_build_no_positions() {
        let mut b = BatchBuilder::new(Compression::None);
        for i in 0..100 {
            b.push_parts(0, None, Some(format!("{i}").as_bytes()), &[]);
        }
        let bytes = b.build();
        let data = &bytes[61..];
        assert!(super::RecordPositions::build(data, 100).is_some());
        // One record more than present runs past the end.
        assert!(super::RecordPositions::build(data, 101).is_none());
        // A negative (odd raw) first length.
        let mut bad = data.to_vec();
        bad[0] |= 1;
        assert!(super::RecordPositions::build(&bad, 100).is_none());
        assert!(
            super::RecordPositions::build(data, 16).is_none(),
            "too small to gain"
        );
    }
}
