//! The I/O seam: every file operation of the store goes through
//! [`FileSystem`], so tests can swap the operating system for a simulation
//! that fails chosen calls or loses unsynced writes (see `SimFs`, feature
//! `failpoints`).
//!
//! Files stay real [`File`]s (segments and indexes are memory-mapped), but
//! nothing calls `write`, `fsync`, `set_len`, `rename` or `remove` on them
//! except through this trait. Writes through a writable map (index entries)
//! reach the disk through [`FileSystem::sync_all`], which is how indexes are
//! flushed.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How [`FileSystem::open`] opens a file. Every mode but `Read` opens it
/// for reading and writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpenMode {
    /// An existing file, read-only.
    Read,
    /// An existing file.
    ReadWrite,
    /// The file, created empty if it does not exist (kept as is if it does).
    Create,
    /// A new file; fails with `AlreadyExists` if there is one.
    CreateNew,
    /// The file, created if missing and emptied if not.
    Truncate,
}

/// The file operations the store makes. Paths are those of the files the
/// operations concern; implementations may use them (to choose faults, or to
/// tell files apart) but must act on the `File` given.
///
/// The default is [`OsFileSystem`]. An implementation must behave like
/// POSIX: in particular `sync_data`/`sync_all` return only once the data is
/// durable, and a failure of either is final (the store never retries one).
pub trait FileSystem: Send + Sync + 'static {
    /// Opens `path`.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File>;
    /// The size of the open file.
    fn len(&self, file: &File, path: &Path) -> io::Result<u64>;
    /// `stat` of `path` (`NotFound` when there is nothing there): size,
    /// kind, modification time.
    fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata>;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, file: &File, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Reads the whole file at `path`.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Writes all of `data` at `offset`. On error, any prefix of `data` may
    /// have been written.
    fn write_at(&self, file: &File, path: &Path, data: &[u8], offset: u64) -> io::Result<()>;
    /// Writes `parts` one after another from `offset`, as one
    /// [`write_at`](Self::write_at) of their concatenation would (one
    /// vectored write where the system has one). On error, any prefix of
    /// the concatenation may have been written. Default: `write_at` a part
    /// at a time.
    fn write_parts_at(
        &self,
        file: &File,
        path: &Path,
        parts: &[&[u8]],
        offset: u64,
    ) -> io::Result<()> {
        let mut at = offset;
        for part in parts {
            self.write_at(file, path, part, at)?;
            at += part.len() as u64;
        }
        Ok(())
    }
    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()>;
    /// Reserves disk blocks for the first `len` bytes (extending the file),
    /// so stores through a map cannot fail for lack of space.
    fn allocate(&self, file: &File, path: &Path, len: u64) -> io::Result<()>;
    /// Starts writing the dirty pages of `[offset, offset + len)` to disk
    /// without waiting for them (Linux `sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`): a hint that makes a later
    /// [`sync_data`](Self::sync_data) shorter, never a durability promise.
    /// Errors of the writes it starts are reported by the next
    /// `sync_data`. Default: does nothing.
    fn start_writeback(&self, file: &File, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let _ = (file, path, offset, len);
        Ok(())
    }
    /// Reserves disk blocks for `[offset, offset + len)`, past the file's
    /// end, without changing its size (Linux `fallocate` with
    /// `FALLOC_FL_KEEP_SIZE`), so appends there find their blocks
    /// allocated: a hint, never needed for correctness. Truncating the file,
    /// even to its own size, gives back what lies past its end. Default:
    /// does nothing.
    fn reserve_past_end(&self, file: &File, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let _ = (file, path, offset, len);
        Ok(())
    }
    /// `fdatasync`: the file's data and size are durable.
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;
    /// `fsync`: data, size and metadata are durable, including bytes written
    /// through a memory map of the file.
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to`. Durable once the directory
    /// holding `to` is synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file. Durable once its directory is synced.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and its missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Removes a directory and everything in it.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// The entries of a directory (full paths), in no particular order.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// fsyncs a directory: creations, renames and removals in it are durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
}

/// The operating system's file system: each method is the plain `std::fs`
/// (or `posix_fallocate`) call.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFileSystem;

impl FileSystem for OsFileSystem {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.read(true);
        match mode {
            OpenMode::Read => &mut o,
            OpenMode::ReadWrite => o.write(true),
            OpenMode::Create => o.write(true).create(true).truncate(false),
            OpenMode::CreateNew => o.write(true).create_new(true),
            OpenMode::Truncate => o.write(true).create(true).truncate(true),
        }
        .open(path)
    }

    fn len(&self, file: &File, _path: &Path) -> io::Result<u64> {
        file.metadata().map(|m| m.len())
    }

    fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::metadata(path)
    }

    fn read_at(&self, file: &File, _path: &Path, buf: &mut [u8], offset: u64) -> io::Result<()> {
        file.read_exact_at(buf, offset)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_at(&self, file: &File, _path: &Path, data: &[u8], offset: u64) -> io::Result<()> {
        file.write_all_at(data, offset)
    }

    #[allow(
        unsafe_code,
        reason = "pwritev has no stable wrapper in std (write_vectored_at is unstable)"
    )]
    fn write_parts_at(
        &self,
        file: &File,
        _path: &Path,
        parts: &[&[u8]],
        offset: u64,
    ) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        /// Parts a call (Linux's `IOV_MAX` is 1,024).
        const MOST: usize = 1024;
        let (mut parts, mut skip, mut at) = (parts, 0usize, offset);
        while let Some(first) = parts.first() {
            if skip == first.len() {
                (parts, skip) = (parts.get(1..).unwrap_or_default(), 0);
                continue;
            }
            let take = parts.get(..parts.len().min(MOST)).unwrap_or_default();
            let iov: Vec<libc::iovec> = take
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let p = if i == 0 {
                        p.get(skip..).unwrap_or_default()
                    } else {
                        p
                    };
                    libc::iovec {
                        iov_base: p.as_ptr() as *mut libc::c_void,
                        iov_len: p.len(),
                    }
                })
                .collect();
            let Ok(pos) = libc::off_t::try_from(at) else {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            };
            // SAFETY: every iovec points into a slice of `parts`, borrowed for
            // the whole call and only read by it (pwritev copies from them);
            // `iov` outlives the call, and its length is at most IOV_MAX.
            let n = unsafe { libc::pwritev(file.as_raw_fd(), iov.as_ptr(), iov.len() as i32, pos) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::WriteZero));
            }
            // Step past what was written: whole parts, then into one.
            let mut left = n as usize;
            at += left as u64;
            while let Some(p) = parts.first() {
                let rest = p.len() - skip;
                if left < rest {
                    skip += left;
                    break;
                }
                left -= rest;
                (parts, skip) = (parts.get(1..).unwrap_or_default(), 0);
            }
        }
        Ok(())
    }

    fn set_len(&self, file: &File, _path: &Path, len: u64) -> io::Result<()> {
        file.set_len(len)
    }

    fn allocate(&self, file: &File, _path: &Path, len: u64) -> io::Result<()> {
        super::mmap::preallocate(file, len)
    }

    #[cfg(target_os = "linux")]
    #[allow(
        unsafe_code,
        reason = "sync_file_range has no safe wrapper in std or libc"
    )]
    fn start_writeback(&self, file: &File, _path: &Path, offset: u64, len: u64) -> io::Result<()> {
        range_call(file, offset, len, |fd, offset, len| {
            // SAFETY: a plain system call on a descriptor `file` keeps open
            // for the call's duration; it reads no memory of this process.
            unsafe { libc::sync_file_range(fd, offset, len, libc::SYNC_FILE_RANGE_WRITE) }
        })
    }

    #[cfg(target_os = "linux")]
    #[allow(
        unsafe_code,
        reason = "fallocate with FALLOC_FL_KEEP_SIZE has no wrapper in std"
    )]
    fn reserve_past_end(&self, file: &File, _path: &Path, offset: u64, len: u64) -> io::Result<()> {
        range_call(file, offset, len, |fd, offset, len| {
            // `off_t` is 32 bits on some 32-bit targets: a range beyond it
            // is left alone, as `range_call` leaves one beyond 64 bits.
            let (Some(offset), Some(len)) = (
                libc::off_t::try_from(offset).ok(),
                libc::off_t::try_from(len).ok(),
            ) else {
                return 0;
            };
            // SAFETY: as in `start_writeback`.
            unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, offset, len) }
        })
    }

    fn sync_data(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(path)?
            .map(|e| e.map(|e| e.path()))
            .collect()
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
}

/// A shared [`FileSystem`], as carried by [`LogConfig`](crate::LogConfig) and
/// [`StoreOptions`](crate::StoreOptions). Two handles are equal when they
/// share one file system. The default is [`OsFileSystem`].
#[derive(Clone)]
pub struct FsHandle(Arc<dyn FileSystem>);

impl FsHandle {
    /// Wraps a file system.
    pub fn new(fs: Arc<dyn FileSystem>) -> FsHandle {
        FsHandle(fs)
    }

    /// Whether this is a handle of the operating system's file system made
    /// by `FsHandle::default()`.
    pub fn is_os(&self) -> bool {
        Arc::ptr_eq(&self.0, &os())
    }
}

fn os() -> Arc<dyn FileSystem> {
    static OS: std::sync::OnceLock<Arc<dyn FileSystem>> = std::sync::OnceLock::new();
    Arc::clone(OS.get_or_init(|| Arc::new(OsFileSystem)))
}

impl Default for FsHandle {
    fn default() -> Self {
        FsHandle(os())
    }
}

impl std::ops::Deref for FsHandle {
    type Target = dyn FileSystem;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl PartialEq for FsHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FsHandle {}

impl fmt::Debug for FsHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_os() {
            "FsHandle(os)"
        } else {
            "FsHandle(custom)"
        })
    }
}

impl<T: FileSystem> From<Arc<T>> for FsHandle {
    fn from(fs: Arc<T>) -> Self {
        FsHandle(fs)
    }
}

/// A system call on the range `[offset, offset + len)` of `file`, made by
/// `call` with its descriptor and the range as signed 64-bit numbers: `Ok`
/// when the call returns 0, else the system's error. A range beyond them
/// is left alone (both callers are hints).
#[cfg(target_os = "linux")]
fn range_call(
    file: &File,
    offset: u64,
    len: u64,
    call: impl FnOnce(libc::c_int, i64, i64) -> libc::c_int,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    if call(file.as_raw_fd(), offset, len) == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vectored write lands as one write of the concatenation would: more
    /// parts than one call takes (1,024), empty parts among them, at an
    /// offset past the end; and the default (a part at a time) agrees.
    #[test]
    fn write_parts_at_writes_the_concatenation() {
        let dir = tempfile::tempdir().unwrap();
        let parts: Vec<Vec<u8>> = (0..2500u32)
            .map(|i| {
                let len = (i * 7919 % 61) as usize;
                (0..len).map(|j| (i as usize * 31 + j) as u8).collect()
            })
            .collect();
        let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let want: Vec<u8> = parts.concat();
        assert!(slices.iter().any(|p| p.is_empty()) && slices.len() > 1024);
        struct PartAtATime;
        impl PartAtATime {
            fn write(path: &Path, parts: &[&[u8]], at: u64) {
                let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
                let mut off = at;
                for p in parts {
                    f.write_all_at(p, off).unwrap();
                    off += p.len() as u64;
                }
            }
        }
        for (name, vectored) in [("os", true), ("default", false)] {
            let path = dir.path().join(name);
            std::fs::write(&path, b"head").unwrap();
            if vectored {
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                OsFileSystem.write_parts_at(&f, &path, &slices, 10).unwrap();
            } else {
                PartAtATime::write(&path, &slices, 10);
            }
            let got = std::fs::read(&path).unwrap();
            assert_eq!(&got[..4], b"head");
            assert_eq!(&got[4..10], &[0u8; 6]);
            assert_eq!(&got[10..], &want[..], "{name}");
        }
        // Nothing to write, or only empty parts: nothing changes.
        let path = dir.path().join("os");
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        OsFileSystem.write_parts_at(&f, &path, &[], 0).unwrap();
        OsFileSystem
            .write_parts_at(&f, &path, &[&[], &[]], 0)
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 10 + want.len());
    }
}
