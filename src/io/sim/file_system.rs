//! [`FileSystem`] for [`SimFs`]: each call checks the faults, runs on the
//! real file system, then journals what it changed under the root.

use super::journal::Change;
use super::{err, key, FaultKind, Op, SimFs};
use crate::io::fs::{FileSystem, OpenMode, OsFileSystem};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

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
            Some(FaultKind::ShortWrite(e)) => (data.split_at(data.len() / 2).0, Some(e)),
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
