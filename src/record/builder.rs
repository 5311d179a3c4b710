//! Encoding record batches v2 (Kafka's `MemoryRecordsBuilder`).

use super::header::{
    compute_crc, ATTRIBUTES_OFFSET, CONTROL_BIT, CRC_OFFSET, HEADER_SIZE, LOG_OVERHEAD,
    TRANSACTIONAL_BIT,
};
use super::varint::{put_varint, varint_len, varlong_len};
use super::{codec, Compression, ControlRecordType, Header, Record};
use bytes::{BufMut, Bytes};
use fields::Fields;

mod fields;

/// An upper bound on the bytes one record takes in an uncompressed batch:
/// its key, value and headers with every varint at its widest (5 bytes, 10
/// for the timestamp delta) and the attributes byte. Null and empty fields
/// count alike (`key_len`, `value_len` 0).
pub(crate) fn estimated_size(key_len: usize, value_len: usize, headers: &[Header]) -> usize {
    let field = |len: usize| len + 5;
    let headers: usize = headers
        .iter()
        .map(|h| field(h.key.len()) + field(h.value.as_ref().map_or(0, Bytes::len)))
        .sum();
    // Length, attributes, timestamp delta, offset delta, header count.
    5 + 1 + 10 + 5 + field(key_len) + field(value_len) + 5 + headers
}

