//! The append path: records or batches in, offsets assigned, one write,
//! rolls of the active segment, and the checks a batch from outside passes
//! first. Durability waits are the group commit's ([`super::commit`]).

use super::commit::FsyncAppend;
use super::{AppendInfo, PartitionLog, Writer};
use crate::error::{Error, Result};
use crate::log::config::Durability;
use crate::log::files;
use crate::log::segment::{AppendFailure, IndexCursor, Segment};
use crate::record::{
    set_base_offset, BatchBuilder, BatchHeader, Compression, Record, RecordBatch, NO_TIMESTAMP,
};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Rolls write the checkpoint at most this often.
const ROLL_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

impl PartitionLog {
    /// Encodes `records` as one batch and appends it.
    ///
    /// # Errors
    /// As [`PartitionLog::append`].
    pub fn append_records(
        &self,
        records: &[Record],
        compression: Compression,
        durability: Durability,
    ) -> Result<AppendInfo> {
        if records.is_empty() {
            return Err(Error::InvalidBatch {
                reason: "no records",
            });
        }
        // Records without a timestamp get the append time (Kafka's producer
        // stamps "now" at send); copies are made only when some need it.
        let stamped: Vec<Record>;
        let records = if records.iter().any(|r| r.timestamp == NO_TIMESTAMP) {
            let now = crate::log::now_ms();
            stamped = records
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    if r.timestamp == NO_TIMESTAMP {
                        r.timestamp = now;
                    }
                    r
                })
                .collect();
            &stamped[..]
        } else {
            records
        };
        let appending = self.fsync_append(durability);
        // Sized up front: growing a large batch's buffer re-copies it.
        let estimate: usize = records
            .iter()
            .map(|r| {
                let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
                crate::record::estimated_size(len(&r.key), len(&r.value), &r.headers)
            })
            .sum();
        let mut b = BatchBuilder::with_capacity(compression, estimate);
        for r in records {
            b.push(r);
        }
        self.append_built(b, durability, appending)
    }

    /// Appends the batch `batch` builds, assigning its offsets: the fast way
    /// to append records from borrowed parts ([`BatchBuilder::push_parts`]).
    /// The batch is built (records copied once, CRC computed once) and
    /// written; since this crate built it, it is not parsed, CRC-checked or
    /// walked again, as [`append`](Self::append) does with bytes from outside.
    ///
    /// # Errors
    /// [`Error::InvalidBatch`] for an empty builder; otherwise as
    /// [`PartitionLog::append`].
    pub fn append_batch(&self, batch: BatchBuilder, durability: Durability) -> Result<AppendInfo> {
        if batch.is_empty() {
            return Err(Error::InvalidBatch {
                reason: "no records",
            });
        }
        let appending = self.fsync_append(durability);
        self.append_built(batch, durability, appending)
    }

    fn append_built(
        &self,
        batch: BatchBuilder,
        durability: Durability,
        appending: Option<FsyncAppend<'_>>,
    ) -> Result<AppendInfo> {
        let bytes = batch.build();
        let mut buf = bytes.try_into_mut().unwrap_or_else(|b| b.as_ref().into());
        let headers = parse_headers(&buf, self.config.settings.max_message_bytes, false)?;
        self.append_validated(&mut buf, &headers, durability, appending)
    }

    /// Appends one or more whole record batches (concatenated in `batches`),
    /// assigning offsets: the log overwrites each batch's base offset (a field
    /// outside the CRC). Everything is written with one `write`.
    ///
    /// Each batch is checked first: header, CRC, size against
    /// `max.message.bytes`, codec, and every record decodes with offset
    /// deltas 0, 1, 2, …. A refused append changes nothing.
    ///
    /// # Errors
    /// [`Error::RecordTooLarge`], [`Error::InvalidBatch`], decode errors for
    /// a malformed batch; [`Error::Poisoned`] after an earlier fsync failure;
    /// [`Error::DiskFull`] or [`Error::Io`] when the write fails (the file is
    /// cut back and nothing is appended); [`Error::Closed`].
    pub fn append(&self, batches: &mut [u8], durability: Durability) -> Result<AppendInfo> {
        let appending = self.fsync_append(durability);
        let headers = parse_headers(batches, self.config.settings.max_message_bytes, true)?;
        let mut rest: &[u8] = batches;
        for h in &headers {
            let (bytes, after) = rest.split_at_checked(h.size()).ok_or_else(untiled)?;
            rest = after;
            if h.compression()? == Compression::None {
                // In place, building no record.
                crate::record::check_uncompressed_records(bytes, h)?;
            } else {
                // parse_headers checked the CRC: decompress and decode the
                // records without computing it a second time.
                validate_records(&RecordBatch::verified(Bytes::copy_from_slice(bytes))?)?;
            }
        }
        self.append_validated(batches, &headers, durability, appending)
    }

    /// Appends batches the caller has validated (headers parsed, CRC checked),
    /// waiting for the durability asked for.
    pub(crate) fn append_validated(
        &self,
        batches: &mut [u8],
        headers: &[BatchHeader],
        durability: Durability,
        appending: Option<FsyncAppend<'_>>,
    ) -> Result<AppendInfo> {
        let written = self.write_validated(batches, headers, durability);
        drop(appending);
        let (info, sync) = written?;
        if sync {
            self.sync_to(info.last_offset + 1)?;
        }
        Ok(info)
    }

    /// Writes validated batches; returns whether the caller must then
    /// [`sync_to`](Self::sync_to) the end of the append (for `Fsync`, or
    /// because `flush.messages` was reached). Splitting the two lets a caller
    /// release its own locks before waiting for the group commit.
    pub(crate) fn write_validated(
        &self,
        batches: &mut [u8],
        headers: &[BatchHeader],
        durability: Durability,
    ) -> Result<(AppendInfo, bool)> {
        self.write_validated_parts(&mut [batches], headers, durability)
    }

    /// As [`write_validated`](Self::write_validated), for batches held in
    /// several buffers (each of whole batches; `headers` tile their
    /// concatenation), written with one vectored write.
    pub(crate) fn write_validated_parts(
        &self,
        parts: &mut [&mut [u8]],
        headers: &[BatchHeader],
        durability: Durability,
    ) -> Result<(AppendInfo, bool)> {
        self.check_writable()?;
        let started = Instant::now();
        let mut w = self.writer.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        self.check_poisoned()?;
        let base = self.log_end.load(Ordering::Acquire);
        let span: i64 = headers
            .iter()
            .map(|h| i64::from(h.last_offset_delta) + 1)
            .sum();
        let max_ts = headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1);
        // Offsets stamped before anything else changes (the headers tile
        // the parts: parse_headers found them so).
        let mut stamped = Vec::with_capacity(headers.len());
        let mut next = base;
        let mut buffers = parts.iter_mut();
        let mut rest: &mut [u8] = &mut [];
        for h in headers {
            while rest.is_empty() {
                rest = match buffers.next() {
                    Some(b) => &mut **b,
                    None => return Err(untiled()),
                };
            }
            let Some((b, after)) = std::mem::take(&mut rest).split_at_mut_checked(h.size()) else {
                return Err(untiled());
            };
            set_base_offset(b, next);
            rest = after;
            let mut h = *h;
            h.base_offset = next;
            stamped.push(h);
            next += i64::from(h.last_offset_delta) + 1;
        }
        if !rest.is_empty() || buffers.any(|b| !b.is_empty()) {
            return Err(untiled());
        }
        // One buffer (every `append`) needs no list allocated.
        let (one, many): ([&[u8]; 1], Vec<&[u8]>) = match parts {
            [p] => ([&**p], Vec::new()),
            _ => ([&[]], parts.iter().map(|p| &**p).collect()),
        };
        let parts: &[&[u8]] = if many.is_empty() { &one } else { &many };
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let mut active = self.active();
        if self.should_roll(&active, len, max_ts, base + span - 1) {
            active = self.roll(&mut w, base)?;
        }
        // Fsynced now, or by `flush.messages` every so many records.
        let durable =
            durability == Durability::Fsync || self.config.settings.flush_messages.is_some();
        match active.append(parts, &stamped, &mut w.cursor, durable) {
            Ok(()) => {}
            Err(AppendFailure::Clean(e)) => return Err(e),
            Err(AppendFailure::Torn(e)) => {
                self.poison();
                return Err(e);
            }
        }
        self.log_end.store(next, Ordering::Release);
        let flush_now = self.note_written(next, durability);
        drop(w);
        self.append_latency.record(started.elapsed());
        let info = AppendInfo {
            base_offset: base,
            last_offset: next - 1,
            max_timestamp: max_ts,
            batches: headers.len(),
        };
        Ok((info, durability == Durability::Fsync || flush_now))
    }

    fn should_roll(&self, active: &Segment, incoming: u64, max_ts: i64, last_offset: i64) -> bool {
        let size = active.size();
        if size == 0 {
            return false;
        }
        let c = &self.config;
        size + incoming > u64::from(c.settings.segment_bytes)
            || (active.first_batch_timestamp() >= 0
                && max_ts.saturating_sub(active.first_batch_timestamp())
                    > crate::log::millis_i64(c.settings.segment_max_age))
            || active.index_full()
            || last_offset - active.base_offset() > i64::from(i32::MAX)
    }

    /// Seals the active segment (indexes trimmed) and starts a new one at
    /// `base`. The sealed segment is made durable in the background (Kafka
    /// flushes a rolled segment asynchronously too); until then it lies
    /// above the recovery point, so recovery after a crash scans it and cuts
    /// a torn tail there. `Fsync` appends wait for that flush (see
    /// [`sync_to`](Self::sync_to)).
    pub(crate) fn roll(&self, w: &mut Writer, base: i64) -> Result<Arc<Segment>> {
        // A failed roll may have sealed the active segment already.
        self.check_poisoned()?;
        let old = self.active();
        let poisoning = |e: Error| {
            self.poison();
            e
        };
        // Kept open through the roll: not evicted between sealing it and
        // marking it sealed.
        let _hold = old.hold().map_err(poisoning)?;
        let durable_to = self
            .settle_rolled(false, old.base_offset())
            .map_err(poisoning)?;
        let flush = old.seal_deferred().map_err(poisoning)?;
        let seg = match Segment::create(&self.dir, base, &self.config, self.map_capacity()) {
            Ok(seg) => Arc::new(seg),
            Err(e) => {
                // Nothing named by `base` is part of the log yet: remove what
                // the failed create left. Left behind, it would fail every
                // later roll.
                let fs = &*self.config.file_system;
                if files::remove_segment_files(fs, &self.dir, base).is_err() {
                    self.poison();
                }
                return Err(e);
            }
        };
        self.queue_flush(base, flush);
        old.unpin();
        self.segments.write().push(Arc::clone(&seg));
        w.cursor = IndexCursor::default();
        let recovery_point = durable_to.and_then(|to| self.note_synced(to));
        // The recovery point moved: checkpoint it, at most once a second
        // from rolls (Kafka checkpoints it on a timer). A later one only
        // means recovery scans a little more after a crash.
        if let Some(rp) = recovery_point {
            if w.roll_checkpoint_at
                .is_none_or(|t| t.elapsed() >= ROLL_CHECKPOINT_INTERVAL)
            {
                self.checkpoint_with(rp)?;
                w.roll_checkpoint_at = Some(Instant::now());
            }
        }
        crate::event!(
            "rolled segment in {}: new segment at offset {base}, sealed {} bytes",
            self.dir.display(),
            old.size()
        );
        Ok(seg)
    }

    pub(super) fn map_capacity(&self) -> usize {
        self.config.settings.segment_bytes as usize
            + self.config.settings.max_message_bytes as usize
    }
}

