//! Fault injection (feature `failpoints`): make chosen file operations of
//! the log fail, to test that every failure leaves the store consistent.
//! Without the feature every check compiles to nothing.
//!
//! A fail point names an operation and a path fragment (tests use their own
//! temporary directory, so parallel tests don't see each other's faults) and
//! fails the next `times` matching calls with the given OS error.

use std::io;
use std::path::Path;

/// A file operation that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailOp {
    /// The `pwrite` of an append: nothing is written.
    Write,
    /// The `pwrite` of an append writes half of its bytes, then fails.
    ShortWrite,
    /// `fdatasync` of a segment.
    Fsync,
    /// Cutting a segment back after a failed write.
    CutBack,
}

#[cfg(feature = "failpoints")]
mod imp {
    use super::FailOp;
    use parking_lot::Mutex;
    use std::path::Path;

    pub(super) type Observer = Box<dyn Fn(&Path) + Send + Sync>;
    /// Called after every successful fsync (of a segment or a directory)
    /// on a path containing the fragment.
    pub(super) static AFTER_FSYNC: Mutex<Vec<(String, Observer)>> = Mutex::new(Vec::new());

    pub(super) struct Point {
        pub(super) op: FailOp,
        pub(super) path: String,
        pub(super) times: u32,
        pub(super) errno: i32,
    }

    pub(super) static POINTS: Mutex<Vec<Point>> = Mutex::new(Vec::new());
}

/// Fails the next `times` calls of `op` on files whose path contains
/// `path_fragment`, with OS error `errno` (e.g. `libc::EIO`,
/// `libc::ENOSPC`).
#[cfg(feature = "failpoints")]
pub fn inject(op: FailOp, path_fragment: &Path, times: u32, errno: i32) {
    imp::POINTS.lock().push(imp::Point {
        op,
        path: path_fragment.to_string_lossy().into_owned(),
        times,
        errno,
    });
}

/// Removes every fail point on paths containing `path_fragment`.
#[cfg(feature = "failpoints")]
pub fn clear(path_fragment: &Path) {
    let p = path_fragment.to_string_lossy();
    imp::POINTS.lock().retain(|f| !f.path.contains(p.as_ref()));
    imp::AFTER_FSYNC
        .lock()
        .retain(|(f, _)| !f.contains(p.as_ref()));
}

/// Runs `observer` after every successful fsync (of a segment's `.log` or
/// of a directory) on a path containing `path_fragment`, with that path: the
/// moments a power loss would leave exactly what was synced. Tests use it to
/// take crash images.
#[cfg(feature = "failpoints")]
pub fn after_fsync(path_fragment: &Path, observer: impl Fn(&Path) + Send + Sync + 'static) {
    imp::AFTER_FSYNC.lock().push((
        path_fragment.to_string_lossy().into_owned(),
        Box::new(observer),
    ));
}

/// Tells observers an fsync of `path` completed.
#[cfg(feature = "failpoints")]
pub(crate) fn synced(path: &Path) {
    let p = path.to_string_lossy();
    for (fragment, observer) in imp::AFTER_FSYNC.lock().iter() {
        if p.contains(fragment.as_str()) {
            observer(path);
        }
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn synced(_path: &Path) {}

/// Whether `op` on `path` should fail now (consuming one failure).
#[cfg(feature = "failpoints")]
pub(crate) fn check(op: FailOp, path: &Path) -> io::Result<()> {
    let path = path.to_string_lossy();
    let mut points = imp::POINTS.lock();
    let hit = points
        .iter_mut()
        .find(|f| f.op == op && f.times > 0 && path.contains(f.path.as_str()));
    match hit {
        Some(f) => {
            f.times -= 1;
            Err(io::Error::from_raw_os_error(f.errno))
        }
        None => Ok(()),
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn check(_op: FailOp, _path: &Path) -> io::Result<()> {
    Ok(())
}
