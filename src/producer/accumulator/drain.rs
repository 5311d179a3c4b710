//! Appending a partition's sealed batches: one vectored write for all of
//! them, then their completions (see the module docs of `accumulator`).

use super::{PartitionQueue, SealedBatch, SPARE_CALLBACK_LISTS};
use crate::log::Durability;
use crate::record::Compression;
use std::sync::Arc;
use std::time::Instant;

impl PartitionQueue {
    /// Appends every sealed batch, in order. Returns the bytes of buffer
    /// memory released. Safe to call from any thread; if another thread is
    /// draining, it picks up what this one would have appended.
    pub(crate) fn drain(&self, durability: Durability, linger_zero: bool) -> usize {
        let mut released = 0;
        loop {
            let Some(guard) = self.drain.try_lock() else {
                return released;
            };
            let mut outs = Vec::new();
            let (doomed, taken): (Vec<SealedBatch>, Vec<SealedBatch>) = {
                let mut st = self.lock_state();
                if linger_zero {
                    self.seal(&mut st, Instant::now());
                }
                let failed_epoch = st.failure.as_ref().map(|f| f.epoch);
                st.sealed_bytes = 0;
                st.sealed_due = None;
                if st.sealed_by != 0 {
                    st.sealed_by = 0;
                    self.sealed_by
                        .store(0, std::sync::atomic::Ordering::Relaxed);
                }
                // Epochs rise in seal order: the doomed batches come first.
                let (doomed, taken): (Vec<_>, Vec<_>) = st
                    .sealed
                    .drain(..)
                    .partition(|b| failed_epoch.is_some_and(|e| b.epoch <= e));
                // A compressed batch is built into a spare buffer too.
                if self.compression != Compression::None {
                    outs.extend(
                        taken
                            .iter()
                            .map(|b| st.spare_buffers.take(b.builder.spare_room())),
                    );
                }
                (doomed, taken)
            };
            if !doomed.is_empty() {
                let failure = {
                    let st = self.lock_state();
                    st.failure
                        .as_ref()
                        .map(|f| (Arc::clone(&f.error), Arc::clone(&f.seen)))
                };
                if let Some((error, seen)) = failure {
                    for mut b in doomed {
                        released += b.reserved;
                        b.completion.complete(
                            &self.topic,
                            self.partition,
                            Err(Arc::clone(&error)),
                            Some(&seen),
                            &mut b.callbacks,
                        );
                    }
                }
            }
            if taken.is_empty() {
                drop(guard);
                // Re-check: a batch sealed after our look but before our
                // unlock found the lock taken and left it to us.
                if self.lock_state().sealed.is_empty() {
                    return released;
                }
                continue;
            }
            // Group commit: count this append until it is written.
            let appending = self.log.fsync_append(durability);
            let mut completions = Vec::with_capacity(taken.len());
            // Each batch in its own buffer, all written with one vectored
            // write (no copy into one buffer).
            let mut bufs = Vec::with_capacity(taken.len());
            let mut left_over = Vec::with_capacity(outs.len());
            let mut outs = outs.into_iter();
            for b in taken {
                released += b.reserved;
                let (built, left) = b.builder.build_reusing(outs.next().unwrap_or_default());
                bufs.push(built);
                left_over.push(left);
                completions.push((b.completion, b.callbacks));
            }
            let write_durability = match durability {
                Durability::Fsync => Durability::Fsync,
                _ => Durability::Written,
            };
            let max = self.log.config().settings.max_message_bytes;
            let written = bufs
                .iter()
                .try_fold(Vec::with_capacity(bufs.len()), |mut all, b| {
                    all.extend(crate::log::parse_headers(b, max, false)?);
                    Ok(all)
                })
                .and_then(|headers| {
                    let mut parts: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
                    self.log
                        .write_validated_parts(&mut parts, &headers, write_durability)
                        .map(|(info, sync)| (info, sync, headers))
                });
            drop(appending);
            // A failed write latches before the next drainer can look, so
            // no batch sealed behind these is written after the gap.
            let written = written.map_err(|e| {
                let e = Arc::new(e);
                let seen = self.lock_state().latch(&e);
                (e, seen)
            });
            drop(guard);
            let result = written.and_then(|(info, sync, headers)| {
                if sync {
                    if let Err(e) = self.log.sync_to(info.last_offset + 1) {
                        let e = Arc::new(e);
                        let seen = self.lock_state().latch(&e);
                        return Err((e, seen));
                    }
                }
                Ok((info, headers))
            });
            match result {
                Ok((info, headers)) => {
                    let mut base = info.base_offset;
                    for ((c, callbacks), h) in completions.iter_mut().zip(&headers) {
                        c.complete(&self.topic, self.partition, Ok(base), None, callbacks);
                        base += i64::from(h.last_offset_delta) + 1;
                    }
                }
                Err((e, seen)) => {
                    for (c, callbacks) in &mut completions {
                        c.complete(
                            &self.topic,
                            self.partition,
                            Err(Arc::clone(&e)),
                            Some(&seen),
                            callbacks,
                        );
                    }
                }
            }
            let mut st = self.lock_state();
            let room = SPARE_CALLBACK_LISTS.saturating_sub(st.spare_callbacks.len());
            let spares = completions
                .into_iter()
                .map(|(_, list)| list)
                .filter(|list| list.capacity() > 0);
            st.spare_callbacks.extend(spares.take(room));
            // Records' buffers first (after compression they are the ones
            // left over), then what the batches were compressed into.
            for buf in left_over.into_iter().chain(bufs).chain(outs) {
                st.spare_buffers.keep(buf);
            }
            if st.sealed.is_empty() {
                return released;
            }
        }
    }
}
