//! A simulated file system for tests (feature `failpoints`): real files
//! under a root directory, with every call open to fault injection and every
//! change journaled so a power loss can be replayed.
//!
//! Faults: any call can fail with a chosen OS error, chosen by operation,
//! path fragment and how many matching calls to let through first; a write
//! can be made short (half of it lands, then the error).
//!
//! Crash model (redb's and sled's): the journal keeps what was written apart
//! from what was synced. A data change (write, `set_len`) is durable once its
//! file is synced; a namespace change (create, rename, remove, mkdir) once
//! the directory holding it is synced; `sync_all` also records the file's
//! whole content, which covers stores through a memory map. Changes pending
//! when a sync of their file fails are lost for good (Linux may drop those
//! dirty pages and report later syncs as successful). A power loss at
//! journal position `at` leaves every change durable by then, plus an
//! arbitrary prefix of the ones that were not (optionally with the next write
//! torn), and nothing of what came after.
//!
//! Simplifications, each on the side of losing less than a real disk could:
//! unsynced changes survive only as an in-order prefix (writeback may
//! reorder); a rename is attributed to the directory it lands in (the store
//! only renames within a directory); `remove_dir_all` is one change; stores
//! through a writable map reach an image only through `sync_all`. Paths must
//! name the root the same way it was given (both absolute, say): calls on
//! other spellings pass through unjournaled.

use super::fs::{FileSystem, OpenMode, OsFileSystem};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A call of [`FileSystem`], for choosing faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// `open` (and create).
    Open,
    /// `len` and `metadata`.
    Stat,
    /// `read_at` and `read`.
    Read,
    /// `write_at`.
    Write,
    /// `set_len`.
    SetLen,
    /// `allocate`.
    Allocate,
    /// `sync_data`.
    SyncData,
    /// `sync_all`.
    SyncAll,
    /// `sync_dir`.
    SyncDir,
    /// `rename`.
    Rename,
    /// `remove_file`.
    Remove,
    /// `create_dir_all`.
    CreateDir,
    /// `remove_dir_all`.
    RemoveDir,
    /// `read_dir`.
    ReadDir,
}

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultKind {
    /// The call fails with this OS error and does nothing.
    Error(i32),
    /// A write puts the first half of its bytes in place, then fails with
    /// this OS error (other calls just fail).
    ShortWrite(i32),
}

/// A fault: which calls it hits and what it does to them.
#[derive(Clone, Debug)]
pub struct Fault {
    op: Option<Op>,
    path_contains: String,
    skip: u64,
    times: u64,
    kind: FaultKind,
}

impl Fault {
    /// Fails the next call of `op` on a path containing `path_contains` with
    /// OS error `errno` (e.g. `libc::EIO`, `libc::ENOSPC`).
    pub fn error(op: Op, path_contains: impl AsRef<Path>, errno: i32) -> Fault {
        Fault {
            op: Some(op),
            path_contains: path_contains.as_ref().to_string_lossy().into_owned(),
            skip: 0,
            times: 1,
            kind: FaultKind::Error(errno),
        }
    }

    /// Makes the next write on a path containing `path_contains` short: half
    /// of it lands, then it fails with `errno`.
    pub fn short_write(path_contains: impl AsRef<Path>, errno: i32) -> Fault {
        Fault {
            kind: FaultKind::ShortWrite(errno),
            ..Fault::error(Op::Write, path_contains, errno)
        }
    }

    /// Fails the call `n` calls from now (0: the next one; every kind of
    /// call, every path counts) with `errno`; short if it is a write and
    /// `short`.
    pub fn nth_call(n: u64, errno: i32, short: bool) -> Fault {
        Fault {
            op: None,
            path_contains: String::new(),
            skip: n,
            times: 1,
            kind: if short {
                FaultKind::ShortWrite(errno)
            } else {
                FaultKind::Error(errno)
            },
        }
    }

    /// Lets the first `n` matching calls through before failing.
    pub fn after(mut self, n: u64) -> Fault {
        self.skip = n;
        self
    }

