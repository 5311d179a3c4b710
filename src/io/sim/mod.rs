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
//!
//! Files: `fault.rs` (which calls fail), `journal.rs` (what reached the disk,
//! crash images), `file_system.rs` (the [`FileSystem`](crate::io::FileSystem) impl).

mod fault;
mod file_system;
mod journal;

pub use fault::{Fault, FaultKind, Op};
pub use journal::CrashPoint;

use journal::{Change, Entry};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
