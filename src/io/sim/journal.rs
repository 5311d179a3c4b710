//! The journal of [`SimFs`](super::SimFs): every change made under the
//! root, which of them are durable (and by which sync), and the crash image
//! a power loss at a journal position leaves.

use super::{SimFs, State};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

/// Where a simulated power loss strikes, for [`SimFs::crash_image`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashPoint {
    /// The journal position ([`SimFs::position`]): changes from here on
    /// never happened.
    pub at: usize,
    /// How many of the changes before `at` that were not durable by then
    /// still reach the disk (the first ones, in order).
    pub unsynced_kept: usize,
    /// If the next unsynced change after those is a write, this many of its
    /// bytes reach the disk (a torn write).
    pub torn_bytes: usize,
}

#[derive(Clone, Debug)]
pub(super) enum Change {
    Create { path: PathBuf, id: u64 },
    Write { id: u64, offset: u64, data: Vec<u8> },
    SetLen { id: u64, len: u64 },
    Snapshot { id: u64, data: Vec<u8> },
    Rename { from: PathBuf, to: PathBuf },
    Remove { path: PathBuf },
    Mkdir { path: PathBuf },
    RemoveAll { path: PathBuf },
    Synced,
}

impl Change {
    /// The directory a namespace change lives in.
    pub(super) fn dir(&self) -> Option<&Path> {
        match self {
            Change::Create { path, .. }
            | Change::Remove { path }
            | Change::Mkdir { path }
            | Change::RemoveAll { path }
            | Change::Rename { to: path, .. } => Some(path.parent().unwrap_or(Path::new(""))),
            _ => None,
        }
    }
}

pub(super) struct Entry {
    pub(super) change: Change,
    /// Journal position of the sync that made it durable.
    pub(super) durable_at: Option<usize>,
    /// Written before a sync of its file failed: Linux may drop such dirty
    /// pages (marking them clean), so it never reaches the disk, whatever
    /// later syncs report.
    pub(super) lost: bool,
}

impl State {
    pub(super) fn push(&mut self, change: Change, durable: bool) -> usize {
        let i = self.journal.len();
        let namespace = change.dir().is_some();
        let id = match &change {
            Change::Write { id, .. } | Change::SetLen { id, .. } => Some(*id),
            _ => None,
        };
        self.journal.push(Entry {
            change,
            durable_at: durable.then_some(i),
            lost: false,
        });
        if !durable {
            if namespace {
                self.pending_ns.push(i);
            } else if let Some(id) = id {
                self.pending.entry(id).or_default().push(i);
            }
        }
        i
    }

    pub(super) fn synced(&mut self, entries: Vec<usize>) {
        let at = self.push(Change::Synced, true);
        for e in entries {
            if let Some(entry) = self.journal.get_mut(e) {
                entry.durable_at = Some(at);
            }
        }
    }

    /// A new id for the file identified by `key` (its device and inode).
    pub(super) fn register(&mut self, key: (u64, u64)) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.ids.insert(key, id);
        id
    }
}

impl SimFs {
    /// The journal position now: a power loss here keeps what is durable.
    pub fn position(&self) -> usize {
        self.state.lock().journal.len()
    }

    /// The journal position just after each sync so far: the instants a
    /// power loss leaves exactly what was synced.
    pub fn sync_points(&self) -> Vec<usize> {
        let st = self.state.lock();
        st.journal
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.change, Change::Synced))
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// How many changes before `at` were not durable by then (the range of
    /// [`CrashPoint::unsynced_kept`]).
    pub fn unsynced_at(&self, at: usize) -> usize {
        let st = self.state.lock();
        st.journal
            .iter()
            .take(at)
            .filter(|e| !matches!(e.change, Change::Synced) && !e.lost)
            .filter(|e| e.durable_at.is_none_or(|d| d >= at))
            .count()
    }

    /// Writes into `to` (a new directory) the tree a power loss at `point`
    /// would leave under the root.
    pub fn crash_image(&self, point: CrashPoint, to: &Path) -> io::Result<()> {
        let st = self.state.lock();
        let mut dirs = st.base_dirs.clone();
        let mut names = st.base_files.clone();
        let mut content = st.base_content.clone();
        let at = point.at.min(st.journal.len());
        let mut kept = 0usize;
        for e in st.journal.iter().take(at).filter(|e| !e.lost) {
            let durable = e.durable_at.is_some_and(|d| d < at);
            let change = match (&e.change, durable) {
                (Change::Synced, _) => continue,
                (c, true) => c.clone(),
                (c, false) if kept < point.unsynced_kept => {
                    kept += 1;
                    c.clone()
                }
                (Change::Write { id, offset, data }, false)
                    if kept == point.unsynced_kept && point.torn_bytes > 0 =>
                {
                    kept += 1;
                    Change::Write {
                        id: *id,
                        offset: *offset,
                        data: data.split_at(point.torn_bytes.min(data.len())).0.to_vec(),
                    }
                }
                _ => {
                    if kept == point.unsynced_kept {
                        // Only the first unsynced change after the prefix
                        // can be torn.
                        kept += 1;
                    }
                    continue;
                }
            };
            apply(change, &mut dirs, &mut names, &mut content);
        }
        std::fs::create_dir_all(to)?;
        let root = Path::new("");
        let mut made = BTreeSet::new();
        for d in &dirs {
            let parent = d.parent().unwrap_or(root);
            if parent == root || made.contains(parent) {
                std::fs::create_dir(to.join(d))?;
                made.insert(d.clone());
            }
        }
        for (p, id) in &names {
            let parent = p.parent().unwrap_or(root);
            if parent == root || made.contains(parent) {
                let data = content.get(id).map_or(&[][..], Vec::as_slice);
                std::fs::write(to.join(p), data)?;
            }
        }
        Ok(())
    }
}

fn apply(
    change: Change,
    dirs: &mut BTreeSet<PathBuf>,
    names: &mut BTreeMap<PathBuf, u64>,
    content: &mut HashMap<u64, Vec<u8>>,
) {
    match change {
        Change::Create { path, id } => {
            content.insert(id, Vec::new());
            names.insert(path, id);
        }
        Change::Write { id, offset, data } => {
            let c = content.entry(id).or_default();
            let (start, end) = (offset as usize, offset as usize + data.len());
            if c.len() < end {
                c.resize(end, 0);
            }
            if let Some(at) = c.get_mut(start..end) {
                // Resized to hold the write just above.
                at.copy_from_slice(&data);
            }
        }
        Change::SetLen { id, len } => content.entry(id).or_default().resize(len as usize, 0),
        Change::Snapshot { id, data } => {
            content.insert(id, data);
        }
        Change::Rename { from, to } => {
            if let Some(id) = names.remove(&from) {
                names.insert(to, id);
            } else if dirs.contains(&from) {
                let moved = |p: &PathBuf| p.strip_prefix(&from).ok().map(|r| to.join(r));
                let ds: Vec<_> = dirs.iter().filter_map(&moved).collect();
                dirs.retain(|d| !d.starts_with(&from));
                dirs.extend(ds);
                let ns: Vec<_> = names
                    .iter()
                    .filter_map(|(p, id)| moved(p).map(|q| (q, *id)))
                    .collect();
                names.retain(|p, _| !p.starts_with(&from));
                names.extend(ns);
            }
        }
        Change::Remove { path } => {
            names.remove(&path);
        }
        Change::Mkdir { path } => {
            dirs.insert(path);
        }
        Change::RemoveAll { path } => {
            dirs.retain(|d| !d.starts_with(&path));
            names.retain(|p, _| !p.starts_with(&path));
        }
        Change::Synced => {}
    }
}
