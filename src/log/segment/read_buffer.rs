//! The buffer a thread `pread`s segment bytes into, reused.
//!
//! A read in [`ReadMode::Pread`](crate::ReadMode::Pread) hands out the
//! bytes it read as a [`Bytes`]. A fresh buffer for each read cost more than
//! the copy itself: allocating and zeroing a megabyte (and for the
//! allocator, mapping it) for every 1 MiB read. So each thread keeps the
//! buffer of its last read, and its next read reads into it again if
//! nothing else holds it any more (every `Bytes` of the last read was
//! dropped: a reader that consumes one read before the next, as a sequential
//! reader does); otherwise the next read takes a new buffer, and the old one
//! lives as long as its bytes do.
//!
//! Bounded: one buffer a thread, of at most [`KEPT_BYTES`] (a larger read's
//! buffer is not kept). Bytes are never shared between two reads: a
//! buffer is read into again only when no `Bytes` of it is left.

use bytes::{Bytes, BytesMut};
use std::cell::RefCell;

/// The largest buffer a thread keeps for its next read.
pub(crate) const KEPT_BYTES: usize = 8 << 20;

thread_local! {
    /// A reference to the buffer of this thread's last read.
    static LAST: RefCell<Option<Bytes>> = const { RefCell::new(None) };
}

/// A buffer of `len` initialised bytes to read into: the thread's last
/// one if nothing else holds it and it has the room, else a new one.
pub(super) fn take(len: usize) -> BytesMut {
    let last = LAST
        .try_with(|l| l.try_borrow_mut().ok().and_then(|mut l| l.take()))
        .ok()
        .flatten();
    match last.map(Bytes::try_into_mut) {
        Some(Ok(mut buf)) if buf.capacity() >= len => {
            // Its bytes were written before: only room past them is zeroed.
            if buf.len() >= len {
                buf.truncate(len);
            } else {
                buf.resize(len, 0);
            }
            buf
        }
        _ => BytesMut::zeroed(len),
    }
}

/// The bytes read into `buf`, kept for the thread's next read if small
/// enough.
pub(super) fn keep(buf: BytesMut) -> Bytes {
    let bytes = buf.freeze();
    if bytes.len() <= KEPT_BYTES {
        let _ = LAST.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                *l = Some(bytes.clone());
            }
        });
    }
    bytes
}

/// The length of the last read whose buffer this thread keeps (0 if none).
#[cfg(test)]
fn kept_len() -> usize {
    LAST.with(|l| l.borrow().as_ref().map_or(0, Bytes::len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_reused_only_when_no_bytes_of_it_are_left() {
        let mut a = take(1000);
        a.copy_from_slice(&[1u8; 1000]);
        let a = keep(a);
        let a_ptr = a.as_ptr();
        // Still held: the next read gets a buffer of its own.
        let mut b = take(1000);
        assert_ne!(b.as_ptr(), a_ptr);
        b.copy_from_slice(&[2u8; 1000]);
        let b = keep(b);
        assert_eq!(&a[..], &[1u8; 1000][..], "the held bytes are unchanged");
        let b_ptr = b.as_ptr();
        drop(a);
        // A slice of b still holds it.
        let tail = b.slice(900..);
        drop(b);
        let c = take(1000);
        assert_ne!(c.as_ptr(), b_ptr);
        assert_eq!(&tail[..], &[2u8; 100][..]);
        let c = keep(c);
        let c_ptr = c.as_ptr();
        drop(c);
        // Nothing holds c: read into again, shorter, then longer (the room
        // past its bytes zeroed).
        let d = take(300);
        assert_eq!(d.as_ptr(), c_ptr);
        assert_eq!(d.len(), 300);
        drop(keep(d));
        let e = take(1000);
        assert_eq!(e.as_ptr(), c_ptr, "room for 1000 was kept");
        assert_eq!(e.len(), 1000);
        assert!(e[300..].iter().all(|&x| x == 0));
    }

    #[test]
    fn a_read_larger_than_the_bound_is_not_kept() {
        drop(keep(take(100)));
        assert_eq!(kept_len(), 100);
        drop(keep(take(KEPT_BYTES + 1)));
        // The large buffer is not kept, and the small one it replaced is
        // gone: the thread keeps nothing.
        assert_eq!(kept_len(), 0);
        drop(keep(take(KEPT_BYTES)));
        assert_eq!(kept_len(), KEPT_BYTES);
    }
}
