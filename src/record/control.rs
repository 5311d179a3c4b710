//! Control records: the single record of a control batch (attributes bit
//! 5), as Kafka's `ControlRecordType` and `EndTransactionMarker` define
//! them.
//!
//! ```text
//! key    version i16 (>= 0) | type i16      0 ABORT, 1 COMMIT, 2 LEADER_CHANGE,
//!                                           3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER,
//!                                           5 KRAFT_VERSION, 6 KRAFT_VOTERS
//! value  for ABORT and COMMIT: version i16 (>= 0) | coordinator epoch i32
//! ```
//!
//! Applications never see these: the log's reads and the consumer skip
//! control batches, and their offsets still count.

use super::error::{DecodeError, Result};
use super::LogRecord;

/// The type of a control record, from its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControlRecordType {
    /// A transaction was aborted: its records are not to be read under
    /// `read_committed`.
    Abort,
    /// A transaction was committed.
    Commit,
    /// A KRaft leader change.
    LeaderChange,
    /// The start of a KRaft snapshot.
    SnapshotHeader,
    /// The end of a KRaft snapshot.
    SnapshotFooter,
    /// A KRaft version record.
    KraftVersion,
    /// A KRaft voters record.
    KraftVoters,
    /// A type this version does not know (Kafka ignores these too).
    Unknown(i16),
}

impl ControlRecordType {
    /// The type for Kafka's type id.
    pub fn from_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KraftVersion,
            6 => ControlRecordType::KraftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// Kafka's type id.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KraftVersion => 5,
            ControlRecordType::KraftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The name `kafka-dump-log.sh` prints (`COMMIT`, `ABORT`, …).
    pub fn name(self) -> &'static str {
        match self {
            ControlRecordType::Abort => "ABORT",
            ControlRecordType::Commit => "COMMIT",
            ControlRecordType::LeaderChange => "LEADER_CHANGE",
            ControlRecordType::SnapshotHeader => "SNAPSHOT_HEADER",
            ControlRecordType::SnapshotFooter => "SNAPSHOT_FOOTER",
            ControlRecordType::KraftVersion => "KRAFT_VERSION",
            ControlRecordType::KraftVoters => "KRAFT_VOTERS",
            ControlRecordType::Unknown(_) => "UNKNOWN",
        }
    }

    /// Whether this is a transaction marker (COMMIT or ABORT).
    pub fn is_end_transaction(self) -> bool {
        matches!(self, ControlRecordType::Abort | ControlRecordType::Commit)
    }
}

/// A parsed control record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlRecord {
    /// The record's offset.
    pub offset: i64,
    /// What it marks.
    pub kind: ControlRecordType,
    /// For COMMIT and ABORT markers, the transaction coordinator's epoch.
    pub coordinator_epoch: Option<i32>,
}

fn i16_at(b: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

impl ControlRecord {
    /// Parses `record` (the record of a control batch).
    ///
    /// # Errors
    /// [`DecodeError::InvalidControlRecord`] when the key is shorter than 4 bytes
    /// or has a negative version, or when a COMMIT or ABORT marker's value is
    /// shorter than 6 bytes or has a negative version, as Kafka refuses them.
    pub fn parse(record: &LogRecord) -> Result<ControlRecord> {
        let bad = |reason| DecodeError::InvalidControlRecord { reason };
        let key = record.key.as_deref().unwrap_or_default();
        let (Some(version), Some(id)) = (i16_at(key, 0), i16_at(key, 2)) else {
            return Err(bad("key shorter than 4 bytes"));
        };
        if version < 0 {
            return Err(bad("negative key version"));
        }
        let kind = ControlRecordType::from_id(id);
        let coordinator_epoch = if kind.is_end_transaction() {
            let value = record.value.as_deref().unwrap_or_default();
            let (Some(version), Some(epoch)) = (
                i16_at(value, 0),
                value
                    .get(2..6)
                    .and_then(|b| b.try_into().ok())
                    .map(i32::from_be_bytes),
            ) else {
                return Err(bad("end transaction marker value shorter than 6 bytes"));
            };
            if version < 0 {
                return Err(bad("negative end transaction marker version"));
            }
            Some(epoch)
        } else {
            None
        };
        Ok(ControlRecord {
            offset: record.offset,
            kind,
            coordinator_epoch,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn record(key: &[u8], value: &[u8]) -> LogRecord {
        LogRecord {
            offset: 9,
            timestamp: 0,
            key: Some(Bytes::copy_from_slice(key)),
            value: Some(Bytes::copy_from_slice(value)),
            headers: Vec::new(),
        }
    }

    #[test]
    fn markers_parse_with_their_coordinator_epoch() {
        let commit = ControlRecord::parse(&record(&[0, 0, 0, 1], &[0, 0, 0, 0, 0, 7])).unwrap();
        assert_eq!(commit.kind, ControlRecordType::Commit);
        assert_eq!(commit.coordinator_epoch, Some(7));
        assert_eq!(commit.offset, 9);
        let abort = ControlRecord::parse(&record(&[0, 0, 0, 0], &[0, 0, 0, 0, 1, 0])).unwrap();
        assert_eq!(abort.kind, ControlRecordType::Abort);
        assert_eq!(abort.coordinator_epoch, Some(256));
        let leader = ControlRecord::parse(&record(&[0, 0, 0, 2], b"")).unwrap();
        assert_eq!(leader.kind, ControlRecordType::LeaderChange);
        assert_eq!(leader.coordinator_epoch, None);
        let unknown = ControlRecord::parse(&record(&[0, 1, 0, 42], b"")).unwrap();
        assert_eq!(unknown.kind, ControlRecordType::Unknown(42));
        assert_eq!(unknown.kind.id(), 42);
        for id in 0..7 {
            assert_eq!(ControlRecordType::from_id(id).id(), id);
        }
    }

    #[test]
    fn malformed_control_records_are_refused() {
        for (key, value) in [
            (&[0u8, 0, 0][..], &[0u8, 0, 0, 0, 0, 0][..]),
            (&[0xff, 0xff, 0, 1][..], &[0, 0, 0, 0, 0, 0][..]),
            (&[0, 0, 0, 1][..], &[0, 0, 0, 0, 0][..]),
            (&[0, 0, 0, 0][..], &[0x80, 0, 0, 0, 0, 0][..]),
        ] {
            assert!(matches!(
                ControlRecord::parse(&record(key, value)),
                Err(DecodeError::InvalidControlRecord { .. })
            ));
        }
    }
}
