//! The backends, each written as that crate's documentation shows its use.

use super::{Backend, Res, Sum};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub fn open(name: &str, dir: &Path) -> Res<Box<dyn Backend>> {
    std::fs::create_dir_all(dir)?;
    Ok(match name {
        "kafkalite" => Box::new(Kafkalite::open(
            dir,
            kafkalite::Compression::None,
            Mode::Batch,
        )?),
        "kafkalite-lz4" => Box::new(Kafkalite::open(
            dir,
            kafkalite::Compression::Lz4,
            Mode::Batch,
        )?),
        "kafkalite-records" => Box::new(Kafkalite::open(
            dir,
            kafkalite::Compression::None,
            Mode::Records,
        )?),
        "kafkalite-consumer" => Box::new(Kafkalite::open(
            dir,
            kafkalite::Compression::None,
            Mode::Consumer,
        )?),
        "commitlog" => Box::new(Commitlog::open(dir)?),
        "raft-engine" => Box::new(RaftEngine::open(dir)?),
        "sqlite" => Box::new(Sqlite::open(dir)?),
        "fjall" => Box::new(Fjall::open(dir)?),
        other => return Err(format!("unknown backend {other}").into()),
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `BatchBuilder::push_parts` + `append_batch`; `for_each_record`.
    Batch,
    /// `Store::append(Vec<Record>)`; `LogRead::records()`.
    Records,
    /// As `Batch`, but S3 reads through `Consumer::poll`.
    Consumer,
}

struct Kafkalite {
    store: kafkalite::Store,
    log: Arc<kafkalite::PartitionLog>,
    compression: kafkalite::Compression,
    mode: Mode,
}

impl Kafkalite {
    fn open(dir: &Path, compression: kafkalite::Compression, mode: Mode) -> Res<Kafkalite> {
        let store = kafkalite::Store::open(dir, kafkalite::StoreOptions::default())?;
        if store.list_topics().is_empty() {
            let mut t = kafkalite::TopicConfig::default();
            t.compression = compression;
            store.create_topic("t", 1, t)?;
        }
        let log = store.partition("t", 0)?;
        Ok(Kafkalite {
            store,
            log,
            compression,
            mode,
        })
    }
}

impl Drop for Kafkalite {
    fn drop(&mut self) {
        let _ = self.store.close();
    }
}

impl Backend for Kafkalite {
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()> {
        let durability = if sync {
            kafkalite::Durability::Fsync
        } else {
            kafkalite::Durability::Written
        };
        let ts = now_ms();
        if self.mode == Mode::Records {
            let recs: Vec<kafkalite::Record> = records
                .iter()
                .map(|p| kafkalite::Record::new(bytes::Bytes::copy_from_slice(p)).timestamp(ts))
                .collect();
            self.store.append("t", 0, &recs, durability)?;
            return Ok(());
        }
        let size: usize = records.iter().map(|r| r.len() + 8).sum();
        let mut b = kafkalite::BatchBuilder::with_capacity(self.compression, size);
        for r in records {
            b.push_parts(ts, None, Some(r), &[]);
        }
        self.log.append_batch(b, durability)?;
        Ok(())
    }

    fn sync(&mut self) -> Res<()> {
        self.log.flush()?;
        Ok(())
    }

    fn read_all(&mut self, sum: &mut Sum) -> Res<usize> {
        if self.mode == Mode::Consumer {
            let end = self.log.high_watermark() as usize;
            let mut c =
                kafkalite::Consumer::new(&self.store, kafkalite::ConsumerConfig::default())?;
            let tp = kafkalite::TopicPartition::new("t", 0);
            c.assign(std::slice::from_ref(&tp))?;
            c.seek(&tp, 0)?;
            let mut n = 0;
            while n < end {
                for r in &c.poll(Duration::from_millis(100))? {
                    sum.add(r.value.unwrap_or_default());
                    n += 1;
                }
            }
            return Ok(n);
        }
        let mut at = 0;
        let mut n = 0;
        loop {
            let read = self.log.read(at, 1 << 20)?;
            if read.is_empty() {
                return Ok(n);
            }
            if self.mode == Mode::Records {
                for r in read.records() {
                    sum.add(r?.value.as_deref().unwrap_or_default());
                    n += 1;
                }
            } else {
                n += read.for_each_record(|r| sum.add(r.value.unwrap_or_default()))?;
            }
            at = read.next_offset();
        }
    }

    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()> {
        let r = self.log.read_record(offset as i64)?.ok_or("no record")?;
        check(r.value.as_deref().unwrap_or_default());
        Ok(())
    }
}

struct Commitlog {
    log: commitlog::CommitLog,
    dir: PathBuf,
}

impl Commitlog {
    fn open(dir: &Path) -> Res<Commitlog> {
        let mut opts = commitlog::LogOptions::new(dir);
        // Its default (1 MB) refuses a batch of 1,000 1 KiB records.
        opts.message_max_bytes(16 << 20);
        Ok(Commitlog {
            log: commitlog::CommitLog::new(opts)?,
            dir: dir.to_owned(),
        })
    }

    /// `flush` writes the buffered bytes but does not fsync: the newest
    /// segment and index are `fdatasync`ed here, as a user needing
    /// durability must do.
    fn fsync(&mut self) -> Res<()> {
        self.log.flush()?;
        for ext in ["log", "index"] {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .collect();
            files.sort();
            if let Some(last) = files.last() {
                std::fs::OpenOptions::new()
                    .read(true)
                    .open(last)?
                    .sync_data()?;
            }
        }
        Ok(())
    }
}

impl Backend for Commitlog {
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()> {
        let mut buf = commitlog::message::MessageBuf::default();
        for r in records {
            buf.push(r).map_err(|e| format!("{e:?}"))?;
        }
        self.log.append(&mut buf)?;
        if sync {
            self.fsync()?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Res<()> {
        self.fsync()
    }

    fn read_all(&mut self, sum: &mut Sum) -> Res<usize> {
        let mut at = 0;
        let mut n = 0;
        loop {
            let buf = self
                .log
                .read(at, commitlog::ReadLimit::max_bytes(1 << 20))?;
            let before = n;
            for m in commitlog::message::MessageSet::iter(&buf) {
                sum.add(m.payload());
                at = m.offset() + 1;
                n += 1;
            }
            if n == before {
                return Ok(n);
            }
        }
    }

    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()> {
        let buf = self
            .log
            .read(offset, commitlog::ReadLimit::max_bytes(4096))?;
        let m = commitlog::message::MessageSet::iter(&buf)
            .next()
            .ok_or("no message")?;
        if m.offset() != offset {
            return Err("wrong offset".into());
        }
        check(m.payload());
        Ok(())
    }
}

/// raft-engine's entry type: raft's protobuf `Entry`.
struct EntryExt;

impl raft_engine::MessageExt for EntryExt {
    type Entry = raft_proto::eraftpb::Entry;

    fn index(e: &Self::Entry) -> u64 {
        e.index
    }
}

const REGION: u64 = 1;

struct RaftEngine {
    engine: raft_engine::Engine,
    next: u64,
}

impl RaftEngine {
    fn open(dir: &Path) -> Res<RaftEngine> {
        let cfg = raft_engine::Config {
            dir: dir.to_str().ok_or("path")?.to_owned(),
            ..Default::default()
        };
        let engine = raft_engine::Engine::open(cfg)?;
        let next = engine.last_index(REGION).map_or(1, |i| i + 1);
        Ok(RaftEngine { engine, next })
    }
}

impl Backend for RaftEngine {
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()> {
        let entries: Vec<raft_proto::eraftpb::Entry> = records
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let mut e = raft_proto::eraftpb::Entry::default();
                e.index = self.next + k as u64;
                e.term = 1;
                e.data = r.to_vec().into();
                e
            })
            .collect();
        let mut batch = raft_engine::LogBatch::default();
        batch.add_entries::<EntryExt>(REGION, &entries)?;
        self.engine.write(&mut batch, sync)?;
        self.next += records.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Res<()> {
        self.engine.sync()?;
        Ok(())
    }

    fn read_all(&mut self, sum: &mut Sum) -> Res<usize> {
        let Some(last) = self.engine.last_index(REGION) else {
            return Ok(0);
        };
        let mut at = self.engine.first_index(REGION).unwrap_or(1);
        let mut n = 0;
        let mut buf = Vec::with_capacity(1000);
        while at <= last {
            buf.clear();
            let end = (at + 1000).min(last + 1);
            self.engine
                .fetch_entries_to::<EntryExt>(REGION, at, end, None, &mut buf)?;
            for e in &buf {
                sum.add(&e.data);
                n += 1;
            }
            at = end;
        }
        Ok(n)
    }

    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()> {
        let e = self
            .engine
            .get_entry::<EntryExt>(REGION, offset + 1)?
            .ok_or("no entry")?;
        check(&e.data);
        Ok(())
    }
}

struct Sqlite {
    conn: rusqlite::Connection,
    dir: PathBuf,
    next: i64,
    full: bool,
}

impl Sqlite {
    fn open(dir: &Path) -> Res<Sqlite> {
        let conn = rusqlite::Connection::open(dir.join("log.db"))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.execute(
            "CREATE TABLE IF NOT EXISTS log (offset INTEGER PRIMARY KEY, payload BLOB NOT NULL)",
            (),
        )?;
        let next: i64 =
            conn.query_row("SELECT COALESCE(MAX(offset) + 1, 0) FROM log", (), |r| {
                r.get(0)
            })?;
        Ok(Sqlite {
            conn,
            dir: dir.to_owned(),
            next,
            full: false,
        })
    }
}

impl Backend for Sqlite {
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()> {
        if sync && !self.full {
            // Every commit fsyncs the WAL.
            self.conn.pragma_update(None, "synchronous", "FULL")?;
            self.full = true;
        }
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached("INSERT INTO log (offset, payload) VALUES (?1, ?2)")?;
            for (k, r) in records.iter().enumerate() {
                st.execute((self.next + k as i64, r))?;
            }
        }
        tx.commit()?;
        self.next += records.len() as i64;
        Ok(())
    }

    fn sync(&mut self) -> Res<()> {
        // synchronous=NORMAL commits do not fsync the WAL: do it once.
        std::fs::OpenOptions::new()
            .read(true)
            .open(self.dir.join("log.db-wal"))?
            .sync_data()?;
        Ok(())
    }

    fn read_all(&mut self, sum: &mut Sum) -> Res<usize> {
        let mut st = self
            .conn
            .prepare("SELECT payload FROM log ORDER BY offset")?;
        let mut rows = st.query(())?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            sum.add(row.get_ref(0)?.as_blob()?);
            n += 1;
        }
        Ok(n)
    }

    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()> {
        let mut st = self
            .conn
            .prepare_cached("SELECT payload FROM log WHERE offset = ?1")?;
        let mut rows = st.query([offset as i64])?;
        let row = rows.next()?.ok_or("no row")?;
        check(row.get_ref(0)?.as_blob()?);
        Ok(())
    }
}

struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
    next: u64,
}