/// Parses the headers of the concatenated batches in `buf`, checking sizes,
/// codecs, counts and (when `check_crc`; batches this crate just built are
/// known good) CRCs.
pub(crate) fn parse_headers(
    buf: &[u8],
    max_message_bytes: u32,
    check_crc: bool,
) -> Result<Vec<BatchHeader>> {
    if buf.is_empty() {
        return Err(Error::InvalidBatch {
            reason: "no batches",
        });
    }
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let h = BatchHeader::parse(rest)?;
        let size = h.size();
        if size > max_message_bytes as usize {
            return Err(Error::RecordTooLarge {
                size,
                max: max_message_bytes as usize,
            });
        }
        let Some((bytes, after)) = rest.split_at_checked(size) else {
            return Err(crate::record::DecodeError::Truncated {
                what: "batch",
                needed: size,
                available: rest.len(),
            }
            .into());
        };
        let actual = if check_crc {
            crate::record::compute_crc(bytes)
        } else {
            h.crc
        };
        if actual != h.crc {
            let expected = h.crc;
            return Err(crate::record::DecodeError::ChecksumMismatch { expected, actual }.into());
        }
        h.compression()?;
        if h.records_count < 1
            || h.last_offset_delta < 0
            || h.last_offset_delta != h.records_count - 1
        {
            return Err(Error::InvalidBatch {
                reason: "records count must be positive and equal last offset delta + 1",
            });
        }
        out.push(h);
        rest = after;
    }
    Ok(out)
}

/// Decodes every record of `batch`, checking offset deltas run 0, 1, 2, ….
fn validate_records(batch: &RecordBatch) -> Result<()> {
    for (expected, r) in (batch.base_offset()..).zip(batch.records()?) {
        if r?.offset != expected {
            return Err(Error::InvalidBatch {
                reason: "record offset deltas must run 0, 1, 2, ...",
            });
        }
    }
    Ok(())
}

/// Headers that do not tile their buffer: parse_headers never returns such.
#[cold]
fn untiled() -> Error {
    Error::InvalidBatch {
        reason: "batch lengths do not match the bytes given",
    }
}
