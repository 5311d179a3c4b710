//! The offset map of a migration: per partition, which source offsets went
//! to which target offsets, how far the migration got, and the send that
//! was in flight when it stopped.
//!
//! It lives in the store directory as `migrate-<cluster>.offsets`, a text
//! file ending in a CRC-32C line, written whole to a temporary file,
//! fsynced, renamed over the old one and the directory fsynced, so a crash
//! leaves the old map or the new one, never a mixture; a map that fails its
//! checks when read back is refused, not guessed at.

use crate::util::{CliError, CliResult};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &str = "kafkalite-offset-map 1";

/// Source offsets `src..src+len` went to target offsets `tgt..tgt+len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The first source offset.
    pub src: i64,
    /// Its target offset.
    pub tgt: i64,
    /// How many consecutive offsets.
    pub len: i64,
}

/// A produce whose answer was not seen: it may or may not have landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// The source offset of the batch's first record.
    pub src_first: i64,
    /// The target's log end offset before the send.
    pub tgt_end: i64,
    /// Records in the batch.
    pub records: i32,
    /// The batch's first timestamp.
    pub base_ts: i64,
    /// The batch's max timestamp.
    pub max_ts: i64,
}

/// One partition's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartMap {
    /// The mapped offset ranges, ascending in both offsets.
    pub runs: Vec<Run>,
    /// The source offset to read next.
    pub src_next: i64,
    /// The target offset after the last record sent (the target's log end
    /// as last seen).
    pub tgt_next: i64,
    /// The send in flight, if any.
    pub pending: Option<Pending>,
}

impl PartMap {
    /// Records that source offsets `offsets` (ascending) landed at target
    /// offsets `tgt_base`, `tgt_base+1`, …, merging with the last run.
    pub fn record(&mut self, offsets: &[i64], tgt_base: i64) {
        for (i, &o) in offsets.iter().enumerate() {
            let t = tgt_base + i as i64;
            match self.runs.last_mut() {
                Some(r) if r.src + r.len == o && r.tgt + r.len == t => r.len += 1,
                _ => self.runs.push(Run {
                    src: o,
                    tgt: t,
                    len: 1,
                }),
            }
        }
        if let Some(&last) = offsets.last() {
            self.src_next = self.src_next.max(last + 1);
            self.tgt_next = self.tgt_next.max(tgt_base + offsets.len() as i64);
        }
    }

    /// The target offset for a source position `committed` (the next
    /// source record to consume): the target offset of the first migrated
    /// record at or after it, or the target's end when every migrated
    /// record is below it. `None` when `committed` is past what was
    /// migrated (those records are not on the target yet).
    pub fn translate(&self, committed: i64) -> Option<i64> {
        for r in &self.runs {
            if committed < r.src {
                return Some(r.tgt);
            }
            if committed < r.src + r.len {
                return Some(r.tgt + (committed - r.src));
            }
        }
        (committed <= self.src_next).then_some(self.tgt_next)
    }

    /// Records migrated.
    pub fn records(&self) -> i64 {
        self.runs.iter().map(|r| r.len).sum()
    }
}

/// The whole map: `(topic, partition)` → state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OffsetMap {
    /// The partitions.
    pub parts: BTreeMap<(String, u32), PartMap>,
}

/// The map's file for a target cluster, in the store directory.
pub fn path_for(store: &Path, cluster: &str) -> PathBuf {
    let safe: String = cluster
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    store.join(format!("migrate-{safe}.offsets"))
}

fn crc(text: &str) -> u32 {
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, text.as_bytes()) as u32
}

impl OffsetMap {
    /// The text of the map, checksum line included.
    pub fn to_text(&self) -> String {
        let mut s = format!("{MAGIC}\n");
        for ((topic, p), m) in &self.parts {
            s.push_str(&format!("next {topic} {p} {} {}\n", m.src_next, m.tgt_next));
            for r in &m.runs {
                s.push_str(&format!("run {topic} {p} {} {} {}\n", r.src, r.tgt, r.len));
            }
            if let Some(x) = m.pending {
                s.push_str(&format!(
                    "pending {topic} {p} {} {} {} {} {}\n",
                    x.src_first, x.tgt_end, x.records, x.base_ts, x.max_ts
                ));
            }
        }
        let c = crc(&s);
        s.push_str(&format!("crc32c {c:08x}\n"));
        s
    }

