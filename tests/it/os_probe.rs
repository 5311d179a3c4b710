//! The operating system's file system with a probe: every call goes to
//! `OsFileSystem`, and the probe sees the `.log` writes and the writeback
//! ranges started, for tests that check who wrote what, and may alter what
//! a directory listing shows.

use kafkalite::io::{FileSystem, OpenMode, OsFileSystem};
use std::fs::File;
use std::path::{Path, PathBuf};

/// What a probe is told.
pub trait Probe: Send + Sync + 'static {
    /// A write to a file (any file; `path` says which).
    fn write(&self, _path: &Path) {}
    /// A vectored write of `parts` buffers (told to `write` as well).
    fn write_parts(&self, _path: &Path, _parts: usize) {}
    /// A writeback range started.
    fn writeback(&self, _path: &Path, _offset: u64, _len: u64) {}
    /// Disk asked for past a file's end: `Err` refuses it (the system is
    /// not asked), `Ok` passes the request on.
    fn reserve(&self, _path: &Path, _offset: u64, _len: u64) -> std::io::Result<()> {
        Ok(())
    }
    /// A directory listed: returns the entries the caller gets.
    fn listed(&self, _dir: &Path, entries: Vec<PathBuf>) -> Vec<PathBuf> {
        entries
    }
}

/// `OsFileSystem`, telling `P` what it does.
#[derive(Default)]
pub struct Probed<P>(pub P);

impl<P: Probe> FileSystem for Probed<P> {
    fn open(&self, p: &Path, m: OpenMode) -> std::io::Result<File> {
        OsFileSystem.open(p, m)
    }
    fn len(&self, f: &File, p: &Path) -> std::io::Result<u64> {
        OsFileSystem.len(f, p)
    }
    fn metadata(&self, p: &Path) -> std::io::Result<std::fs::Metadata> {
        OsFileSystem.metadata(p)
    }
    fn read_at(&self, f: &File, p: &Path, b: &mut [u8], o: u64) -> std::io::Result<()> {
        OsFileSystem.read_at(f, p, b, o)
    }
    fn read(&self, p: &Path) -> std::io::Result<Vec<u8>> {
        OsFileSystem.read(p)
    }
    fn write_at(&self, f: &File, p: &Path, d: &[u8], o: u64) -> std::io::Result<()> {
        self.0.write(p);
        OsFileSystem.write_at(f, p, d, o)
    }
    fn write_parts_at(&self, f: &File, p: &Path, parts: &[&[u8]], o: u64) -> std::io::Result<()> {
        self.0.write(p);
        self.0.write_parts(p, parts.len());
        OsFileSystem.write_parts_at(f, p, parts, o)
    }
    fn set_len(&self, f: &File, p: &Path, len: u64) -> std::io::Result<()> {
        OsFileSystem.set_len(f, p, len)
    }
    fn allocate(&self, f: &File, p: &Path, len: u64) -> std::io::Result<()> {
        OsFileSystem.allocate(f, p, len)
    }
    fn start_writeback(&self, f: &File, p: &Path, offset: u64, len: u64) -> std::io::Result<()> {
        self.0.writeback(p, offset, len);
        OsFileSystem.start_writeback(f, p, offset, len)
    }
    fn reserve_past_end(&self, f: &File, p: &Path, offset: u64, len: u64) -> std::io::Result<()> {
        self.0.reserve(p, offset, len)?;
        OsFileSystem.reserve_past_end(f, p, offset, len)
    }
    fn sync_data(&self, f: &File, p: &Path) -> std::io::Result<()> {
        OsFileSystem.sync_data(f, p)
    }
    fn sync_all(&self, f: &File, p: &Path) -> std::io::Result<()> {
        OsFileSystem.sync_all(f, p)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        OsFileSystem.rename(from, to)
    }
    fn remove_file(&self, p: &Path) -> std::io::Result<()> {
        OsFileSystem.remove_file(p)
    }
    fn create_dir_all(&self, p: &Path) -> std::io::Result<()> {
        OsFileSystem.create_dir_all(p)
    }
    fn remove_dir_all(&self, p: &Path) -> std::io::Result<()> {
        OsFileSystem.remove_dir_all(p)
    }
    fn read_dir(&self, p: &Path) -> std::io::Result<Vec<PathBuf>> {
        OsFileSystem.read_dir(p).map(|e| self.0.listed(p, e))
    }
    fn sync_dir(&self, p: &Path) -> std::io::Result<()> {
        OsFileSystem.sync_dir(p)
    }
}
