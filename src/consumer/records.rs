//! [`ConsumerRecords`], what one [`poll`](super::Consumer::poll) returns:
//! the records decoded once, as positions in the fetched batches' bytes,
//! so reading them borrows ([`ConsumerRecordRef`]) and only a caller that
//! wants owned records ([`ConsumerRecord`], by `into_iter`) pays for them.

use super::ConsumerRecord;
use crate::group::TopicPartition;
use crate::record::{DecodeError, Header, RecordSpans, RecordView, Span};
use bytes::Bytes;
use std::sync::Arc;

/// The records of one poll (Kafka's `ConsumerRecords`): in offset order per
/// partition, partitions one after another.
///
/// Borrow them with [`iter`](Self::iter) (or `for r in &records`): each
/// [`ConsumerRecordRef`] points into the fetched batches, with no copy,
/// allocation or reference count per record. Take them owned with
/// `into_iter` (or `for r in records`), which yields [`ConsumerRecord`]s
/// sharing those batches' bytes.
///
/// ```
/// use kafkalite::*;
/// use std::time::Duration;
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), StoreOptions::default())?;
/// store.create_topic("jobs", 1, TopicConfig::default())?;
/// store.append("jobs", 0, &[Record::new("a"), Record::new("b")], Durability::Written)?;
/// let mut consumer = Consumer::new(&store, ConsumerConfig::default())?;
/// let tp = TopicPartition::new("jobs", 0);
/// consumer.assign(std::slice::from_ref(&tp))?;
/// consumer.seek(&tp, 0)?;
/// let records = consumer.poll(Duration::from_secs(1))?;
/// assert_eq!(records.len(), 2);
/// let values: Vec<&[u8]> = records.iter().filter_map(|r| r.value).collect();
/// assert_eq!(values, [&b"a"[..], &b"b"[..]]);
/// let owned: Vec<ConsumerRecord> = records.into_iter().collect();
/// assert_eq!(owned[1].offset, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct ConsumerRecords {
    /// The records bytes of each batch the records come from.
    bufs: Vec<Bytes>,
    /// Runs of one partition's records, in order.
    parts: Vec<Part>,
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Part {
    topic: Arc<str>,
    partition: u32,
    /// This run's entries.
    start: usize,
    end: usize,
}

/// One record: where its parts are in `bufs[buf]` (a [`RecordSpans`]'s
/// fields, with the buffer's index beside the header count: 48 bytes,
/// where a `RecordSpans` and an index would take 56).
#[derive(Clone, Copy)]
struct Entry {
    offset: i64,
    timestamp: i64,
    key: Span,
    value: Span,
    headers: Span,
    header_count: i32,
    buf: u32,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 48);

impl ConsumerRecords {
    /// How many records there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none (the poll timed out).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The records, borrowed, in order.
    pub fn iter(&self) -> ConsumerRecordsIter<'_> {
        ConsumerRecordsIter {
            records: self,
            next: 0,
            part: 0,
        }
    }

    /// The `i`-th record, borrowed.
    pub fn get(&self, i: usize) -> Option<ConsumerRecordRef<'_>> {
        let e = self.entries.get(i)?;
        let part = self.parts.iter().find(|p| i < p.end)?;
        Some(self.view(part, e))
    }

    /// The partitions the records come from, in the order they come.
    pub fn partitions(&self) -> Vec<TopicPartition> {
        let mut out: Vec<TopicPartition> = Vec::new();
        for p in self.parts.iter().filter(|p| p.start < p.end) {
            let tp = TopicPartition::new(Arc::clone(&p.topic), p.partition);
            if !out.contains(&tp) {
                out.push(tp);
            }
        }
        out
    }

    /// The records of one partition, borrowed, in offset order.
    pub fn records<'a>(
        &'a self,
        tp: &'a TopicPartition,
    ) -> impl Iterator<Item = ConsumerRecordRef<'a>> + 'a {
        self.iter()
            .filter(move |r| r.partition == tp.partition && r.topic == &*tp.topic)
    }

    #[inline]
    fn view<'a>(&'a self, part: &'a Part, e: &Entry) -> ConsumerRecordRef<'a> {
        static EMPTY: Bytes = Bytes::new();
        let buf = self.bufs.get(e.buf as usize).unwrap_or(&EMPTY);
        ConsumerRecordRef {
            topic: &part.topic,
            partition: part.partition,
            offset: e.offset,
            timestamp: e.timestamp,
            key: e.key.get(buf),
            value: e.value.get(buf),
            headers: e.headers.get(buf).unwrap_or_default(),
            header_count: e.header_count,
            topic_arc: &part.topic,
            buf,
        }
    }

    /// Starts filling in `tp`'s records: a run of its own, unless the last
    /// run is `tp`'s (one that stayed empty is reused).
    pub(super) fn begin_partition(&mut self, tp: &TopicPartition) {
        if let Some(p) = self.parts.last_mut() {
            if p.partition == tp.partition && p.topic == tp.topic {
                return;
            }
            if p.start == p.end {
                p.topic = Arc::clone(&tp.topic);
                p.partition = tp.partition;
                return;
            }
        }
        let at = self.entries.len();
        self.parts.push(Part {
            topic: Arc::clone(&tp.topic),
            partition: tp.partition,
            start: at,
            end: at,
        });
    }

    /// Adds a batch's records bytes; the index to pass to [`push`](Self::push).
    pub(super) fn add_buf(&mut self, data: &Bytes) -> Result<u32, DecodeError> {
        // Never for a batch (its length field is an i32), but the spans
        // must fit.
        if data.len() >= Span::NULL as usize {
            return Err(DecodeError::LengthOutOfBounds {
                what: "batch records",
                length: data.len() as i64,
                min: 0,
                max: i64::from(Span::NULL - 1),
            });
        }
        self.bufs.push(data.clone());
        Ok((self.bufs.len() - 1) as u32)
    }

    /// Adds a record of `bufs[buf]`; the current partition's run counts it
    /// at the next [`end_run`](Self::end_run).
    #[inline(always)]
    pub(super) fn push(&mut self, buf: u32, s: RecordSpans) {
        self.entries.push(Entry {
            offset: s.offset,
            timestamp: s.timestamp,
            key: s.key,
            value: s.value,
            headers: s.headers,
            header_count: s.header_count,
            buf,
        });
    }

    /// The current partition's run ends after the records pushed so far.
    pub(super) fn end_run(&mut self) {
        if let Some(p) = self.parts.last_mut() {
            p.end = self.entries.len();
        }
    }

    /// Room for `n` records.
    pub(super) fn with_capacity(n: usize) -> Self {
        ConsumerRecords {
            bufs: Vec::new(),
            parts: Vec::new(),
            entries: Vec::with_capacity(n),
        }
    }
}