    /// Fails `n` matching calls (default 1).
    pub fn times(mut self, n: u64) -> Fault {
        self.times = n;
        self
    }
}

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
enum Change {
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
    fn dir(&self) -> Option<&Path> {
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

struct Entry {
    change: Change,
    /// Journal position of the sync that made it durable.
    durable_at: Option<usize>,
    /// Written before a sync of its file failed: Linux may drop such dirty
    /// pages (marking them clean), so it never reaches the disk, whatever
    /// later syncs report.
    lost: bool,
}

#[derive(Default)]
struct State {
    faults: Vec<Fault>,
    calls: u64,
    fired: u64,
    journal: Vec<Entry>,
    /// (device, inode) of each known file to its id.
    ids: HashMap<(u64, u64), u64>,
    next_id: u64,
    /// Data changes not yet durable, per file id.
    pending: HashMap<u64, Vec<usize>>,
    /// Namespace changes not yet durable.
    pending_ns: Vec<usize>,
    /// The tree under the root when the simulation began.
    base_dirs: BTreeSet<PathBuf>,
    base_files: BTreeMap<PathBuf, u64>,
    base_content: HashMap<u64, Vec<u8>>,
}

impl State {
    fn push(&mut self, change: Change, durable: bool) -> usize {
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

    fn synced(&mut self, entries: Vec<usize>) {
        let at = self.push(Change::Synced, true);
        for e in entries {
            if let Some(entry) = self.journal.get_mut(e) {
                entry.durable_at = Some(at);
            }
        }
    }

    /// The fault to apply to this call, if any.
    /// [`fault`](Self::fault) for a call that fails whole: the error a
    /// matching fault gives it (a short write's too), if any.
    fn fail(&mut self, op: Op, path: &Path) -> io::Result<()> {
        match self.fault(op, path) {
            Some(FaultKind::Error(e) | FaultKind::ShortWrite(e)) => Err(err(e)),
            None => Ok(()),
        }
    }

    /// A new id for the file identified by `key` (its device and inode).
    fn register(&mut self, key: (u64, u64)) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.ids.insert(key, id);
        id
    }

    fn fault(&mut self, op: Op, path: &Path) -> Option<FaultKind> {
        self.calls += 1;
        let p = path.to_string_lossy();
        let mut hit = None;
        for f in &mut self.faults {
            if f.op.is_some_and(|o| o != op) || !p.contains(f.path_contains.as_str()) {
                continue;
            }
            if f.skip > 0 {
                f.skip -= 1;
            } else if f.times > 0 && hit.is_none() {
                f.times -= 1;
                self.fired += 1;
                hit = Some(f.kind);
            }
        }
        self.faults.retain(|f| f.times > 0);
        hit
    }
}

/// The simulated file system. See the module documentation.
pub struct SimFs {
    root: PathBuf,
    state: Mutex<State>,
}

impl std::fmt::Debug for SimFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFs").field("root", &self.root).finish()
    }
}

