//! [`BatchScan`]: the one walk over back-to-back record batches (a segment's
//! `.log`, or a part of one), used by recovery and by the CLI's `verify` and
//! `dump`.
//!
//! The scan yields each batch's file position, header and bytes, and stops
//! at the first batch it refuses; [`BatchScan::end`] then says how the input
//! ended:
//!
//! ```text
//!  start_position                                  end of input
//!  | batch | batch | batch |  ...  |                 Clean
//!  | batch | batch | bat…                            Torn    { position }
//!  | batch | batch | damaged | ... |                 Invalid { position }
//! ```
//!
//! Invariants: every yielded batch lies wholly inside the input, starts
//! where the one before it ends, and (unless turned off) had its CRC-32C
//! checked; [`BatchScan::end_position`] and [`BatchScan::next_offset`] always
//! describe the prefix of accepted batches. Pure: the caller maps the file.

use super::error::DecodeError;
use super::{BatchHeader, RecordBatch};

/// How a scan checks each batch's offsets against the batch before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OffsetOrder {
    /// Offsets are not checked.
    #[default]
    Any,
    /// [`BatchHeader::follows`]: each batch's base offset is above the
    /// previous batch's last offset (the first is at least the scan's first
    /// offset). Compaction leaves gaps, so this is the rule of any segment.
    Increasing,
    /// As `Increasing`, and each batch starts exactly at the offset after
    /// the previous one: the rule of a segment compaction never touched.
    Contiguous,
}

/// A batch the scan accepted.
#[derive(Clone, Copy, Debug)]
pub struct ScannedBatch<'a> {
    /// The batch's position in the file (the scan's start position plus its
    /// place in the input).
    pub position: u64,
    /// The batch's header.
    pub header: BatchHeader,
    /// The batch's bytes, header included (`header.size()` of them).
    pub bytes: &'a [u8],
}

impl ScannedBatch<'_> {
    /// The batch's size in bytes, header included.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// The file position just after the batch.
    pub fn end(&self) -> u64 {
        self.position + self.bytes.len() as u64
    }
}

/// How the input of a [`BatchScan`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanEnd {
    /// Right after the last batch: every byte belongs to an accepted batch.
    Clean,
    /// Inside the batch at `position`: fewer bytes remain than its header
    /// (or a header) needs, as when a write was cut short. A damaged length
    /// field looks the same; `error` is the [`DecodeError::Truncated`].
    Torn {
        /// File position of the incomplete batch.
        position: u64,
        /// What was cut.
        error: DecodeError,
    },
    /// At the batch at `position`, which is whole but refused: bad magic,
    /// a length out of bounds, a CRC mismatch, or offsets out of order
    /// ([`DecodeError::BatchOutOfOrder`]).
    Invalid {
        /// File position of the refused batch.
        position: u64,
        /// What is wrong with it.
        error: DecodeError,
    },
}

impl ScanEnd {
    /// Where the scan stopped short of the input's end: the position of the
    /// torn or invalid batch; `None` for a clean end.
    pub fn position(&self) -> Option<u64> {
        match self {
            ScanEnd::Clean => None,
            ScanEnd::Torn { position, .. } | ScanEnd::Invalid { position, .. } => Some(*position),
        }
    }

    /// What stopped the scan; `None` for a clean end.
    pub fn error(&self) -> Option<&DecodeError> {
        match self {
            ScanEnd::Clean => None,
            ScanEnd::Torn { error, .. } | ScanEnd::Invalid { error, .. } => Some(error),
        }
    }
}

/// An iterator over the record batches laid end to end in a byte slice,
/// yielding [`ScannedBatch`]es until the input ends or a batch is refused
/// (see the module docs). Cheap: headers are parsed, records are not.
///
/// # Examples
/// ```
/// use kafkalite::record::{BatchScan, OffsetOrder, ScanEnd};
/// use kafkalite::{BatchBuilder, Compression, Record};
///
/// let mut log = Vec::new();
/// for base in [0, 1] {
///     let mut b = BatchBuilder::new(Compression::None).base_offset(base);
///     b.push(&Record::new("v"));
///     log.extend_from_slice(&b.build());
/// }
/// let mut scan = BatchScan::new(&log, 0).offsets(OffsetOrder::Contiguous, 0);
/// let positions: Vec<u64> = scan.by_ref().map(|b| b.position).collect();
/// assert_eq!(positions.len(), 2);
/// assert_eq!(scan.end(), Some(&ScanEnd::Clean));
/// assert_eq!((scan.end_position(), scan.next_offset()), (log.len() as u64, 2));
/// ```
#[derive(Debug)]
pub struct BatchScan<'a> {
    data: &'a [u8],
    start_position: u64,
    /// Bytes of `data` accepted so far.
    pos: usize,
    next_offset: i64,
    verify_crc: bool,
    order: OffsetOrder,
    end: Option<ScanEnd>,
}