    /// Parses and checks a map's text.
    pub fn parse(text: &str) -> Result<OffsetMap, String> {
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or("no checksum line")?;
        let (body, last) = text.split_at(body_end);
        let want = last
            .trim_end()
            .strip_prefix("crc32c ")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or("no checksum line")?;
        if crc(body) != want {
            return Err("checksum mismatch (the file is damaged)".into());
        }
        let mut lines = body.lines();
        if lines.next() != Some(MAGIC) {
            return Err(format!("not an offset map (expected `{MAGIC}`)"));
        }
        let mut map = OffsetMap::default();
        for (n, line) in lines.enumerate() {
            let bad = |why: &str| format!("line {}: {why}: `{line}`", n + 2);
            let f: Vec<&str> = line.split(' ').collect();
            let (kind, topic, part) = match f.as_slice() {
                [k, t, p, ..] => (*k, *t, p.parse::<u32>().map_err(|_| bad("bad partition"))?),
                _ => return Err(bad("too few fields")),
            };
            let nums: Vec<i64> = f[3..]
                .iter()
                .map(|x| x.parse::<i64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad("bad number"))?;
            let key = (topic.to_owned(), part);
            match (kind, nums.as_slice()) {
                ("next", &[src_next, tgt_next]) => {
                    if map.parts.contains_key(&key) {
                        return Err(bad("partition listed twice"));
                    }
                    map.parts.insert(
                        key,
                        PartMap {
                            src_next,
                            tgt_next,
                            ..PartMap::default()
                        },
                    );
                }
                ("run", &[src, tgt, len]) => {
                    let m = map
                        .parts
                        .get_mut(&key)
                        .ok_or_else(|| bad("run before next"))?;
                    if len <= 0 || src < 0 || tgt < 0 {
                        return Err(bad("bad run"));
                    }
                    if let Some(prev) = m.runs.last() {
                        if src < prev.src + prev.len || tgt < prev.tgt + prev.len {
                            return Err(bad("runs out of order"));
                        }
                    }
                    if src + len > m.src_next || tgt + len > m.tgt_next {
                        return Err(bad("run past the partition's next offsets"));
                    }
                    m.runs.push(Run { src, tgt, len });
                }
                ("pending", &[src_first, tgt_end, records, base_ts, max_ts]) => {
                    let m = map
                        .parts
                        .get_mut(&key)
                        .ok_or_else(|| bad("pending before next"))?;
                    let records = i32::try_from(records).map_err(|_| bad("bad count"))?;
                    if m.pending.is_some() || src_first < m.src_next || records <= 0 {
                        return Err(bad("bad pending send"));
                    }
                    m.pending = Some(Pending {
                        src_first,
                        tgt_end,
                        records,
                        base_ts,
                        max_ts,
                    });
                }
                _ => return Err(bad("unknown line")),
            }
        }
        Ok(map)
    }