fn key(file: &File) -> io::Result<(u64, u64)> {
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

fn err(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

impl SimFs {
    /// Simulates the tree under `root` (created if missing); what is there
    /// now counts as durable. Calls on paths outside `root` pass through,
    /// open to faults but not journaled.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Arc<SimFs>> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root)?;
        let mut st = State::default();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            for e in std::fs::read_dir(root.join(&rel))? {
                let e = e?;
                let r = rel.join(e.file_name());
                if e.file_type()?.is_dir() {
                    st.base_dirs.insert(r.clone());
                    stack.push(r);
                } else {
                    let f = File::open(e.path())?;
                    let id = st.register(key(&f)?);
                    st.base_content.insert(id, std::fs::read(e.path())?);
                    st.base_files.insert(r, id);
                }
            }
        }
        Ok(Arc::new(SimFs {
            root,
            state: Mutex::new(st),
        }))
    }

    /// Adds a fault.
    pub fn inject(&self, fault: Fault) {
        self.state.lock().faults.push(fault);
    }

    /// Removes every fault not yet used up.
    pub fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// Calls made so far (the numbering [`Fault::nth_call`] uses).
    pub fn calls(&self) -> u64 {
        self.state.lock().calls
    }

    /// Faults that have fired so far.
    pub fn fired(&self) -> u64 {
        self.state.lock().fired
    }

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
                        data: data[..point.torn_bytes.min(data.len())].to_vec(),
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

    fn rel(&self, path: &Path) -> Option<PathBuf> {
        path.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// The id of an open file under the root, registering one this
    /// simulation has not seen created (made by someone else: durable as is).
    fn id(&self, st: &mut State, file: &File, rel: &Path) -> io::Result<u64> {
        let k = key(file)?;
        if let Some(id) = st.ids.get(&k) {
            return Ok(*id);
        }
        let id = st.register(k);
        let len = file.metadata()?.len();
        let mut data = vec![0u8; usize::try_from(len).unwrap_or(0)];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut data, 0)?;
        st.push(
            Change::Create {
                path: rel.to_path_buf(),
                id,
            },
            true,
        );
        st.push(Change::Snapshot { id, data }, true);
        Ok(id)
    }

    /// Checks faults for a call that changes nothing.
    fn read_call(&self, op: Op, path: &Path) -> io::Result<()> {
        self.state.lock().fail(op, path)
    }

    /// Runs a data change on an open file: fault check, the real call, then
    /// `journal` (given the file's id) under the same lock.
    fn data_call(
        &self,
        op: Op,
        file: &File,
        path: &Path,
        real: impl FnOnce() -> io::Result<()>,
        journal: impl FnOnce(&mut State, u64) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut st = self.state.lock();
        if let Some(FaultKind::Error(e) | FaultKind::ShortWrite(e)) = st.fault(op, path) {
            if matches!(op, Op::SyncData | Op::SyncAll) {
                if let Some(rel) = self.rel(path) {
                    let id = self.id(&mut st, file, &rel)?;
                    for i in st.pending.remove(&id).unwrap_or_default() {
                        if let Some(entry) = st.journal.get_mut(i) {
                            entry.lost = true;
                        }
                    }
                }
            }
            return Err(err(e));
        }
        real()?;
        if let Some(rel) = self.rel(path) {
            let id = self.id(&mut st, file, &rel)?;
            journal(&mut st, id)?;
        }
        Ok(())
    }

    /// Runs a namespace change: fault check, the real call, then journals
    /// `change` if its paths are under the root.
    fn ns_call(
        &self,
        op: Op,
        path: &Path,
        real: impl FnOnce() -> io::Result<()>,
        change: impl FnOnce(&SimFs) -> Option<Vec<Change>>,
    ) -> io::Result<()> {
        let mut st = self.state.lock();
        st.fail(op, path)?;
        let changes = change(self);
        real()?;
        for c in changes.into_iter().flatten() {
            st.push(c, false);
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
            c[start..end].copy_from_slice(&data);
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

impl FileSystem for SimFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut st = self.state.lock();
        st.fail(Op::Open, path)?;
        let existed = path.exists();
        let file = OsFileSystem.open(path, mode)?;
        if let Some(rel) = self.rel(path) {
            if existed {
                let id = self.id(&mut st, &file, &rel)?;
                if mode == OpenMode::Truncate {
                    st.push(Change::SetLen { id, len: 0 }, false);
                }
            } else {
                let id = st.register(key(&file)?);
                st.push(Change::Create { path: rel, id }, false);
            }
        }
        Ok(file)
    }

    fn len(&self, file: &File, path: &Path) -> io::Result<u64> {
        self.read_call(Op::Stat, path)?;
        OsFileSystem.len(file, path)
    }

    fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        self.read_call(Op::Stat, path)?;
        OsFileSystem.metadata(path)
    }

    fn read_at(&self, file: &File, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_call(Op::Read, path)?;
        OsFileSystem.read_at(file, path, buf, offset)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_call(Op::Read, path)?;
        OsFileSystem.read(path)
    }

    fn write_at(&self, file: &File, path: &Path, data: &[u8], offset: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        let (data, fail) = match st.fault(Op::Write, path) {
            Some(FaultKind::Error(e)) => return Err(err(e)),
            Some(FaultKind::ShortWrite(e)) => (&data[..data.len() / 2], Some(e)),
            None => (data, None),
        };
        OsFileSystem.write_at(file, path, data, offset)?;
        if let Some(rel) = self.rel(path) {
            let id = self.id(&mut st, file, &rel)?;
            st.push(
                Change::Write {
                    id,
                    offset,
                    data: data.to_vec(),
                },
                false,
            );
        }
        fail.map_or(Ok(()), |e| Err(err(e)))
    }

    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()> {
        self.data_call(
            Op::SetLen,
            file,
            path,
            || OsFileSystem.set_len(file, path, len),
            |st, id| {
                st.push(Change::SetLen { id, len }, false);
                Ok(())
            },
        )
    }

    fn allocate(&self, file: &File, path: &Path, len: u64) -> io::Result<()> {
        self.data_call(
            Op::Allocate,
            file,
            path,
            || OsFileSystem.allocate(file, path, len),
            |st, id| {
                let len = file.metadata()?.len();
                st.push(Change::SetLen { id, len }, false);
                Ok(())
            },
        )
    }

    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()> {
        self.data_call(
            Op::SyncData,
            file,
            path,
            || OsFileSystem.sync_data(file, path),
            |st, id| {
                let done = st.pending.remove(&id).unwrap_or_default();
                st.synced(done);
                Ok(())
            },
        )
    }

    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        self.data_call(
            Op::SyncAll,
            file,
            path,
            || OsFileSystem.sync_all(file, path),
            |st, id| {
                let mut data = vec![0u8; usize::try_from(file.metadata()?.len()).unwrap_or(0)];
                std::os::unix::fs::FileExt::read_exact_at(file, &mut data, 0)?;
                let mut done = st.pending.remove(&id).unwrap_or_default();
                done.push(st.push(Change::Snapshot { id, data }, false));
                st.synced(done);
                Ok(())
            },
        )
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.ns_call(
            Op::Rename,
            from,
            || OsFileSystem.rename(from, to),
            |s| {
                Some(vec![Change::Rename {
                    from: s.rel(from)?,
                    to: s.rel(to)?,
                }])
            },
        )
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.ns_call(
            Op::Remove,
            path,
            || OsFileSystem.remove_file(path),
            |s| Some(vec![Change::Remove { path: s.rel(path)? }]),
        )
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.ns_call(
            Op::CreateDir,
            path,
            || OsFileSystem.create_dir_all(path),
            |s| {
                let rel = s.rel(path)?;
                let mut missing: Vec<Change> = rel
                    .ancestors()
                    .filter(|a| !a.as_os_str().is_empty() && !s.root.join(a).exists())
                    .map(|a| Change::Mkdir {
                        path: a.to_path_buf(),
                    })
                    .collect();
                missing.reverse();
                Some(missing)
            },
        )
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.ns_call(
            Op::RemoveDir,
            path,
            || OsFileSystem.remove_dir_all(path),
            |s| Some(vec![Change::RemoveAll { path: s.rel(path)? }]),
        )
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.read_call(Op::ReadDir, path)?;
        OsFileSystem.read_dir(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state.lock();
        st.fail(Op::SyncDir, path)?;
        OsFileSystem.sync_dir(path)?;
        if let Some(rel) = self.rel(path) {
            let (done, rest): (Vec<usize>, Vec<usize>) = std::mem::take(&mut st.pending_ns)
                .into_iter()
                .partition(|&i| {
                    st.journal
                        .get(i)
                        .and_then(|e| e.change.dir())
                        .is_some_and(|d| d == rel)
                });
            st.pending_ns = rest;
            st.synced(done);
        }
        Ok(())
    }
}
