//! Memory maps: the one module whose purpose needs `unsafe` code (the
//! others: `OsFileSystem::start_writeback`'s system call and the record
//! walk's prefetch hint, one block each).
//!
//! Contract (see the crate docs): files mapped here are owned by the store,
//! created by it under its directory, and never modified from outside while
//! open. Within the crate:
//! - a segment's `.log` is mapped read-only and only ever appended to by
//!   `pwrite`; readers only touch bytes below the segment's published size,
//!   and a file is never truncated below a size that was published;
//! - an index file is mapped writable to its capacity, which may lie past
//!   its end; disk is reserved with `fallocate` in steps ahead of its
//!   entries, and stores through the map only touch reserved bytes, so they
//!   never hit a hole or the end of the file (no `SIGBUS` on `ENOSPC`); it
//!   is unmapped before it is trimmed.
#![allow(unsafe_code)]

use bytes::Bytes;
use memmap2::{Mmap, MmapMut, MmapOptions};
use std::fs::File;
use std::io;

/// Maps `len` bytes of `file` read-only and wraps them as `Bytes`, so slices
/// handed to readers keep the mapping alive after the file is deleted.
///
/// `len` may exceed the file's current size for a segment that grows by
/// appends: only bytes below the published size are ever read.
pub(crate) fn map_read(file: &File, len: usize) -> io::Result<Bytes> {
    if len == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: the file belongs to the store (created under its locked
    // directory); it is only appended to with pwrite and never truncated
    // below a published size, and callers read only below that size, so the
    // mapped bytes they see never change or vanish underneath them.
    let map: Mmap = unsafe { MmapOptions::new().len(len).map(file)? };
    Ok(Bytes::from_owner(map))
}

/// Maps an index file writable, `len` bytes (its capacity; the file may be
/// shorter: callers store only below the length they reserved).
pub(crate) fn map_write(file: &File, len: usize) -> io::Result<MmapMut> {
    // SAFETY: index files are owned by the store and only this process
    // writes them while the map is alive. Pages past the file's end are
    // mapped but never touched: `IndexFile` stores and reads only below the
    // length it reserved with fallocate (so no store hits a hole or the end
    // of the file), and the map is dropped before the file is trimmed.
    let map = unsafe { MmapOptions::new().len(len).map_mut(file)? };
    // Entries are appended sparsely (one per `index.interval.bytes` of log):
    // without this, each first touch of the preallocated file triggers
    // readahead that reads and zero-fills a large window, which dominated
    // appends to fresh segments. Only advice; a failure changes nothing.
    let _ = map.advise(memmap2::Advice::Random);
    Ok(map)
}

/// Reserves `len` bytes of disk for `file` so later writes through a map
/// cannot fail for lack of space: `posix_fallocate` where the C library
/// has it (Linux, Android, FreeBSD, DragonFly, illumos, Solaris), else
/// [`preallocate_by_writing`].
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "dragonfly",
    target_os = "illumos",
    target_os = "solaris"
))]
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "preallocation too large"))?;
    // SAFETY: plain FFI call on a valid open file descriptor; no memory is
    // passed.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match rc {
        0 => Ok(()),
        // glibc emulates fallocate where the filesystem lacks it; where even
        // that is refused, extend the file as Kafka does (a sparse tail).
        libc::EOPNOTSUPP | libc::ENOSYS => file.set_len(len as u64),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Where there is no `posix_fallocate` (macOS, iOS, NetBSD, OpenBSD):
/// [`preallocate_by_writing`].
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "dragonfly",
    target_os = "illumos",
    target_os = "solaris"
)))]
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    preallocate_by_writing(file, len)
}

/// The portable reservation: writes zeros from the file's end up to `len`,
/// so the blocks exist before the map touches them (a full disk fails this
/// write with `ENOSPC` instead of a store through the map with `SIGBUS`).
/// Never shrinks the file and never writes below its end. Index
/// preallocation goes in small steps, so the writes stay small.
#[cfg_attr(
    any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd",
        target_os = "dragonfly",
        target_os = "illumos",
        target_os = "solaris"
    ),
    allow(dead_code)
)]
pub(crate) fn preallocate_by_writing(file: &File, len: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    let mut at = file.metadata()?.len();
    while at < len {
        let n = usize::try_from(len - at).map_or(ZEROS.len(), |n| n.min(ZEROS.len()));
        let chunk = ZEROS.get(..n).unwrap_or(&ZEROS);
        file.write_all_at(chunk, at)?;
        at += chunk.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preallocating_by_writing_grows_with_zeros_and_never_shrinks_or_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").expect("write");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .expect("open");
        preallocate_by_writing(&file, 200_000).expect("preallocate");
        let data = std::fs::read(&path).expect("read");
        assert_eq!(data.len(), 200_000);
        assert_eq!(&data[..3], b"abc");
        assert!(data[3..].iter().all(|&b| b == 0));
        // Blocks are really there, not a hole (what a map needs).
        use std::os::unix::fs::MetadataExt;
        let blocks = std::fs::metadata(&path).expect("stat").blocks();
        assert!(blocks * 512 >= 200_000, "{blocks} blocks");
        preallocate_by_writing(&file, 10).expect("smaller");
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 200_000);
    }

    #[test]
    fn preallocate_reserves_the_length() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::create(dir.path().join("g")).expect("create");
        preallocate(&file, 65_536).expect("preallocate");
        assert_eq!(file.metadata().expect("stat").len(), 65_536);
    }
}
