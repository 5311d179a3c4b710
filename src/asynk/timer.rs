//! One process-wide timer thread for the async API's timeouts.
//!
//! Deadlines and their wakers sit in a map ordered by deadline; the thread
//! sleeps on a condition variable until the first one, wakes every waker
//! that is due, and goes back to sleep. Only a deadline before the one it
//! sleeps until wakes it (a cancelled deadline costs it at most one
//! spurious wake-up, not one per registration). It is spawned by the first registration and
//! exits after [`IDLE`] with nothing registered; a later registration
//! spawns it again. If a thread cannot be spawned, the waker is woken at
//! once instead: the future polls again (a busy wait, never a hang).

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::task::Waker;
use std::time::{Duration, Instant};

/// How long the thread stays with nothing to do before it exits.
const IDLE: Duration = Duration::from_secs(1);

/// One registered deadline; pass it back to re-register or cancel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    deadline: Instant,
    id: u64,
}

impl TimerKey {
    /// When it fires.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }
}

#[derive(Default)]
struct State {
    entries: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
    running: bool,
    /// Until when the thread sleeps (`None` while it is awake): only a
    /// deadline before that needs to wake it.
    sleeping_until: Option<Instant>,
}

struct Timer {
    state: Mutex<State>,
    wake: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        state: Mutex::new(State::default()),
        wake: Condvar::new(),
    })
}

/// Wakes `waker` at `deadline`. With `key` from an earlier call for the
/// same deadline, only the waker is replaced; for another deadline, the
/// earlier one is cancelled.
pub(crate) fn register(deadline: Instant, key: &mut Option<TimerKey>, waker: &Waker) {
    let t = timer();
    let mut st = t.state.lock();
    if let Some(k) = *key {
        if k.deadline == deadline {
            if let Some(w) = st.entries.get_mut(&(k.deadline, k.id)) {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
                return;
            }
        } else {
            st.entries.remove(&(k.deadline, k.id));
        }
    }
    let id = st.next_id;
    st.next_id += 1;
    st.entries.insert((deadline, id), waker.clone());
    *key = Some(TimerKey { deadline, id });
    if !st.running {
        let spawned = std::thread::Builder::new()
            .name("kafkalite-timer".into())
            .spawn(|| run(timer()));
        match spawned {
            Ok(_) => st.running = true,
            Err(_) => {
                st.entries.remove(&(deadline, id));
                *key = None;
                drop(st);
                waker.wake_by_ref();
            }
        }
    } else if st.sleeping_until.is_some_and(|until| deadline < until) {
        t.wake.notify_one();
    }
}

/// Cancels a registration (a no-op once it fired).
pub(crate) fn cancel(key: TimerKey) {
    timer().state.lock().entries.remove(&(key.deadline, key.id));
}

fn run(t: &'static Timer) {
    let mut st = t.state.lock();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(entry) = st.entries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            MutexGuard::unlocked(&mut st, || super::wakers::wake_all(due));
            continue;
        }
        match st.entries.keys().next() {
            Some(&(deadline, _)) => {
                st.sleeping_until = Some(deadline);
                t.wake.wait_until(&mut st, deadline);
            }
            None => {
                st.sleeping_until = Some(now + IDLE);
                if t.wake.wait_for(&mut st, IDLE).timed_out() && st.entries.is_empty() {
                    st.sleeping_until = None;
                    st.running = false;
                    return;
                }
            }
        }
        st.sleeping_until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::task::Wake;

    struct Tx(Mutex<mpsc::Sender<Instant>>);
    impl Wake for Tx {
        fn wake(self: Arc<Self>) {
            let _ = self.0.lock().send(Instant::now());
        }
    }

    fn waker() -> (Waker, mpsc::Receiver<Instant>) {
        let (tx, rx) = mpsc::channel();
        (Waker::from(Arc::new(Tx(Mutex::new(tx)))), rx)
    }

    #[test]
    fn a_deadline_wakes_its_waker_not_before_it() {
        let (w, rx) = waker();
        let deadline = Instant::now() + Duration::from_millis(30);
        let mut key = None;
        register(deadline, &mut key, &w);
        let woke = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("timer never fired");
        assert!(woke >= deadline);
    }

    #[test]
    fn an_earlier_deadline_registered_later_fires_first() {
        let (late, late_rx) = waker();
        let (early, early_rx) = waker();
        let (mut k1, mut k2) = (None, None);
        register(Instant::now() + Duration::from_secs(3), &mut k1, &late);
        register(Instant::now() + Duration::from_millis(20), &mut k2, &early);
        assert!(early_rx.recv_timeout(Duration::from_secs(2)).is_ok());
        assert!(late_rx.try_recv().is_err());
        if let Some(k) = k1 {
            cancel(k);
        }
    }

    /// Whether a thread named `kafkalite-timer` runs in this process (Linux:
    /// the names under /proc/self/task).
    #[cfg(target_os = "linux")]
    fn timer_thread_runs() -> bool {
        std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
            .any(|name| name.trim() == "kafkalite-timer")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_timer_thread_starts_for_a_deadline_and_exits_when_idle() {
        let (w, rx) = waker();
        let mut key = None;
        register(Instant::now() + Duration::from_millis(10), &mut key, &w);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
        // The thread that woke us stays a second before it exits.
        assert!(timer_thread_runs());
        // Gone within IDLE of the last deadline (other tests here register
        // only short ones).
        let deadline = Instant::now() + IDLE * 5;
        while timer_thread_runs() {
            assert!(Instant::now() < deadline, "the timer thread never exited");
            std::thread::sleep(Duration::from_millis(50));
        }
        // And a new deadline starts it again.
        register(Instant::now() + Duration::from_millis(10), &mut key, &w);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn a_cancelled_deadline_never_wakes() {
        let (w, rx) = waker();
        let mut key = None;
        register(Instant::now() + Duration::from_millis(20), &mut key, &w);
        if let Some(k) = key {
            cancel(k);
        }
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    }
}
