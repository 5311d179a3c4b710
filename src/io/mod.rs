//! File-system access: the [`FileSystem`] seam every file operation goes
//! through, and helpers over it for durable directory operations and atomic
//! small files. Every error carries the path it concerns.

mod fs;
pub(crate) mod mmap;
#[cfg(feature = "failpoints")]
mod sim;

pub use fs::{FileSystem, FsHandle, OpenMode, OsFileSystem};
#[cfg(feature = "failpoints")]
pub use sim::{CrashPoint, Fault, FaultKind, Op, SimFs};

use crate::error::{Corruption, Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};

/// Opens (creating) `path` and takes an exclusive `flock` on it, held until
/// the returned file is dropped. Conflicts with other handles in this process
/// as well as with other processes.
pub(crate) fn lock_exclusive(fs: &dyn FileSystem, path: &Path) -> Result<File> {
    let f = fs
        .open(path, OpenMode::Create)
        .map_err(|e| Error::io("open lock file", path, e))?;
    // A child process this process is spawning holds a copy of every
    // descriptor (and so of a lock just released) until it execs: a lock
    // still held after ~100 ms is a real owner.
    for _ in 0..20 {
        match f.try_lock() {
            Ok(()) => return Ok(f),
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
    }
    Err(Error::Locked {
        path: path.to_owned(),
    })
}

/// fsyncs a directory, so creations, renames and deletions in it are durable.
pub(crate) fn fsync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| Error::io("fsync directory", dir, e))
}

/// Writes `data` to `path` atomically and durably: write `path.tmp`, fsync it,
/// rename over `path`, fsync the directory.
pub(crate) fn write_atomic(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    let tmp = with_suffix(path, ".tmp");
    write_synced(fs, &tmp, data)?;
    fs.rename(&tmp, path)
        .map_err(|e| Error::io("rename", path, e))?;
    fsync_dir(fs, parent(path))
}

/// Creates (or empties) `path`, writes `data` into it and fsyncs it. The
/// directory entry is the caller's to make durable.
pub(crate) fn write_synced(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    let f = fs
        .open(path, OpenMode::Truncate)
        .map_err(|e| Error::io("create", path, e))?;
    fs.write_at(&f, path, data, 0)
        .map_err(|e| Error::io("write", path, e))?;
    fs.sync_all(&f, path)
        .map_err(|e| Error::io("fsync", path, e))
}

/// Whether `path` exists; a `stat` that fails other than with `NotFound`
/// is an error (never taken for a missing file).
pub(crate) fn exists(fs: &dyn FileSystem, path: &Path) -> Result<bool> {
    match fs.metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io("stat", path, e)),
    }
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The directory holding `path`.
pub(crate) fn parent(path: &Path) -> &Path {
    // A relative path of one component ("store") has the empty parent,
    // which names no directory: it is the current one.
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// CRC-32 (IEEE, as zlib's) of `bytes`: the checksum of sealed files.
fn crc32(bytes: &[u8]) -> u32 {
    // The algorithm's width is 32 bits: the value fits a u32.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, bytes) as u32
}

/// Writes `body` followed by a `crc32 <hex>` line covering it, atomically
/// ([`write_atomic`]): small metadata files that detect their own damage.
pub(crate) fn write_sealed(fs: &dyn FileSystem, path: &Path, body: &str) -> Result<()> {
    let text = format!("{body}crc32 {:08x}\n", crc32(body.as_bytes()));
    write_atomic(fs, path, text.as_bytes())
}

/// Reads a file written by [`write_sealed`] whose first line must be
/// `header`. `Ok(None)` when there is no file; the body (header line
/// included) when the CRC matches; [`Error::Corrupt`] naming the file when it
/// does not, or the file is not such a file.
pub(crate) fn read_sealed(
    fs: &dyn FileSystem,
    path: &Path,
    header: &str,
) -> Result<Option<String>> {
    let raw = match fs.read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
    };
    let damaged = |position: usize, what| {
        Error::corrupt(path, position as u64, Corruption::Malformed { what })
    };
    let text =
        String::from_utf8(raw).map_err(|e| damaged(e.utf8_error().valid_up_to(), "utf-8"))?;
    let crc_at = text
        .rfind("crc32 ")
        .ok_or_else(|| damaged(text.len(), "crc line"))?;
    let stored = u32::from_str_radix(text[crc_at..].trim_start_matches("crc32 ").trim_end(), 16)
        .map_err(|_| damaged(crc_at, "crc"))?;
    let body = &text[..crc_at];
    let actual = crc32(body.as_bytes());
    if stored != actual {
        return Err(Error::corrupt(
            path,
            crc_at as u64,
            Corruption::FileChecksum {
                expected: stored,
                actual,
            },
        ));
    }
    if body.lines().next() != Some(header) {
        return Err(damaged(0, "header"));
    }
    Ok(Some(body.to_owned()))
}

/// Lowers the calling thread to `SCHED_IDLE`: it runs only on a core no
/// other thread wants (the library's helpers whose work is worth doing only
/// with a core to spare: write-behind, read-ahead). Best effort: where it
/// cannot, it runs as before.
#[cfg(target_os = "linux")]
#[allow(
    unsafe_code,
    reason = "sched_setscheduler has no safe wrapper in std or libc"
)]
pub(crate) fn run_at_background_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` that outlives the call; pid 0
    // is the calling thread, and lowering its own policy needs no privilege
    // and touches no memory of this process.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn run_at_background_priority() {}

#[cfg(test)]
mod tests {
    /// Sealed files' CRC-32 is zlib's: checked against an independent
    /// implementation, so files written before and after a change of CRC
    /// code read back alike.
    #[test]
    fn crc32_matches_an_independent_implementation() {
        assert_eq!(
            super::crc32(b"123456789"),
            0xcbf4_3926,
            "the CRC-32 check value"
        );
        let text: String = (0..3000)
            .map(|i| char::from(b' ' + (i % 90) as u8))
            .collect();
        for len in 0..text.len() {
            let bytes = &text.as_bytes()[..len];
            assert_eq!(super::crc32(bytes), crc32fast::hash(bytes), "len {len}");
        }
    }
}
