//! [`RecordView`], a record borrowed from its batch, and [`RecordSpans`],
//! the same record as spans of the batch's bytes, as [`Records`] returns
//! them.

use super::varint::Reader;
#[cfg(doc)]
use super::Records;
use super::{Header, LogRecord};
use bytes::Bytes;

/// A range of a batch's records bytes in two `u32`s; a `len` of
/// [`Span::NULL`] is a null key or value. A batch's records bytes are
/// fewer than 2^31 (a batch's length is an `i32`, and decompressing stops
/// at [`MAX_DECOMPRESSED_SIZE`](super::MAX_DECOMPRESSED_SIZE)), so every
/// range of them fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) len: u32,
}

impl Span {
    /// The `len` of a null key or value.
    pub(crate) const NULL: u32 = u32::MAX;

    /// A null key or value.
    pub(crate) const NONE: Span = Span {
        start: 0,
        len: Span::NULL,
    };

    /// The span of `r` (`None`: null).
    #[inline(always)]
    pub(crate) fn of(r: Option<std::ops::Range<usize>>) -> Span {
        match r {
            // In range: records bytes are fewer than 2^31 (above).
            Some(r) => Span {
                start: r.start as u32,
                len: (r.end - r.start) as u32,
            },
            None => Span::NONE,
        }
    }

    /// The range of the bytes the span covers; `None` for a null one.
    #[inline(always)]
    pub(crate) fn range(self) -> Option<std::ops::Range<usize>> {
        if self.len == Span::NULL {
            return None;
        }
        let start = self.start as usize;
        Some(start..start + self.len as usize)
    }

    /// The bytes of `data` the span covers; `None` for a null one.
    #[inline(always)]
    pub(crate) fn get(self, data: &[u8]) -> Option<&[u8]> {
        let r = self.range()?;
        // Always inside `data`: the span came from a parse of it.
        debug_assert!(r.end <= data.len());
        Some(data.get(r).unwrap_or_default())
    }
}

/// One record as spans of its batch's records bytes ([`Records::data`]).
pub(crate) struct RecordSpans {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) key: Span,
    pub(crate) value: Span,
    /// The headers' bytes (after their count).
    pub(crate) headers: Span,
    pub(crate) header_count: i32,
}

impl RecordSpans {
    /// The record borrowed from `data`, the bytes the spans index.
    #[inline(always)]
    pub(crate) fn view(self, data: &[u8]) -> RecordView<'_> {
        RecordView {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.get(data),
            value: self.value.get(data),
            headers: self.headers.get(data).unwrap_or_default(),
            header_count: self.header_count,
        }
    }
}

/// A record borrowed from its batch, as [`Records::next_view`] returns it:
/// the key, value and headers are slices of the batch's (decompressed)
/// bytes, so reading one allocates nothing and counts no references. Its
/// fields were checked exactly as [`Records::next`] checks them.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// The record's offset in its partition.
    pub offset: i64,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
    headers: &'a [u8],
    header_count: i32,
}

impl<'a> RecordView<'a> {
    /// A view of parts checked by [`Records::next_spans`]: `headers` are the
    /// headers' bytes after their count, `header_count` that count.
    pub(crate) fn from_parts(
        offset: i64,
        timestamp: i64,
        key: Option<&'a [u8]>,
        value: Option<&'a [u8]>,
        headers: &'a [u8],
        header_count: i32,
    ) -> Self {
        RecordView {
            offset,
            timestamp,
            key,
            value,
            headers,
            header_count,
        }
    }

    /// The headers, in order: key (UTF-8) and value (`None` is null).
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let buf = self.headers;
        let mut r = Reader::new(buf);
        let bytes = move |r: &mut Reader<'a>| -> Option<Option<&'a [u8]>> {
            let n = r.varint("header").ok()?;
            if n < 0 {
                return Some(None);
            }
            let range = r.take(n as usize, "header").ok()?;
            Some(Some(buf.get(range)?))
        };
        (0..self.header_count).map_while(move |_| {
            let key = bytes(&mut r)??;
            let value = bytes(&mut r)?;
            Some((std::str::from_utf8(key).ok()?, value))
        })
    }

    /// How many headers the record has.
    pub fn header_count(&self) -> usize {
        self.header_count.max(0) as usize
    }

    /// An owned copy, as [`Records::next`] would have returned it.
    pub fn to_log_record(&self) -> LogRecord {
        LogRecord {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(Bytes::copy_from_slice),
            value: self.value.map(Bytes::copy_from_slice),
            headers: self
                .headers()
                .map(|(k, v)| Header {
                    key: k.to_owned(),
                    value: v.map(Bytes::copy_from_slice),
                })
                .collect(),
        }
    }
}
