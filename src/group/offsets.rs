//! The offset store: committed offsets per (group, topic, partition), kept
//! in an internal partition log in Kafka's `__consumer_offsets` record
//! format, so a commit is one small append and a restart replays the log.
//!
//! Key (version 1): int16 1, group str16, topic str16, partition i32.
//! Value (version 3): int16 3, offset i64, leader epoch i32, metadata str16,
//! commit timestamp i64. A null value (tombstone) deletes the offset.

use super::{validate_group_id, validate_offset_metadata, TopicPartition};
use crate::config::StoreOptions;
use crate::error::{Corruption, Error, Result};
use crate::log::{Durability, PartitionLog};
use crate::record::DecodeError;
use crate::record::{Compression, Record};
use crate::topic::validate_topic_name;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The directory of the internal log, Kafka's name with one partition.
pub(crate) const OFFSETS_DIR: &str = "__consumer_offsets-0";

/// A committed offset: the next offset the group will read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OffsetAndMetadata {
    /// The next offset to read (last processed + 1).
    pub offset: i64,
    /// Free-form metadata given with the commit.
    pub metadata: String,
    /// When the commit happened (ms since the epoch).
    pub commit_timestamp: i64,
}

impl OffsetAndMetadata {
    /// An offset with no metadata, stamped now.
    pub fn new(offset: i64) -> Self {
        OffsetAndMetadata {
            offset,
            metadata: String::new(),
            commit_timestamp: now_ms(),
        }
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

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

pub(crate) fn encode_key(group: &str, tp: &TopicPartition) -> Result<Bytes> {
    let mut b = BytesMut::with_capacity(8 + group.len() + tp.topic.len());
    b.put_i16(1);
    put_str16(&mut b, group, "offset key group")?;
    put_str16(&mut b, &tp.topic, "offset key topic")?;
    b.put_i32(tp.partition as i32);
    Ok(b.freeze())
}

pub(crate) fn encode_value(o: &OffsetAndMetadata) -> Result<Bytes> {
    let mut b = BytesMut::with_capacity(24 + o.metadata.len());
    b.put_i16(3);
    b.put_i64(o.offset);
    b.put_i32(-1);
    put_str16(&mut b, &o.metadata, "offset value metadata")?;
    b.put_i64(o.commit_timestamp);
    Ok(b.freeze())
}

fn decode_key(mut b: Bytes) -> Result<Option<(String, TopicPartition)>> {
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

fn decode_value(mut b: Bytes) -> Result<OffsetAndMetadata> {
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

type GroupOffsets = BTreeMap<TopicPartition, OffsetAndMetadata>;

/// The committed offsets in memory. Concurrent commits append in one order
/// and may reach the cache in another, so each key remembers the log offset
/// of the record it holds, and only a later record replaces it: the cache
/// always holds what a replay of the log (a reopen) yields.
#[derive(Default)]
struct Cache {
    groups: HashMap<String, GroupOffsets>,
    /// Log offset of the last record applied per key (tombstones included).
    applied: HashMap<(String, TopicPartition), i64>,
}

impl Cache {
    /// Applies the record at `at` for `(group, tp)`: a commit, or a
    /// tombstone (`None`); an older record than the one applied is ignored.
    fn apply(
        &mut self,
        group: &str,
        tp: &TopicPartition,
        value: Option<OffsetAndMetadata>,
        at: i64,
    ) {
        let last = self
            .applied
            .entry((group.to_owned(), tp.clone()))
            .or_insert(i64::MIN);
        if *last >= at {
            return;
        }
        *last = at;
        match value {
            Some(v) => {
                self.groups
                    .entry(group.to_owned())
                    .or_default()
                    .insert(tp.clone(), v);
            }
            None => {
                if let Some(g) = self.groups.get_mut(group) {
                    g.remove(tp);
                    if g.is_empty() {
                        self.groups.remove(group);
                    }
                }
            }
        }
    }
}

/// Committed offsets, durable in an internal log and cached in memory.
pub(crate) struct OffsetStore {
    log: PartitionLog,
    /// The offset the cache has replayed the log up to.
    replayed_to: Mutex<i64>,
    cache: RwLock<Cache>,
}

impl OffsetStore {
    /// Opens the internal log under `root` and replays it.
    pub(crate) fn open(
        root: &Path,
        options: &StoreOptions,
        read_only: bool,
    ) -> Result<OffsetStore> {
        let mut config = options.log_defaults();
        // Smaller than Kafka's 100 MiB so compaction keeps it small.
        config.settings.segment_bytes = 16 << 20;
        config.settings.segment_index_bytes = 256 << 10;
        let log = if read_only {
            PartitionLog::open_read_only(root.join(OFFSETS_DIR), config)?
        } else {
            PartitionLog::open(root.join(OFFSETS_DIR), config)?
        };
        let store = OffsetStore {
            replayed_to: Mutex::new(log.log_start_offset()),
            log,
            cache: RwLock::new(Cache::default()),
        };
        store.replay()?;
        Ok(store)
    }

    /// Applies the commits appended since the last replay to the cache (all
    /// of them at open; a read-only store catches up with the writer).
    fn replay(&self) -> Result<()> {
        let mut at = self.replayed_to.lock();
        let mut cache = self.cache.write();
        loop {
            let read = self.log.read(*at, 1 << 20)?;
            if read.is_empty() {
                break;
            }
            for r in read.records() {
                let r = r?;
                // A record the offset store cannot have written is damage
                // of its log: name the log and the record's offset.
                let damaged = |e| {
                    Error::corrupt(
                        self.log.dir(),
                        r.offset as u64,
                        Corruption::Invalid(Box::new(e)),
                    )
                };
                let Some(key) = r.key else { continue };
                let Some((group, tp)) = decode_key(key).map_err(damaged)? else {
                    continue;
                };
                let value = r.value.map(decode_value).transpose().map_err(damaged)?;
                cache.apply(&group, &tp, value, r.offset);
            }
            *at = read.next_offset();
        }
        Ok(())
    }

    /// Read-only stores: catch up with commits made by the writing process.
    fn refresh(&self) {
        if self.log.is_read_only() {
            // A failed catch-up leaves the last snapshot in place.
            let _ = self.replay();
        }
    }

    /// Commits offsets for `group`: one append; durable on return with
    /// `Durability::Fsync`.
    pub(crate) fn commit(
        &self,
        group: &str,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
        durability: Durability,
    ) -> Result<()> {
        validate_group_id(group)?;
        if offsets.is_empty() {
            return Ok(());
        }
        let records: Vec<Record> = offsets
            .iter()
            .map(|(tp, o)| {
                validate_topic_name(&tp.topic)?;
                validate_offset_metadata(&o.metadata)?;
                Ok(Record {
                    timestamp: o.commit_timestamp,
                    key: Some(encode_key(group, tp)?),
                    value: Some(encode_value(o)?),
                    headers: Vec::new(),
                })
            })
            .collect::<Result<_>>()?;
        let info = self
            .log
            .append_records(&records, Compression::None, durability)?;
        let mut cache = self.cache.write();
        for ((tp, o), at) in offsets.iter().zip(info.base_offset..) {
            cache.apply(group, tp, Some(o.clone()), at);
        }
        Ok(())
    }

    /// Deletes every committed offset of `group` (tombstones), or only those
    /// of `topic`.
    pub(crate) fn delete(&self, group: &str, topic: Option<&str>) -> Result<usize> {
        let tps: Vec<TopicPartition> = self
            .cache
            .read()
            .groups
            .get(group)
            .map(|g| {
                g.keys()
                    .filter(|tp| topic.is_none_or(|t| &*tp.topic == t))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if tps.is_empty() {
            return Ok(0);
        }
        let records: Vec<Record> = tps
            .iter()
            .map(|tp| {
                Ok(Record {
                    timestamp: now_ms(),
                    key: Some(encode_key(group, tp)?),
                    value: None,
                    headers: Vec::new(),
                })
            })
            .collect::<Result<_>>()?;
        let info = self
            .log
            .append_records(&records, Compression::None, Durability::Fsync)?;
        let mut cache = self.cache.write();
        for (tp, at) in tps.iter().zip(info.base_offset..) {
            cache.apply(group, tp, None, at);
        }
        Ok(tps.len())
    }

    /// Deletes every group's committed offsets on `topic` (Kafka drops a
    /// deleted topic's offsets). Returns how many were deleted.
    pub(crate) fn delete_topic(&self, topic: &str) -> Result<usize> {
        let groups: Vec<String> = self
            .cache
            .read()
            .groups
            .iter()
            .filter(|(_, g)| g.keys().any(|tp| &*tp.topic == topic))
            .map(|(group, _)| group.clone())
            .collect();
        let mut deleted = 0;
        for group in groups {
            deleted += self.delete(&group, Some(topic))?;
        }
        Ok(deleted)
    }

    pub(crate) fn get(&self, group: &str, tp: &TopicPartition) -> Option<OffsetAndMetadata> {
        self.refresh();
        self.cache
            .read()
            .groups
            .get(group)
            .and_then(|g| g.get(tp).cloned())
    }

    pub(crate) fn group_offsets(&self, group: &str) -> GroupOffsets {
        self.refresh();
        self.cache
            .read()
            .groups
            .get(group)
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn groups(&self) -> Vec<String> {
        self.refresh();
        self.cache.read().groups.keys().cloned().collect()
    }

    pub(crate) fn log(&self) -> &PartitionLog {
        &self.log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_value_use_kafkas_layout() {
        let k = encode_key("g", &TopicPartition::new("t", 5)).unwrap();
        assert_eq!(&k[..], &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 5]);
        let v = encode_value(&OffsetAndMetadata {
            offset: 42,
            metadata: "m".into(),
            commit_timestamp: 7,
        })
        .unwrap();
        assert_eq!(
            &v[..],
            &[
                0, 3, 0, 0, 0, 0, 0, 0, 0, 42, 0xff, 0xff, 0xff, 0xff, 0, 1, b'm', 0, 0, 0, 0, 0,
                0, 0, 7
            ]
        );
        assert_eq!(
            decode_key(k).unwrap(),
            Some(("g".to_owned(), TopicPartition::new("t", 5)))
        );
        assert_eq!(decode_value(v).unwrap().offset, 42);
    }

    #[test]
    fn truncated_records_are_errors_not_panics() {
        let k = encode_key("group", &TopicPartition::new("topic", 1)).unwrap();
        for n in 0..k.len() {
            assert!(decode_key(k.slice(..n)).is_err(), "{n}");
        }
        let v = encode_value(&OffsetAndMetadata::new(9)).unwrap();
        for n in 0..v.len() {
            assert!(decode_value(v.slice(..n)).is_err(), "{n}");
        }
    }

    /// Issue 17, finding 10: two committers of one group and partition; the
    /// cache must hold what a reopen replays (the last commit in the log).
    #[test]
    fn concurrent_commits_to_one_partition_leave_the_offset_a_reopen_reads() {
        let tp = TopicPartition::new("t", 0);
        let mut mismatches = Vec::new();
        for round in 0..20 {
            let d = tempfile::tempdir().unwrap();
            let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
            std::thread::scope(|scope| {
                for t in 0..2i64 {
                    let (s, tp) = (&s, &tp);
                    scope.spawn(move || {
                        for i in 0..300 {
                            s.commit(
                                "g",
                                &[(tp.clone(), OffsetAndMetadata::new(2 * i + t))],
                                // Both committers wake from one shared fsync:
                                // the race for the cache is at its widest.
                                Durability::Fsync,
                            )
                            .unwrap();
                        }
                    });
                }
            });
            let in_memory = s.get("g", &tp).unwrap().offset;
            s.log().close().unwrap();
            drop(s);
            let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
            let reopened = s.get("g", &tp).unwrap().offset;
            if in_memory != reopened {
                mismatches.push((round, in_memory, reopened));
            }
        }
        assert!(
            mismatches.is_empty(),
            "(round, cache, reopen): {mismatches:?}"
        );
    }

    #[test]
    fn commits_and_deletes_survive_reopen() {
        let d = tempfile::tempdir().unwrap();
        let tp = |p| TopicPartition::new("t", p);
        {
            let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
            s.commit(
                "g1",
                &[
                    (tp(0), OffsetAndMetadata::new(10)),
                    (tp(1), OffsetAndMetadata::new(20)),
                ],
                Durability::Fsync,
            )
            .unwrap();
            s.commit(
                "g1",
                &[(tp(0), OffsetAndMetadata::new(11))],
                Durability::Fsync,
            )
            .unwrap();
            s.commit(
                "g2",
                &[(tp(0), OffsetAndMetadata::new(99))],
                Durability::Fsync,
            )
            .unwrap();
            assert_eq!(s.delete("g2", None).unwrap(), 1);
        }
        let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
        assert_eq!(s.get("g1", &tp(0)).unwrap().offset, 11);
        assert_eq!(s.get("g1", &tp(1)).unwrap().offset, 20);
        assert_eq!(s.get("g2", &tp(0)), None);
        assert_eq!(s.groups(), vec!["g1".to_owned()]);
    }
}
