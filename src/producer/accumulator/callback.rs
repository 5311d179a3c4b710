//! A record's callback, kept in place when it is small.
//!
//! `send_with_callback` takes any closure. Boxed, every record cost an
//! allocation, freed when its batch completed, often on another thread
//! than the one that allocated it: glibc's per-size cache holds 7 blocks,
//! so a batch's ~50 callbacks freed together went back through its bins
//! and its arena lock (`valgrind --tool=callgrind`: ~270 of the ~1,400
//! instructions of a send). A closure of up to [`WORDS`] words (what a
//! callback usually captures: a channel's sender, an `Arc`, a few
//! numbers) is now stored in the callback itself; a larger or more
//! aligned one is boxed, and the box stored in its place.

#![allow(unsafe_code)]

use crate::error::Result;
use crate::producer::RecordMetadata;
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Words of room for a closure kept in place.
pub(crate) const WORDS: usize = 4;

type Space = [MaybeUninit<usize>; WORDS];

type Boxed = Box<dyn FnOnce(Result<RecordMetadata>) + Send>;

/// A `FnOnce(Result<RecordMetadata>) + Send + 'static`, run at most once
/// (dropped unrun if its record never completes).
pub(crate) struct Callback {
    /// The closure's bytes (or a [`Boxed`] of it), written by `new`.
    space: Space,
    /// Reads the closure of type `F` out of `space` and runs it with the
    /// outcome, or drops it when given `None`: `run::<F>` for the `F`
    /// written into `space`.
    run: unsafe fn(*mut MaybeUninit<usize>, Option<Result<RecordMetadata>>),
    /// Send, as every closure `new` takes is, but not Sync (nothing needs
    /// it, and the closures need not be).
    _not_sync: PhantomData<Cell<()>>,
}

impl Callback {
    pub(crate) fn new<F>(f: F) -> Callback
    where
        F: FnOnce(Result<RecordMetadata>) + Send + 'static,
    {
        if !fits::<F>() {
            // A `Boxed` is two words: it fits, and this `new` keeps it in
            // place.
            let boxed: Boxed = Box::new(f);
            return Callback::new(boxed);
        }
        let mut space: Space = [MaybeUninit::uninit(); WORDS];
        // SAFETY: `space` is large and aligned enough for an `F` (checked
        // above) and holds nothing yet; `run::<F>` is stored with it, so
        // the `F` is read back as the type it was written as, once (by
        // `call` or by `drop`, never both).
        unsafe { space.as_mut_ptr().cast::<F>().write(f) };
        Callback {
            space,
            run: run::<F>,
            _not_sync: PhantomData,
        }
    }