impl std::fmt::Debug for ConsumerRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A record of a [`ConsumerRecords`], borrowed from the batch it was read
/// from: its key, value and headers are slices of that batch's bytes.
#[derive(Clone, Copy)]
pub struct ConsumerRecordRef<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The partition.
    pub partition: u32,
    /// The record's offset.
    pub offset: i64,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
    headers: &'a [u8],
    header_count: i32,
    topic_arc: &'a Arc<str>,
    buf: &'a Bytes,
}

impl<'a> ConsumerRecordRef<'a> {
    /// The headers, in order: key (UTF-8) and value (`None` is null).
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        RecordView::from_parts(
            self.offset,
            self.timestamp,
            self.key,
            self.value,
            self.headers,
            self.header_count,
        )
        .headers()
    }

    /// How many headers the record has.
    pub fn header_count(&self) -> usize {
        self.header_count.max(0) as usize
    }

    /// The record owned: its key, value and header values share the
    /// batch's bytes (no copy).
    pub fn to_consumer_record(&self) -> ConsumerRecord {
        let buf = self.buf;
        let share = |s: &'a [u8]| {
            if s.is_empty() {
                Bytes::new()
            } else {
                buf.slice_ref(s)
            }
        };
        ConsumerRecord {
            topic: Arc::clone(self.topic_arc),
            partition: self.partition,
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(share),
            value: self.value.map(share),
            headers: self
                .headers()
                .map(|(k, v)| Header {
                    key: k.to_owned(),
                    value: v.map(share),
                })
                .collect(),
        }
    }
}

impl std::fmt::Debug for ConsumerRecordRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerRecordRef")
            .field("topic", &self.topic)
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .field("timestamp", &self.timestamp)
            .field("key", &self.key)
            .field("value", &self.value)
            .field("headers", &self.header_count)
            .finish()
    }
}

/// The borrowing iterator of [`ConsumerRecords::iter`].
#[derive(Clone, Debug)]
pub struct ConsumerRecordsIter<'a> {
    records: &'a ConsumerRecords,
    next: usize,
    part: usize,
}

impl<'a> Iterator for ConsumerRecordsIter<'a> {
    type Item = ConsumerRecordRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<ConsumerRecordRef<'a>> {
        let rs = self.records;
        let e = rs.entries.get(self.next)?;
        let mut part = rs.parts.get(self.part)?;
        while self.next >= part.end {
            self.part += 1;
            part = rs.parts.get(self.part)?;
        }
        self.next += 1;
        Some(rs.view(part, e))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.records.entries.len() - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ConsumerRecordsIter<'_> {}
impl std::iter::FusedIterator for ConsumerRecordsIter<'_> {}

impl<'a> IntoIterator for &'a ConsumerRecords {
    type Item = ConsumerRecordRef<'a>;
    type IntoIter = ConsumerRecordsIter<'a>;

    fn into_iter(self) -> ConsumerRecordsIter<'a> {
        self.iter()
    }
}

/// The owning iterator of [`ConsumerRecords`]: [`ConsumerRecord`]s.
#[derive(Clone, Debug)]
pub struct ConsumerRecordsIntoIter {
    records: ConsumerRecords,
    next: usize,
    part: usize,
}

impl ConsumerRecordsIntoIter {
    /// Each partition's first record not yet handed out, in order.
    pub(super) fn rest_starts(&self) -> Vec<(TopicPartition, i64)> {
        let mut out: Vec<(TopicPartition, i64)> = Vec::new();
        let it = ConsumerRecordsIter {
            records: &self.records,
            next: self.next,
            part: self.part,
        };
        for r in it {
            if !out
                .iter()
                .any(|(tp, _)| tp.partition == r.partition && *tp.topic == *r.topic)
            {
                out.push((
                    TopicPartition::new(Arc::clone(r.topic_arc), r.partition),
                    r.offset,
                ));
            }
        }
        out
    }
}

impl Iterator for ConsumerRecordsIntoIter {
    type Item = ConsumerRecord;

    fn next(&mut self) -> Option<ConsumerRecord> {
        let mut it = ConsumerRecordsIter {
            records: &self.records,
            next: self.next,
            part: self.part,
        };
        let r = it.next()?.to_consumer_record();
        (self.next, self.part) = (it.next, it.part);
        Some(r)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.records.entries.len() - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for ConsumerRecordsIntoIter {}
impl std::iter::FusedIterator for ConsumerRecordsIntoIter {}

impl IntoIterator for ConsumerRecords {
    type Item = ConsumerRecord;
    type IntoIter = ConsumerRecordsIntoIter;

    fn into_iter(self) -> ConsumerRecordsIntoIter {
        ConsumerRecordsIntoIter {
            records: self,
            next: 0,
            part: 0,
        }
    }
}
