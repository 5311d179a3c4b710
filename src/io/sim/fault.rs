//! The fault model of [`SimFs`](super::SimFs): which calls fail, with
//! which OS error, and which writes are made short.

use super::{err, State};
use std::io;
use std::path::Path;

/// A call of [`FileSystem`](crate::io::FileSystem), for choosing faults.
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

impl State {
    /// [`fault`](Self::fault) for a call that fails whole: the error a
    /// matching fault gives it (a short write's too), if any.
    pub(super) fn fail(&mut self, op: Op, path: &Path) -> io::Result<()> {
        match self.fault(op, path) {
            Some(FaultKind::Error(e) | FaultKind::ShortWrite(e)) => Err(err(e)),
            None => Ok(()),
        }
    }

    /// The fault to apply to this call, if any (counting the call).
    pub(super) fn fault(&mut self, op: Op, path: &Path) -> Option<FaultKind> {
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