    /// Reads the map at `path`; a missing file is an empty map.
    pub fn load(path: &Path) -> CliResult<OffsetMap> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OffsetMap::default()),
            Err(e) => {
                return Err(CliError::msg(format!(
                    "reading the offset map {}: {e}",
                    path.display()
                )))
            }
        };
        OffsetMap::parse(&text).map_err(|e| {
            CliError::msg(format!(
                "the offset map {} is invalid ({e}); refusing to guess what was migrated",
                path.display()
            ))
        })
    }

    /// Writes the map to `path` atomically and durably: a temporary file,
    /// fsynced, renamed over `path`, then the directory fsynced.
    pub fn save(&self, path: &Path) -> CliResult<()> {
        let err = |what: &str, e: std::io::Error| {
            CliError::msg(format!("{what} the offset map {}: {e}", path.display()))
        };
        let tmp = path.with_extension("offsets.tmp");
        let mut f = File::create(&tmp).map_err(|e| err("writing", e))?;
        f.write_all(self.to_text().as_bytes())
            .map_err(|e| err("writing", e))?;
        f.sync_all().map_err(|e| err("syncing", e))?;
        drop(f);
        fs::rename(&tmp, path).map_err(|e| err("renaming", e))?;
        if let Some(dir) = path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| err("syncing the directory of", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> OffsetMap {
        let mut m = OffsetMap::default();
        let mut p = PartMap {
            tgt_next: 100,
            ..PartMap::default()
        };
        p.record(&[0, 1, 2, 3], 100);
        // A transaction marker at 4 was not sent.
        p.record(&[5, 6], 104);
        // Compaction left a gap in a batch.
        p.record(&[9, 12], 106);
        p.pending = Some(Pending {
            src_first: 13,
            tgt_end: 108,
            records: 3,
            base_ts: 1_700_000_000_000,
            max_ts: 1_700_000_000_009,
        });
        m.parts.insert(("orders".into(), 2), p);
        m.parts.insert(("empty".into(), 0), PartMap::default());
        m
    }

    #[test]
    fn runs_merge_and_translate_commits() {
        let m = sample();
        let p = &m.parts[&("orders".to_owned(), 2)];
        assert_eq!(
            p.runs,
            vec![
                Run {
                    src: 0,
                    tgt: 100,
                    len: 4
                },
                Run {
                    src: 5,
                    tgt: 104,
                    len: 2
                },
                Run {
                    src: 9,
                    tgt: 106,
                    len: 1
                },
                Run {
                    src: 12,
                    tgt: 107,
                    len: 1
                },
            ]
        );
        assert_eq!((p.src_next, p.tgt_next, p.records()), (13, 108, 8));
        // Committed 0: nothing processed, start at the first record.
        assert_eq!(p.translate(0), Some(100));
        assert_eq!(p.translate(3), Some(103));
        // Committed 4 (the marker) or 5: the next record is source 5.
        assert_eq!(p.translate(4), Some(104));
        assert_eq!(p.translate(5), Some(104));
        assert_eq!(p.translate(7), Some(106));
        assert_eq!(p.translate(10), Some(107));
        // Everything migrated was processed: the target's end.
        assert_eq!(p.translate(13), Some(108));
        // Past what was migrated: unknown.
        assert_eq!(p.translate(14), None);
        let empty = PartMap::default();
        assert_eq!(empty.translate(0), Some(0));
    }

    #[test]
    fn the_text_round_trips_and_damage_is_refused() {
        let m = sample();
        let text = m.to_text();
        assert_eq!(OffsetMap::parse(&text), Ok(m.clone()));
        // One digit changed: the checksum catches it.
        let damaged = text.replacen("run orders 2 5 104 2", "run orders 2 5 105 2", 1);
        assert_ne!(damaged, text);
        assert!(OffsetMap::parse(&damaged).unwrap_err().contains("checksum"));
        // Cut short: no checksum line.
        let cut = &text[..text.len() / 2];
        assert!(OffsetMap::parse(cut).is_err());
        assert!(OffsetMap::parse("").is_err());
    }

    #[test]
    fn inconsistent_maps_are_refused_even_with_a_valid_checksum() {
        let with_crc = |body: &str| {
            let body = format!("{MAGIC}\n{body}");
            format!("{body}crc32c {:08x}\n", crc(&body))
        };
        for (body, why) in [
            ("run t 0 0 0 1\n", "run before next"),
            (
                "next t 0 5 5\nrun t 0 3 3 1\nrun t 0 0 0 1\n",
                "out of order",
            ),
            ("next t 0 2 2\nrun t 0 0 0 3\n", "past the partition"),
            ("next t 0 2 2\nnext t 0 2 2\n", "twice"),
            ("next t x 2 2\n", "bad partition"),
            ("next t 0 2\n", "unknown line"),
            ("next t 0 2 2\npending t 0 1 2 1 0 0\n", "bad pending"),
        ] {
            let e = OffsetMap::parse(&with_crc(body)).unwrap_err();
            assert!(e.contains(why), "{body:?}: {e}");
        }
    }

    #[test]
    fn save_replaces_the_file_whole_and_load_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "abc/def");
        assert!(path.ends_with("migrate-abc_def.offsets"));
        assert_eq!(OffsetMap::load(&path).unwrap(), OffsetMap::default());
        let m = sample();
        m.save(&path).unwrap();
        assert_eq!(OffsetMap::load(&path).unwrap(), m);
        assert!(!path.with_extension("offsets.tmp").exists());
        std::fs::write(&path, "kafkalite-offset-map 1\nnext t 0 1 1\n").unwrap();
        let e = OffsetMap::load(&path).unwrap_err().0;
        assert!(e.contains("invalid"), "{e}");
    }
}
