//! Where the records of an uncompressed batch start, for every
//! [`STRIDE`]-th record: a point read into a batch of a thousand records
//! jumps to the nearest one below its target and walks at most
//! `STRIDE - 1` record lengths, instead of the lengths of every record
//! before it (each on its own cache line for ~300-byte records).
//!
//! Built by one walk over the batch's bytes (the same walk a point read
//! near the batch's end makes anyway) and only for batches whose offset
//! deltas run 0, 1, 2, … (every batch an append validated), so record `i`
//! has offset `base + i`.

use super::varint::varint_raw_at;

/// Every how many records a start position is kept.
pub(crate) const STRIDE: i32 = 16;

/// The start, within a batch's records section, of records 0, STRIDE,
/// 2·STRIDE, …
#[derive(Debug)]
pub(crate) struct RecordPositions {
    starts: Box<[u32]>,
}

impl RecordPositions {
    /// Walks the `count` records of `data` by their lengths. `None` when a
    /// length is malformed or runs past the data (the decoder then reports
    /// the damage where it is), or when the batch is too small to gain.
    pub(crate) fn build(data: &[u8], count: i32) -> Option<RecordPositions> {
        if count <= STRIDE || data.len() > u32::MAX as usize {
            return None;
        }
        let mut starts = Vec::with_capacity((count / STRIDE + 1) as usize);
        let mut at = 0usize;
        for i in 0..count {
            if i % STRIDE == 0 {
                starts.push(u32::try_from(at).ok()?);
            }
            // The length, raw: odd is negative (malformed), else twice it.
            let len = varint_raw_at(data, &mut at).filter(|z| z & 1 == 0)?;
            at = at.checked_add((len >> 1) as usize)?;
            if at > data.len() {
                return None;
            }
        }
        Some(RecordPositions {
            starts: starts.into_boxed_slice(),
        })
    }

    /// The nearest kept record at or below `index`: its index and start.
    pub(crate) fn at_or_below(&self, index: i32) -> Option<(i32, usize)> {
        let k = usize::try_from(index / STRIDE).ok()?;
        let k = k.min(self.starts.len().checked_sub(1)?);
        let start = *self.starts.get(k)?;
        Some((i32::try_from(k).ok()? * STRIDE, start as usize))
    }

    /// Bytes held, as a cache of these counts them: the starts (rounded up
    /// to the allocator's 16-byte granules), this struct in its `Arc`, and
    /// a map slot (key, pointer and control byte, with load-factor slack).
    pub(crate) fn heap_bytes(&self) -> usize {
        let starts = (self.starts.len() * std::mem::size_of::<u32>()).div_ceil(16) * 16;
        starts + std::mem::size_of::<Self>() + 16 + 64
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
