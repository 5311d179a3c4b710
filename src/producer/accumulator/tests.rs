//! The accumulator's own bounds.

use super::SPARE_CALLBACK_LISTS;
use crate::{Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig};

/// The emptied callback lists a partition keeps are reused and never
/// more than [`SPARE_CALLBACK_LISTS`], however many batches went out.
#[test]
fn spare_callback_lists_stay_bounded() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let c = ProducerConfig {
        batch_size: 1024,
        ..ProducerConfig::default()
    };
    let p = Producer::new(&s, c).unwrap();
    let queue = || {
        p.inner
            .queues
            .read()
            .get("t")
            .and_then(|v| v.first().cloned())
    };
    let mut most = 0;
    for round in 0..20 {
        for i in 0..200 {
            let r = ProducerRecord::new("t", format!("{round}-{i:0>200}")).partition(0);
            p.send_with_callback(r, |m| assert!(m.is_ok())).unwrap();
        }
        p.flush().unwrap();
        let q = queue().unwrap();
        let spares = q.state.lock().spare_callbacks.len();
        most = most.max(spares);
    }
    assert!(most > 0, "no list was kept for reuse");
    assert!(most <= SPARE_CALLBACK_LISTS, "{most} lists kept");
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 4000);
}