/// Builds one record batch: push records, then [`build`](BatchBuilder::build).
///
/// Records get offset deltas 0, 1, 2, … in push order; timestamps are stored
/// as deltas from the first record's. Each record is copied once, from the
/// caller's buffers into the batch buffer.
///
/// ```
/// use kafkalite::{BatchBuilder, Compression, Record, RecordBatch};
/// let mut b = BatchBuilder::new(Compression::Lz4);
/// b.push(&Record::new("hello").key("k").timestamp(1_700_000_000_000));
/// let bytes = b.base_offset(42).build();
/// let batch = RecordBatch::decode(&bytes)?;
/// let records = batch.to_records()?;
/// assert_eq!(records[0].offset, 42);
/// assert_eq!(records[0].value.as_deref(), Some(&b"hello"[..]));
/// # Ok::<(), kafkalite::Error>(())
/// ```
#[derive(Debug)]
pub struct BatchBuilder {
    /// Header space followed by the uncompressed records.
    buf: Vec<u8>,
    compression: Compression,
    level: Option<i32>,
    /// Attribute bits beyond the codec: transactional (4), control (5).
    flags: i16,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    count: i32,
    /// Offset delta of the last record pushed (−1 before any).
    last_delta: i32,
    /// Overrides the header's last offset delta (compaction keeps it).
    last_offset_delta: Option<i32>,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchBuilder {
    /// An empty builder for the given codec, base offset 0, no producer id.
    pub fn new(compression: Compression) -> Self {
        Self::with_capacity(compression, 0)
    }

    /// An empty builder whose buffer holds `bytes` of records before growing.
    pub fn with_capacity(compression: Compression, bytes: usize) -> Self {
        Self::with_buffer(compression, Vec::new(), bytes)
    }

    /// As [`with_capacity`](Self::with_capacity), in `buf` (emptied first):
    /// a buffer from an earlier batch, whose room is reused.
    pub(crate) fn with_buffer(compression: Compression, mut buf: Vec<u8>, bytes: usize) -> Self {
        buf.clear();
        buf.reserve(HEADER_SIZE + bytes);
        buf.resize(HEADER_SIZE, 0);
        BatchBuilder {
            buf,
            compression,
            level: None,
            flags: 0,
            base_offset: 0,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            count: 0,
            last_delta: -1,
            last_offset_delta: None,
            base_timestamp: 0,
            max_timestamp: -1,
        }
    }

    /// Sets the base offset written into the header. Default: 0.
    #[must_use]
    pub fn base_offset(mut self, offset: i64) -> Self {
        self.base_offset = offset;
        self
    }

    /// Sets the compression level for codecs that have levels (gzip: 1 to
    /// 9; zstd: −131072 to 22), clamped to the codec's range. Default:
    /// Kafka's (gzip 6, zstd 3). Other codecs ignore it.
    #[must_use]
    pub fn compression_level(mut self, level: i32) -> Self {
        self.level = Some(level);
        self
    }

    /// Marks the batch as part of a transaction (attributes bit 4), as a
    /// Kafka transactional producer writes it. Default: false.
    #[must_use]
    pub fn transactional(mut self, yes: bool) -> Self {
        self.flags = if yes {
            self.flags | TRANSACTIONAL_BIT
        } else {
            self.flags & !TRANSACTIONAL_BIT
        };
        self
    }

    /// A control batch holding one COMMIT or ABORT marker at `offset` for
    /// producer `producer_id` (transactional, control bit set, uncompressed),
    /// as Kafka's transaction coordinator has brokers write it
    /// (`EndTransactionMarker`). Other `kind`s get the same key layout and
    /// an empty value.
    pub fn end_transaction_marker(
        offset: i64,
        producer_id: i64,
        producer_epoch: i16,
        kind: ControlRecordType,
        coordinator_epoch: i32,
        timestamp: i64,
    ) -> Bytes {
        let mut key = [0u8; 4];
        key[2..].copy_from_slice(&kind.id().to_be_bytes());
        let mut value = [0u8; 6];
        value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
        let value: &[u8] = if kind.is_end_transaction() {
            &value
        } else {
            &[]
        };
        let mut b = BatchBuilder::new(Compression::None)
            .base_offset(offset)
            .producer(producer_id, producer_epoch, -1)
            .transactional(true);
        b.flags |= CONTROL_BIT;
        b.push_parts(timestamp, Some(&key), Some(value), &[]);
        b.build()
    }

    /// Sets the partition leader epoch. Default: −1.
    #[must_use]
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets the header's last offset delta, for a batch whose records do not
    /// run up to its end (as compaction leaves them). Default: the last
    /// pushed record's delta.
    #[must_use]
    pub fn last_offset_delta(mut self, delta: i32) -> Self {
        self.last_offset_delta = Some(delta);
        self
    }

    /// Sets the idempotent-producer fields. Default: −1, −1, −1.
    #[must_use]
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = id;
        self.producer_epoch = epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Number of records pushed.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Uncompressed size of the batch so far, header included.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// The encoded size `record` would add to the batch, uncompressed.
    pub fn record_size(&self, record: &Record) -> usize {
        let ts_delta = record
            .timestamp
            .wrapping_sub(self.next_base_timestamp(record.timestamp));
        let body = body_size(
            ts_delta,
            self.last_delta.wrapping_add(1),
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        );
        varint_len(body as i32) + body
    }

    fn next_base_timestamp(&self, ts: i64) -> i64 {
        if self.count == 0 {
            ts
        } else {
            self.base_timestamp
        }
    }

    /// Appends a record with the next offset delta.
    pub fn push(&mut self, record: &Record) {
        self.push_parts(
            record.timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        );
    }

    /// Appends a record from borrowed parts, without building a [`Record`].
    pub fn push_parts(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) {
        self.push_parts_at(
            self.last_delta.wrapping_add(1),
            timestamp,
            key,
            value,
            headers,
        );
    }

    /// Appends a record with an explicit offset delta, which must exceed the
    /// previous record's (offsets may skip, as after compaction).
    pub fn push_parts_at(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) {
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let ts_delta = timestamp.wrapping_sub(self.base_timestamp);
        self.last_delta = offset_delta;
        let body = body_size(ts_delta, offset_delta, key, value, headers);
        let buf = &mut self.buf;
        // Length, attributes, timestamp and offset deltas and the key's
        // length go in one copy; for a keyless record, or one whose key
        // fits the fields' room, the key and the value's length too.
        let mut head = Fields::default();
        head.varint(body as i32);
        head.byte(0);
        head.varlong(ts_delta);
        head.varint(offset_delta);
        head.length_of(key);
        match key {
            None => {
                head.length_of(value);
                head.copy_to(buf, body + 5);
            }
            Some(k) if k.len() <= Fields::KEY_ROOM => {
                head.key(k);
                head.length_of(value);
                head.copy_to(buf, body + 5);
            }
            Some(k) => {
                head.copy_to(buf, body + 5);
                buf.extend_from_slice(k);
                let mut length = Fields::default();
                length.length_of(value);
                length.copy_to(buf, 0);
            }
        }
        if let Some(v) = value {
            buf.extend_from_slice(v);
        }
        if headers.is_empty() {
            buf.push(0);
        } else {
            put_varint(buf, headers.len() as i32);
            for h in headers {
                put_bytes(buf, Some(h.key.as_bytes()));
                put_bytes(buf, h.value.as_deref());
            }
        }
        self.count = self.count.wrapping_add(1);
    }

    /// Encodes the batch (compressing the records if asked) and returns its bytes.
    pub fn build(self) -> Bytes {
        Bytes::from(self.build_reusing(Vec::new()).0)
    }

    /// The room [`build_reusing`](Self::build_reusing) wants in its spare
    /// buffer (none without compression).
    pub(crate) fn spare_room(&self) -> usize {
        match self.compression {
            Compression::None => 0,
            c => compressed_room(c, self.buf.len().saturating_sub(HEADER_SIZE)),
        }
    }

    /// As [`build`](Self::build), compressing into `spare` (emptied first;
    /// unused without compression): returns the batch and the buffer it
    /// left over (the records' buffer after compression, else `spare`),
    /// for another batch.
    pub(crate) fn build_reusing(self, mut spare: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
        // A codec left out of this build (or, in principle, one that fails
        // on in-memory output) stores the records uncompressed: the batch
        // stays exactly readable, and its attributes say what it holds.
        let (mut out, left, compression) = match self.compression {
            Compression::None => (self.buf, spare, Compression::None),
            c => {
                #[expect(
                    clippy::indexing_slicing,
                    reason = "with_buffer starts `buf` with the header's HEADER_SIZE placeholder bytes; pushes only append"
                )]
                let raw = &self.buf[HEADER_SIZE..];
                spare.clear();
                spare.reserve(compressed_room(c, raw.len()));
                spare.resize(HEADER_SIZE, 0);
                match codec::compress_into(c, self.level, raw, &mut spare) {
                    Ok(()) => (spare, self.buf, c),
                    Err(_) => (self.buf, spare, Compression::None),
                }
            }
        };
        let last_offset_delta = self.last_offset_delta.unwrap_or(self.last_delta).max(0);
        let max_timestamp = if self.count == 0 {
            -1
        } else {
            self.max_timestamp
        };
        let mut h = Vec::with_capacity(HEADER_SIZE);
        h.put_i64(self.base_offset);
        h.put_i32((out.len() - LOG_OVERHEAD) as i32);
        h.put_i32(self.partition_leader_epoch);
        h.put_i8(2);
        h.put_u32(0);
        h.put_i16(i16::from(compression.codec()) | self.flags);
        h.put_i32(last_offset_delta);
        h.put_i64(if self.count == 0 {
            -1
        } else {
            self.base_timestamp
        });
        h.put_i64(max_timestamp);
        h.put_i64(self.producer_id);
        h.put_i16(self.producer_epoch);
        h.put_i32(self.base_sequence);
        h.put_i32(self.count);
        if let Some(dst) = out.get_mut(..HEADER_SIZE) {
            dst.copy_from_slice(&h);
        }
        let crc = compute_crc(&out);
        if let Some(dst) = out.get_mut(CRC_OFFSET..ATTRIBUTES_OFFSET) {
            dst.copy_from_slice(&crc.to_be_bytes());
        }
        (out, left)
    }
}