    /// Runs the closure with its record's outcome.
    pub(crate) fn call(self, outcome: Result<RecordMetadata>) {
        // Not dropped after: `run` takes the closure out.
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me.space` holds the closure `me.run` was made for, not
        // yet taken out (`call` consumes the callback, and `drop` will not
        // run for it).
        unsafe { (me.run)(me.space.as_mut_ptr(), Some(outcome)) }
    }
}

impl Drop for Callback {
    fn drop(&mut self) {
        // SAFETY: as in `call`: a callback that is dropped was never called.
        unsafe { (self.run)(self.space.as_mut_ptr(), None) }
    }
}

/// Whether an `F` is kept in a callback's own room.
const fn fits<F>() -> bool {
    size_of::<F>() <= size_of::<Space>() && align_of::<F>() <= align_of::<Space>()
}

/// Takes the `F` out of `space`, and runs it with `outcome` or drops it.
///
/// # Safety
/// `space` holds an `F`, written by `Callback::new`, not taken out before;
/// it is taken out here (so it must not be read again).
unsafe fn run<F>(space: *mut MaybeUninit<usize>, outcome: Option<Result<RecordMetadata>>)
where
    F: FnOnce(Result<RecordMetadata>),
{
    // SAFETY: the caller's: `space` holds an `F`, and this is its one read.
    let f = unsafe { space.cast::<F>().read() };
    if let Some(outcome) = outcome {
        f(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn meta(offset: i64) -> Result<RecordMetadata> {
        Ok(RecordMetadata {
            topic: Arc::from("t"),
            partition: 3,
            offset,
            timestamp: 7,
        })
    }

    /// Counts its drops, so a test sees every captured value freed once.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn small_and_large_closures_run_once_with_their_outcome_and_free_what_they_hold() {
        let drops = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(0));
        // One word, four words (the room), five words and an over-aligned
        // capture (both boxed), and a zero-sized closure.
        #[repr(align(64))]
        struct Aligned(u64);
        let mut callbacks = Vec::new();
        {
            let (c, s) = (Counted(Arc::clone(&drops)), Arc::clone(&seen));
            callbacks.push(Callback::new(move |m: Result<RecordMetadata>| {
                let _hold = &c;
                s.fetch_add(m.unwrap().offset as usize, Ordering::SeqCst);
            }));
        }
        {
            let (c, s, a, b) = (Counted(Arc::clone(&drops)), Arc::clone(&seen), 10u64, 20u64);
            callbacks.push(Callback::new(move |m: Result<RecordMetadata>| {
                let _hold = &c;
                let m = m.unwrap();
                assert_eq!((m.partition, m.timestamp), (3, 7));
                s.fetch_add(m.offset as usize + (a + b) as usize, Ordering::SeqCst);
            }));
        }
        {
            let (c, s, big) = (Counted(Arc::clone(&drops)), Arc::clone(&seen), [1u64; 4]);
            callbacks.push(Callback::new(move |m: Result<RecordMetadata>| {
                let _hold = &c;
                s.fetch_add(
                    m.unwrap().offset as usize + big.iter().sum::<u64>() as usize,
                    Ordering::SeqCst,
                );
            }));
        }
        {
            let (c, s, al) = (Counted(Arc::clone(&drops)), Arc::clone(&seen), Aligned(100));
            callbacks.push(Callback::new(move |m: Result<RecordMetadata>| {
                let _hold = &c;
                s.fetch_add(m.unwrap().offset as usize + al.0 as usize, Ordering::SeqCst);
            }));
        }
        callbacks.push(Callback::new(
            |m: Result<RecordMetadata>| assert!(m.is_ok()),
        ));
        for (i, cb) in callbacks.into_iter().enumerate() {
            cb.call(meta(1000 * (i as i64 + 1)));
        }
        // 1000 + (2000 + 30) + (3000 + 4) + (4000 + 100) + 0
        assert_eq!(seen.load(Ordering::SeqCst), 10_134);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn closures_of_up_to_four_words_are_kept_in_place() {
        fn fits_closure<F: FnOnce(Result<RecordMetadata>)>(_: &F) -> bool {
            fits::<F>()
        }
        let (a, b, c, d, e) = (1u64, 2u64, 3u64, 4u64, 5u64);
        assert!(fits_closure(&|_| {}));
        assert!(fits_closure(&move |_| assert_ne!(a + b + c + d, 0)));
        assert!(!fits_closure(&move |_| assert_ne!(a + b + c + d + e, 0)));
        assert!(fits::<Boxed>());
        #[repr(align(16))]
        struct Wide(u8);
        let w = Wide(1);
        assert!(!fits_closure(&move |_| {
            let w = w;
            assert_eq!(w.0, 1);
        }));
    }

    #[test]
    fn a_callback_never_run_is_dropped_with_what_it_holds() {
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(AtomicUsize::new(0));
        for large in [false, true] {
            let c = Counted(Arc::clone(&drops));
            let r = Arc::clone(&ran);
            let padding = [0u64; 4];
            // Two words in place, or six boxed.
            let cb = if large {
                Callback::new(move |_| {
                    let _hold = (&c, &padding);
                    r.fetch_add(1, Ordering::SeqCst);
                })
            } else {
                Callback::new(move |_| {
                    let _hold = &c;
                    r.fetch_add(1, Ordering::SeqCst);
                })
            };
            drop(cb);
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_callback_runs_on_another_thread_with_an_error() {
        let (tx, rx) = std::sync::mpsc::channel();
        let cb = Callback::new(move |m: Result<RecordMetadata>| {
            tx.send(m.is_err()).unwrap();
        });
        std::thread::spawn(move || cb.call(Err(Error::Closed)))
            .join()
            .unwrap();
        assert!(rx.recv().unwrap());
    }

    #[test]
    fn a_panicking_callback_frees_what_it_holds_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let c = Counted(Arc::clone(&drops));
        let cb = Callback::new(move |_| {
            let _hold = &c;
            panic!("callback panics");
        });
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb.call(meta(0))));
        assert!(r.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