impl<'a> BatchScan<'a> {
    /// A scan of `data`, whose first byte is at `start_position` in its
    /// file. It checks every batch's CRC-32C and no offsets until told
    /// otherwise.
    pub fn new(data: &'a [u8], start_position: u64) -> Self {
        BatchScan {
            data,
            start_position,
            pos: 0,
            next_offset: 0,
            verify_crc: true,
            order: OffsetOrder::Any,
            end: None,
        }
    }

    /// Whether to check each batch's CRC-32C (off: header and length only,
    /// for bytes already verified). Default: on.
    #[must_use]
    pub fn verify_crc(mut self, verify: bool) -> Self {
        self.verify_crc = verify;
        self
    }

    /// Checks offsets by `order`, the first batch against `next_offset`
    /// (for a segment's first batch, its base offset). Default:
    /// [`OffsetOrder::Any`], and the next offset starts at 0.
    #[must_use]
    pub fn offsets(mut self, order: OffsetOrder, next_offset: i64) -> Self {
        self.order = order;
        self.next_offset = next_offset;
        self
    }

    /// How the input ended, once the iterator has returned `None`; `None`
    /// before.
    pub fn end(&self) -> Option<&ScanEnd> {
        self.end.as_ref()
    }

    /// The file position after the last accepted batch (the start position
    /// before any): where valid data ends once the scan has ended.
    pub fn end_position(&self) -> u64 {
        self.start_position + self.pos as u64
    }

    /// The offset after the last accepted batch (the first offset given to
    /// [`offsets`](Self::offsets) before any).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// Whether `h`'s offsets may come next under the scan's order.
    fn in_order(&self, h: &BatchHeader) -> bool {
        match self.order {
            OffsetOrder::Any => true,
            OffsetOrder::Increasing => h.follows(self.next_offset),
            OffsetOrder::Contiguous => {
                h.follows(self.next_offset) && h.base_offset == self.next_offset
            }
        }
    }

    /// The header and bytes of the whole batch at the start of `rest`.
    fn check(&self, rest: &'a [u8]) -> Result<(BatchHeader, &'a [u8]), DecodeError> {
        let header = if self.verify_crc {
            RecordBatch::check(rest)?
        } else {
            BatchHeader::parse(rest)?
        };
        let bytes = rest.get(..header.size()).ok_or(DecodeError::Truncated {
            what: "batch",
            needed: header.size(),
            available: rest.len(),
        })?;
        Ok((header, bytes))
    }

    /// Ends the scan at the current position.
    fn stop(&mut self, end: ScanEnd) -> Option<ScannedBatch<'a>> {
        self.end = Some(end);
        None
    }
}

impl<'a> Iterator for BatchScan<'a> {
    type Item = ScannedBatch<'a>;

