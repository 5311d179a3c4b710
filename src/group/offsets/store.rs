//! The store: committed offsets cached in memory over the internal log,
//! each commit one append, each open a replay.

use super::record::{decode_key, decode_value, encode_key, encode_value};
use super::{now_ms, GroupOffsets, OffsetAndMetadata, OFFSETS_DIR};
use crate::config::StoreOptions;
use crate::error::{Corruption, Error, Result};
use crate::group::{validate_group_id, validate_offset_metadata, TopicPartition};
use crate::log::{Durability, PartitionLog};
use crate::record::{Compression, Record};
use crate::topic::validate_topic_name;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::Path;

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
