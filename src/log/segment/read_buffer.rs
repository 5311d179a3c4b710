//! The buffer a thread `pread`s segment bytes into, reused.
//!
//! A read in [`ReadMode::Pread`](crate::ReadMode::Pread) hands out the
//! bytes it read as a [`Bytes`]. A fresh buffer for each read cost more than
//! the copy itself: allocating and zeroing a megabyte (and for the
//! allocator, mapping it) for every 1 MiB read. So each thread keeps the
//! buffers of its last two reads, and its next read reads into one again
//! if nothing else holds it any more (every `Bytes` of the last read was
//! dropped: a reader that consumes one read before the next, as a sequential
//! reader does); otherwise the next read takes a new buffer, and the old one
//! lives as long as its bytes do.
//!
//! Bounded: two buffers a thread, each of at most [`KEPT_BYTES`] (a larger
//! read's buffer is not kept). Bytes are never shared between two reads: a
//! buffer is read into again only when no `Bytes` of it is left.

use bytes::{Bytes, BytesMut};
use std::cell::RefCell;

/// The largest buffer a thread keeps for its next read.
const KEPT_BYTES: usize = 4 << 20;

/// How many buffers a thread keeps: a consumer's poll may return records
/// of two fetches, so the fetch after it finds the last buffer still held
/// and the one before free.
const KEPT: usize = 2;

thread_local! {
    /// References to the buffers of this thread's last reads, with their
    /// room, the newest last.
    static LAST: RefCell<Vec<(Bytes, usize)>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` initialised bytes to read into: one of the thread's
/// last ones that has the room if nothing else holds it, else a new one.
pub(super) fn take(len: usize) -> BytesMut {
    let reused = LAST
        .try_with(|l| {
            let mut l = l.try_borrow_mut().ok()?;
            let i = l
                .iter()
                .position(|(b, room)| *room >= len && b.is_unique())?;
            l.remove(i).0.try_into_mut().ok()
        })
        .ok()
        .flatten();
    match reused {
        Some(mut buf) if buf.capacity() >= len => {
            // Its bytes were written before: only room past them is zeroed.
            if buf.len() >= len {
                buf.truncate(len);
            } else {
                buf.resize(len, 0);
            }
            buf
        }
        _ => {
            // Room to spare (to the next power of two, within the bound),
            // so that the next read, of about the same size, fits: reads
            // of whole batches vary in length.
            let room = len
                .checked_next_power_of_two()
                .unwrap_or(len)
                .min(KEPT_BYTES)
                .max(len);
            let mut buf = BytesMut::with_capacity(room);
            buf.resize(len, 0);
            buf
        }
    }
}

/// The bytes read into `buf`, kept for the thread's next reads (in place of
/// the oldest kept) if small enough.
pub(super) fn keep(buf: BytesMut) -> Bytes {
    let room = buf.capacity();
    let bytes = buf.freeze();
    if bytes.len() <= KEPT_BYTES {
        let _ = LAST.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                if l.len() >= KEPT {
                    l.remove(0);
                }
                l.push((bytes.clone(), room));
            }
        });
    }
    bytes
}

/// The lengths of the reads whose buffers this thread keeps, oldest first.
#[cfg(test)]
fn kept_lens() -> Vec<usize> {
    LAST.with(|l| l.borrow().iter().map(|(b, _)| b.len()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(len: usize, byte: u8) -> Bytes {
        let mut b = take(len);
        b.fill(byte);
        keep(b)
    }

    #[test]
    fn a_buffer_is_reused_only_when_no_bytes_of_it_are_left() {
        LAST.with(|l| l.borrow_mut().clear());
        let a = filled(1000, 1);
        let a_ptr = a.as_ptr();
        // a is held: the next read gets a buffer of its own.
        let b = filled(1000, 2);
        let b_ptr = b.as_ptr();
        assert_ne!(b_ptr, a_ptr);
        assert!(a.iter().all(|&v| v == 1), "held bytes unchanged");
        drop(a);
        // Nothing holds a's buffer: read into again.
        let c = take(1000);
        assert_eq!(c.as_ptr(), a_ptr);
        // A slice of b holds b's buffer, and c holds a's: a new one.
        let tail = b.slice(900..);
        drop(b);
        let c = keep(c);
        let d = take(1000);
        assert!(d.as_ptr() != a_ptr && d.as_ptr() != b_ptr);
        assert!(tail.iter().all(|&v| v == 2), "held bytes unchanged");
        drop(c);
    }

    #[test]
    fn a_free_buffer_is_read_into_again_with_the_room_past_its_bytes_zeroed() {
        LAST.with(|l| l.borrow_mut().clear());
        let a = filled(600, 7);
        let ptr = a.as_ptr();
        drop(a);
        let b = take(300);
        assert_eq!(b.as_ptr(), ptr, "the free buffer is reused");
        assert!(b.iter().all(|&v| v == 7), "its bytes, not zeroed again");
        drop(keep(b));
        // 1,000 fits the room (600 rounded up to 1,024): the bytes past
        // the last read's 300 are zeroed.
        let c = take(1000);
        assert_eq!(c.as_ptr(), ptr);
        assert!(c[..300].iter().all(|&v| v == 7));
        assert!(c[300..].iter().all(|&v| v == 0));
    }

    #[test]
    fn a_read_takes_a_free_buffer_with_the_room_it_needs() {
        LAST.with(|l| l.borrow_mut().clear());
        let big = filled(5000, 1);
        let small = filled(100, 2);
        let big_ptr = big.as_ptr();
        drop((big, small));
        // Both free: the small one (kept last) lacks the room and stays.
        let b = take(4000);
        assert_eq!(b.as_ptr(), big_ptr);
        assert_eq!(kept_lens(), vec![100]);
    }

    #[test]
    fn at_most_two_buffers_within_the_bound_are_kept() {
        LAST.with(|l| l.borrow_mut().clear());
        let held: Vec<Bytes> = (0..5).map(|i| filled(100 + i, 1)).collect();
        assert_eq!(kept_lens(), vec![103, 104]);
        drop(held);
        drop(keep(take(KEPT_BYTES + 1)));
        // The larger read found no kept buffer with the room, and is not
        // kept itself.
        assert_eq!(kept_lens(), vec![103, 104]);
        drop(keep(take(KEPT_BYTES)));
        assert_eq!(kept_lens(), vec![104, KEPT_BYTES]);
    }
}