    fn next(&mut self) -> Option<ScannedBatch<'a>> {
        if self.end.is_some() {
            return None;
        }
        let position = self.end_position();
        let data: &'a [u8] = self.data;
        let Some(rest) = data.get(self.pos..).filter(|r| !r.is_empty()) else {
            return self.stop(ScanEnd::Clean);
        };
        let (header, bytes) = match self.check(rest) {
            Ok(found) => found,
            Err(error @ DecodeError::Truncated { .. }) => {
                return self.stop(ScanEnd::Torn { position, error })
            }
            Err(error) => return self.stop(ScanEnd::Invalid { position, error }),
        };
        if !self.in_order(&header) {
            let error = DecodeError::BatchOutOfOrder {
                base_offset: header.base_offset,
                last_offset: header.last_offset(),
                previous: self.next_offset.saturating_sub(1),
            };
            return self.stop(ScanEnd::Invalid { position, error });
        }
        self.pos += bytes.len();
        self.next_offset = header.next_offset();
        Some(ScannedBatch {
            position,
            header,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, Compression, Record};

    fn batch(base: i64, records: usize) -> Vec<u8> {
        let mut b = BatchBuilder::new(Compression::None).base_offset(base);
        for _ in 0..records {
            b.push(&Record::new("value"));
        }
        b.build().to_vec()
    }

    fn log(bases: &[(i64, usize)]) -> Vec<u8> {
        bases.iter().flat_map(|&(b, n)| batch(b, n)).collect()
    }

    #[test]
    fn a_clean_log_yields_every_batch_with_its_file_position() {
        let data = log(&[(10, 2), (12, 3), (15, 1)]);
        let mut scan = BatchScan::new(&data, 1000).offsets(OffsetOrder::Contiguous, 10);
        let found: Vec<(u64, i64, usize)> = scan
            .by_ref()
            .map(|b| (b.position, b.header.base_offset, b.size()))
            .collect();
        let first = batch(10, 2).len() as u64;
        let second = batch(12, 3).len() as u64;
        assert_eq!(found.len(), 3);
        assert_eq!(
            found.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![1000, 1000 + first, 1000 + first + second]
        );
        assert_eq!(scan.end(), Some(&ScanEnd::Clean));
        assert_eq!(scan.end_position(), 1000 + data.len() as u64);
        assert_eq!(scan.next_offset(), 16);
    }

    #[test]
    fn a_cut_batch_is_a_torn_tail_at_its_position() {
        let full = log(&[(0, 2), (2, 2)]);
        let first = batch(0, 2).len();
        for cut in [first + 1, first + 20, full.len() - 1] {
            let mut scan = BatchScan::new(&full[..cut], 0);
            assert_eq!(scan.by_ref().count(), 1, "cut at {cut}");
            assert!(
                matches!(scan.end(), Some(ScanEnd::Torn { position, error: DecodeError::Truncated { .. } }) if *position == first as u64),
                "cut at {cut}: {:?}",
                scan.end()
            );
            assert_eq!(scan.end_position(), first as u64);
        }
    }

    #[test]
    fn a_damaged_batch_is_invalid_unless_the_crc_is_not_checked() {
        let mut data = log(&[(0, 2), (2, 2)]);
        let second = batch(0, 2).len();
        let last = data.len() - 1;
        data[last] ^= 0xff;
        let mut scan = BatchScan::new(&data, 0);
        assert_eq!(scan.by_ref().count(), 1);
        assert!(matches!(
            scan.end(),
            Some(ScanEnd::Invalid { position, error: DecodeError::ChecksumMismatch { .. } })
                if *position == second as u64
        ));
        let mut scan = BatchScan::new(&data, 0).verify_crc(false);
        assert_eq!(scan.by_ref().count(), 2);
        assert_eq!(scan.end(), Some(&ScanEnd::Clean));
    }

    #[test]
    fn offsets_out_of_order_stop_the_scan_by_the_order_asked_for() {
        // A gap (as compaction leaves) and then a batch going backwards.
        let data = log(&[(5, 1), (8, 2), (9, 1)]);
        let count = |order| {
            let mut scan = BatchScan::new(&data, 0).offsets(order, 5);
            let n = scan.by_ref().count();
            (n, scan.end().cloned())
        };
        assert_eq!(count(OffsetOrder::Any), (3, Some(ScanEnd::Clean)));
        let (n, end) = count(OffsetOrder::Increasing);
        assert_eq!(n, 2);
        assert!(matches!(
            end,
            Some(ScanEnd::Invalid {
                error: DecodeError::BatchOutOfOrder {
                    base_offset: 9,
                    last_offset: 9,
                    previous: 9
                },
                ..
            })
        ));
        let (n, end) = count(OffsetOrder::Contiguous);
        assert_eq!(n, 1);
        assert!(matches!(
            end,
            Some(ScanEnd::Invalid {
                error: DecodeError::BatchOutOfOrder { previous: 5, .. },
                ..
            })
        ));
        // The first batch is checked against the first offset given.
        let mut scan = BatchScan::new(&data, 0).offsets(OffsetOrder::Increasing, 6);
        assert!(scan.next().is_none());
        assert_eq!(scan.end_position(), 0);
    }

    #[test]
    fn an_empty_input_ends_clean_and_the_end_is_unknown_before() {
        let mut scan = BatchScan::new(&[], 7);
        assert_eq!(scan.end(), None);
        assert!(scan.next().is_none());
        assert_eq!(scan.end(), Some(&ScanEnd::Clean));
        assert_eq!(scan.end().and_then(ScanEnd::position), None);
        assert!(scan.next().is_none(), "stays ended");
    }
}
