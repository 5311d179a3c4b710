//! The partition checkpoint: recovery point, log start offset and the base
//! offsets of the segments, in a small text file guarded by a CRC-32
//! (Kafka's checkpoint files have no such guard, so a damaged one would be
//! trusted):
//!
//! ```text
//! kafkalite-checkpoint 1
//! recovery-point 1234
//! log-start-offset 0
//! segments 0 617 1234
//! crc32 1a2b3c4d
//! ```
//!
//! The `segments` line (absent in files of older versions) lets open tell a
//! segment deleted from outside from one retention or compaction removed:
//! those rewrite the checkpoint before they delete files.
//!
//! Written atomically: tmp → fsync → rename → fsync directory.

use crate::error::{Corruption, Error, Result};
use crate::io::{read_sealed, write_sealed, FileSystem};
use std::path::Path;

pub(crate) use super::files::CHECKPOINT as FILE_NAME;
const HEADER: &str = "kafkalite-checkpoint 1";

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// Every batch below this offset was fsynced.
    pub(crate) recovery_point: i64,
    /// Offsets below this are not readable.
    pub(crate) log_start_offset: i64,
    /// Base offsets of the segments when it was written (`None` in files
    /// of older versions).
    pub(crate) segments: Option<Vec<i64>>,
}

impl Checkpoint {
    fn body(&self) -> String {
        let mut body = format!(
            "{HEADER}\nrecovery-point {}\nlog-start-offset {}\n",
            self.recovery_point, self.log_start_offset
        );
        if let Some(bases) = &self.segments {
            body.push_str("segments");
            for b in bases {
                body.push_str(&format!(" {b}"));
            }
            body.push('\n');
        }
        body
    }

    /// A listed segment (at or above the log start, below both the recovery
    /// point and the last segment present) whose `.log` is not among
    /// `present` (sorted): it was deleted from outside, since retention and
    /// compaction rewrite the checkpoint first. A missing tail is caught
    /// as a log end below the recovery point instead.
    pub(crate) fn missing_segment(&self, present: &[i64]) -> Option<i64> {
        let last = *present.last()?;
        self.segments.as_ref()?.iter().copied().find(|&b| {
            b >= self.log_start_offset
                && b < self.recovery_point
                && b < last
                && present.binary_search(&b).is_err()
        })
    }

    pub(crate) fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        write_sealed(fs, &dir.join(FILE_NAME), &self.body())
    }

    /// The checkpoint to go by: as [`Checkpoint::read`], but a damaged one
    /// counts as none (it is never trusted: recovery then scans as if there
    /// were no checkpoint). A failed read is still an error: taking it for
    /// "no checkpoint" would forget the log start offset.
    pub(crate) fn read_trusted(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Checkpoint>> {
        match Checkpoint::read(fs, dir) {
            Err(Error::Corrupt { .. }) => Ok(None),
            other => other,
        }
    }

    /// Reads the checkpoint. `Ok(None)` when there is none; a damaged one is
    /// an error naming the file (never trusted).
    pub(crate) fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Checkpoint>> {
        let path = dir.join(FILE_NAME);
        let Some(body) = read_sealed(fs, &path, HEADER)? else {
            return Ok(None);
        };
        let damaged = |what| Error::corrupt(&path, 0, Corruption::Malformed { what });
        let mut lines = body.lines().skip(1);
        let mut field = |name: &str| -> Result<i64> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| damaged("checkpoint field"))
        };
        let recovery_point = field("recovery-point ")?;
        let log_start_offset = field("log-start-offset ")?;
        let segments = match lines.next() {
            None => None,
            Some(l) => {
                let list = l
                    .strip_prefix("segments")
                    .ok_or_else(|| damaged("checkpoint segments"))?;
                let bases = list
                    .split_whitespace()
                    .map(|b| b.parse::<i64>().ok().filter(|&b| b >= 0))
                    .collect::<Option<Vec<i64>>>()
                    .ok_or_else(|| damaged("checkpoint segment base offset"))?;
                Some(bases)
            }
        };
        Ok(Some(Checkpoint {
            recovery_point,
            log_start_offset,
            segments,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::OsFileSystem;

    #[test]
    fn round_trips() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Checkpoint::read(&OsFileSystem, d.path()).unwrap(), None);
        for segments in [None, Some(vec![]), Some(vec![0, 617, 1234])] {
            let c = Checkpoint {
                recovery_point: 1234,
                log_start_offset: 7,
                segments,
            };
            c.write(&OsFileSystem, d.path()).unwrap();
            assert_eq!(Checkpoint::read(&OsFileSystem, d.path()).unwrap(), Some(c));
        }
        assert!(!d.path().join("partition.checkpoint.tmp").exists());
    }

    #[test]
    fn a_flipped_digit_is_detected_as_corrupt() {
        let d = tempfile::tempdir().unwrap();
        Checkpoint {
            recovery_point: 1234,
            log_start_offset: 7,
            segments: None,
        }
        .write(&OsFileSystem, d.path())
        .unwrap();
        let p = d.path().join(FILE_NAME);
        let t = std::fs::read_to_string(&p).unwrap().replace("1234", "1235");
        std::fs::write(&p, t).unwrap();
        assert!(matches!(
            Checkpoint::read(&OsFileSystem, d.path()),
            Err(Error::Corrupt { kind, .. }) if matches!(kind, Corruption::FileChecksum { .. })
        ));
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        for junk in [
            &b""[..],
            b"crc32 zz",
            b"\xff\xfe",
            b"kafkalite-checkpoint 1\ncrc32 00000000\n",
        ] {
            std::fs::write(d.path().join(FILE_NAME), junk).unwrap();
            assert!(matches!(
                Checkpoint::read(&OsFileSystem, d.path()),
                Err(Error::Corrupt { .. })
            ));
        }
    }
}
