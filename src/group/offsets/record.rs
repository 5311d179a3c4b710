//! The offset records, in Kafka's `__consumer_offsets` layout.
//!
//! Key (version 1): int16 1, group str16, topic str16, partition i32.
//! Value (version 3): int16 3, offset i64, leader epoch i32, metadata str16,
//! commit timestamp i64. A null value (tombstone) deletes the offset.

use super::OffsetAndMetadata;
use crate::error::{Error, Result};
use crate::group::{validate_group_id, validate_offset_metadata, TopicPartition};
use crate::record::DecodeError;
use crate::topic::validate_topic_name;
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Writes a Kafka `STRING` (int16 length, bytes); a longer string is an
/// error, never cut (callers validate first, so this is a last guard).
fn put_str16(b: &mut BytesMut, s: &str, what: &'static str) -> Result<()> {
    let len = i16::try_from(s.len()).map_err(|_| {
        Error::Decode(DecodeError::LengthOutOfBounds {
            what,
            length: i64::try_from(s.len()).unwrap_or(i64::MAX),
            min: 0,
            max: i16::MAX.into(),
        })
    })?;
    b.put_i16(len);
    b.put_slice(s.as_bytes());
    Ok(())
}

fn get_str16(b: &mut Bytes, what: &'static str) -> Result<String> {
    if b.remaining() < 2 {
        return Err(Error::Decode(DecodeError::Truncated {
            what,
            needed: 2,
            available: b.remaining(),
        }));
    }
    let n = b.get_i16();
    if n < 0 || n as usize > b.remaining() {
        return Err(Error::Decode(DecodeError::LengthOutOfBounds {
            what,
            length: n.into(),
            min: 0,
            max: b.remaining() as i64,
        }));
    }
    let s = b.split_to(n as usize);
    String::from_utf8(s.to_vec()).map_err(|_| Error::InvalidField {
        what,
        value: i64::from(n),
    })
}

fn need(b: &Bytes, n: usize, what: &'static str) -> Result<()> {
    if b.remaining() < n {
        return Err(Error::Decode(DecodeError::Truncated {
            what,
            needed: n,
            available: b.remaining(),
        }));
    }
    Ok(())
}

pub(super) fn encode_key(group: &str, tp: &TopicPartition) -> Result<Bytes> {
    let mut b = BytesMut::with_capacity(8 + group.len() + tp.topic.len());
    b.put_i16(1);
    put_str16(&mut b, group, "offset key group")?;
    put_str16(&mut b, &tp.topic, "offset key topic")?;
    b.put_i32(tp.partition as i32);
    Ok(b.freeze())
}

pub(super) fn encode_value(o: &OffsetAndMetadata) -> Result<Bytes> {
    let mut b = BytesMut::with_capacity(24 + o.metadata.len());
    b.put_i16(3);
    b.put_i64(o.offset);
    b.put_i32(-1);
    put_str16(&mut b, &o.metadata, "offset value metadata")?;
    b.put_i64(o.commit_timestamp);
    Ok(b.freeze())
}

pub(super) fn decode_key(mut b: Bytes) -> Result<Option<(String, TopicPartition)>> {
    need(&b, 2, "offset key version")?;
    let version = b.get_i16();
    if version > 1 {
        // Group metadata records (version 2) are not offsets.
        return Ok(None);
    }
    let group = get_str16(&mut b, "offset key group")?;
    validate_group_id(&group)?;
    let topic = get_str16(&mut b, "offset key topic")?;
    validate_topic_name(&topic)?;
    need(&b, 4, "offset key partition")?;
    let partition = b.get_i32();
    let partition = u32::try_from(partition).map_err(|_| Error::InvalidField {
        what: "offset key partition",
        value: partition.into(),
    })?;
    Ok(Some((
        group,
        TopicPartition::new(topic.as_str(), partition),
    )))
}

pub(super) fn decode_value(mut b: Bytes) -> Result<OffsetAndMetadata> {
    need(&b, 10, "offset value")?;
    let version = b.get_i16();
    let offset = b.get_i64();
    if version >= 3 {
        need(&b, 4, "offset value leader epoch")?;
        b.get_i32();
    }
    let metadata = get_str16(&mut b, "offset value metadata")?;
    validate_offset_metadata(&metadata)?;
    need(&b, 8, "offset value commit timestamp")?;
    let commit_timestamp = b.get_i64();
    Ok(OffsetAndMetadata {
        offset,
        metadata,
        commit_timestamp,
    })
}
