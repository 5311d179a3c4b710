//! The group commit's races, driven from inside.

use super::*;
use crate::log::config::Durability;
use crate::{Compression, Record};

/// A log poisoned while a group-commit leader gathers appends (say, a
/// rolled segment's background flush failed) acknowledges nothing, even
/// though the leader's own fsync succeeds.
#[test]
fn a_leader_poisoned_while_gathering_acknowledges_nothing() {
    // The leader gathers for at most `GATHER_WAIT`: on a loaded machine
    // this thread may not see it gathering in time. Such an attempt (the
    // leader fsyncs and returns unpoisoned) is retried on a fresh log.
    for attempt in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
        let records = [Record::new("v")];
        log.append_records(&records, Compression::None, Durability::Written)
            .unwrap();
        // An `Fsync` append in flight: the leader waits for it to gather.
        log.durable.lock().appending = 1;
        let poisoned = std::thread::scope(|s| {
            let leader = s.spawn(|| log.sync_to(log.log_end_offset()));
            // Seen gathering and poisoned under one lock: the leader
            // cannot leave its gather wait in between.
            let poisoned = loop {
                let d = log.durable.lock();
                if d.gathering {
                    log.poisoned.store(true, Ordering::Release);
                    break true;
                }
                if leader.is_finished() {
                    break false;
                }
                drop(d);
                std::thread::yield_now();
            };
            log.round_end.notify();
            log.gather_cv.notify_all();
            let result = leader.join().unwrap();
            if poisoned {
                assert!(matches!(result, Err(Error::Poisoned { .. })), "{result:?}");
            } else {
                assert!(result.is_ok(), "{result:?}");
            }
            poisoned
        });
        if !poisoned {
            assert!(attempt < 1000, "never saw the leader gathering");
            continue;
        }
        let d = log.durable.lock();
        assert_eq!(d.synced, 0, "nothing acknowledged as durable");
        assert_eq!(d.fsyncs, 1, "the leader's fsync ran");
        return;
    }
}

/// Followers waiting on a leader are all woken when its round ends, and
/// every one of their appends is durable when they return.
#[test]
fn every_follower_returns_with_its_append_durable() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
    let records = [Record::new("v"), Record::new("w")];
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    let info = log
                        .append_records(&records, Compression::None, Durability::Fsync)
                        .unwrap();
                    assert!(log.durable.lock().synced > info.last_offset);
                }
            });
        }
    });
    assert_eq!(log.log_end_offset(), 800);
    // 400 appends shared their fsyncs.
    assert!(log.fsync_count() < 400, "{} fsyncs", log.fsync_count());
}