/// The room a batch of `records` bytes of records compressed with `c` is
/// built in to begin with: for lz4 all its compressor can use (it makes
/// that room as it goes, so a smaller buffer would grow), for the others
/// an estimate they grow past if the records compress less.
fn compressed_room(c: Compression, records: usize) -> usize {
    HEADER_SIZE
        + match c {
            Compression::Lz4 => super::lz4::frame_bound(records),
            _ => records / 2 + 64,
        }
}

fn bytes_size(b: Option<&[u8]>) -> usize {
    match b {
        None => 1,
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

fn headers_size(headers: &[Header]) -> usize {
    varint_len(headers.len() as i32)
        + headers
            .iter()
            .map(|h| bytes_size(Some(h.key.as_bytes())) + bytes_size(h.value.as_deref()))
            .sum::<usize>()
}

fn body_size(
    ts_delta: i64,
    offset_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) -> usize {
    1 + varlong_len(ts_delta)
        + varint_len(offset_delta)
        + bytes_size(key)
        + bytes_size(value)
        + headers_size(headers)
}

fn put_bytes(buf: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(buf, -1),
        Some(b) => {
            put_varint(buf, b.len() as i32);
            buf.extend_from_slice(b);
        }
    }
}

/// Overwrites a batch's base offset. The field is outside the CRC, so the
/// batch stays valid (this is how a log assigns offsets on append).
pub(crate) fn set_base_offset(batch: &mut [u8], offset: i64) {
    if let Some(dst) = batch.get_mut(..8) {
        dst.copy_from_slice(&offset.to_be_bytes());
    }
}
