//! One step: an operation byte (and what follows it) decoded into an
//! operation, run on log and model, then checked.

use super::{Harness, Input, BASE_TS};
use crate::log::{PartitionLog, RetentionPolicy};
use crate::{Durability, Error};
use bytes::Bytes;

impl Harness {
    pub(super) fn step(&mut self, input: &mut Input<'_>) {
        let op = input.byte();
        if op & 0x10 != 0 && matches!(op % 16, 0..=4 | 7 | 8 | 14) {
            self.arm(input);
        }
        let durability = match op >> 6 {
            0 => Durability::None,
            1 | 2 => Durability::Written,
            _ => Durability::Fsync,
        };
        let lz4 = op & 0x20 != 0;
        self.trace(op % 16);
        match op % 16 {
            0..=3 => {
                let n = 1 + usize::from(input.byte() % 8);
                let records = self.records(input, n, false);
                self.append(records, lz4, durability);
            }
            4 => {
                let n = 1 + usize::from(input.byte() % 3);
                let records = self.records(input, n, true);
                self.append(records, lz4, durability);
            }
            5 | 6 => {
                let span = self.end() - self.start + 5;
                let offset = self.start - 2 + i64::from(input.u16()) % span;
                let max_bytes = match input.byte() {
                    0 => usize::MAX,
                    b => usize::from(b) * 16,
                };
                self.check_read(offset, max_bytes);
            }
            7 => {
                if let Some(log) = self.log.take() {
                    match log.close() {
                        Ok(()) => {}
                        Err(e) if self.faulty => {
                            // Reopens the log.
                            self.log = Some(log);
                            self.after_fault(&e, &[]);
                        }
                        Err(e) => panic!("close failed: {e}"),
                    }
                }
                if self.log.is_none() {
                    self.reopen();
                }
                self.durable = self.end();
                self.check_all();
            }
            8 => {
                drop(self.log.take());
                let end = self.end();
                self.crash_recovered(end);
                self.check_all();
            }
            9 => {
                let cut = input.u16();
                self.cut_tail(cut);
                self.check_all();
            }
            10 => {
                let policy = RetentionPolicy {
                    retention_bytes: Some(u64::from(input.u16()) % 8192),
                    ..RetentionPolicy::default()
                };
                let out = self
                    .log()
                    .apply_retention(&policy, self.clock)
                    .unwrap_or_else(|e| panic!("retention failed: {e}"));
                self.advance_start(out.log_start_offset, out.log_start_offset);
                self.check_all();
            }
            11 => {
                let before =
                    self.start - 1 + i64::from(input.u16()) % (self.end() - self.start + 3);
                let result = self.log().delete_records(before);
                if before < 0 || before > self.end() {
                    assert!(
                        matches!(result, Err(Error::OffsetOutOfRange { .. })),
                        "delete_records({before}): {result:?}"
                    );
                } else {
                    let start = result.unwrap_or_else(|e| panic!("delete_records({before}): {e}"));
                    self.advance_start(start, before);
                }
                self.check_all();
            }
            12 | 13 => {
                self.compact(input);
                self.check_all();
            }
            14 => match self.log().flush() {
                Ok(()) => self.durable = self.end(),
                Err(e) if self.faulty => self.after_fault(&e, &[]),
                Err(e) => panic!("flush failed: {e}"),
            },
            _ => {
                let target = BASE_TS - 8 + i64::from(input.u16()) % (self.clock - BASE_TS + 24);
                self.check_offset_for_timestamp(target);
            }
        }
        // Rolled segments are flushed in the background: a fault armed for
        // this operation may have hit one of those flushes, whose failure
        // would otherwise surface in a later operation. Settle them now and
        // treat a failure as this operation's.
        if self.faulty {
            if let Some(Err(e)) = self.log.as_ref().map(PartitionLog::wait_for_rolled_flushes) {
                self.after_fault(&e, &[]);
            }
        }
        // A fault that did not fire (or was absorbed) is dropped here.
        self.disarm();
        self.check_offsets();
    }

    /// With `LOG_OPS_TRACE` set, prints each operation and the model state
    /// before it (for reading a fuzz finding).
    fn trace(&self, op: u8) {
        if std::env::var_os("LOG_OPS_TRACE").is_none() {
            return;
        }
        let model: Vec<_> = self
            .model
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| (r.key.clone(), r.value.as_ref().map(Bytes::len), r.timestamp))
            })
            .collect();
        eprintln!(
            "op {op}: start {} end {} durable {} segments {:?} model {model:?}",
            self.start,
            self.end(),
            self.durable,
            self.log().segment_base_offsets(),
        );
    }
}
