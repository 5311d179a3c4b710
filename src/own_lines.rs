//! A value on cache lines no other value shares.

use std::ops::Deref;

/// `T`, alone on its cache lines: aligned to, and padded out to, 128
/// bytes (x86's spatial prefetcher fetches lines in pairs).
///
/// For a field every thread writes beside fields they all read: sharing a
/// line, each such read misses once another core has written there. Every
/// send of a producer reads its partition's `log` (to see it is not
/// closed) before it takes the partition's lock, which the last sender
/// there wrote: with keyed records from two threads, the read would miss
/// about every other record (`docs/performance.md`).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct OwnLines<T>(pub(crate) T);

impl<T> Deref for OwnLines<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::OwnLines;
    use std::mem::{align_of, size_of};
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_value_fills_its_own_lines_and_fields_beside_it_start_past_them() {
        assert_eq!(align_of::<OwnLines<AtomicBool>>(), 128);
        assert_eq!(size_of::<OwnLines<AtomicBool>>(), 128);
        assert_eq!(size_of::<OwnLines<[u8; 129]>>(), 256);
        struct Beside {
            a: u64,
            flag: OwnLines<AtomicBool>,
            b: u64,
        }
        let v = Beside {
            a: 1,
            flag: OwnLines(AtomicBool::new(false)),
            b: 2,
        };
        let line = |p: usize| p / 128;
        let flag = &v.flag as *const _ as usize;
        for other in [&v.a as *const u64 as usize, &v.b as *const u64 as usize] {
            assert_ne!(line(other), line(flag));
            assert_ne!(line(other + 7), line(flag));
        }
        assert_eq!(v.a + v.b, 3);
    }
}