impl Fjall {
    fn open(dir: &Path) -> Res<Fjall> {
        let db = fjall::Database::builder(dir).open()?;
        let ks = db.keyspace("log", fjall::KeyspaceCreateOptions::default)?;
        let next = match ks.iter().next_back() {
            Some(g) => {
                let k = g.key()?;
                u64::from_be_bytes(k.as_ref().try_into()?) + 1
            }
            None => 0,
        };
        Ok(Fjall { db, ks, next })
    }
}

impl Backend for Fjall {
    fn append(&mut self, records: &[&[u8]], sync: bool) -> Res<()> {
        let mut b = self.db.batch();
        for (k, r) in records.iter().enumerate() {
            b.insert(&self.ks, (self.next + k as u64).to_be_bytes(), *r);
        }
        b.commit()?;
        self.next += records.len() as u64;
        if sync {
            self.db.persist(fjall::PersistMode::SyncData)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> Res<()> {
        self.db.persist(fjall::PersistMode::SyncData)?;
        Ok(())
    }

    fn read_all(&mut self, sum: &mut Sum) -> Res<usize> {
        let mut n = 0;
        for g in self.ks.iter() {
            sum.add(&g.value()?);
            n += 1;
        }
        Ok(n)
    }

    fn point(&mut self, offset: u64, check: &mut dyn FnMut(&[u8])) -> Res<()> {
        let v = self.ks.get(offset.to_be_bytes())?.ok_or("no key")?;
        check(&v);
        Ok(())
    }
}
