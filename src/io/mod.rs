//! File-system helpers: durable directory operations and atomic small files.
//! Every error carries the path it concerns.

pub(crate) mod mmap;

use crate::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Opens (creating) `path` and takes an exclusive `flock` on it, held until
/// the returned file is dropped. Conflicts with other handles in this process
/// as well as with other processes.
pub(crate) fn lock_exclusive(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open lock file", path, e))?;
    // A child process this process is spawning holds a copy of every
    // descriptor (and so of a lock just released) until it execs: a lock
    // still held after ~100 ms is a real owner.
    for _ in 0..20 {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
    }
    Err(Error::Locked {
        path: path.to_owned(),
    })
}

/// fsyncs a directory, so creations, renames and deletions in it are durable.
pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("fsync directory", dir, e))
}

/// Writes `data` to `path` atomically and durably: write `path.tmp`, fsync it,
/// rename over `path`, fsync the directory.
pub(crate) fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, ".tmp");
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| Error::io("create", &tmp, e))?;
    f.write_all(data).map_err(|e| Error::io("write", &tmp, e))?;
    f.sync_all().map_err(|e| Error::io("fsync", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| Error::io("rename", path, e))?;
    fsync_dir(parent(path))
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The directory holding `path`.
pub(crate) fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}
