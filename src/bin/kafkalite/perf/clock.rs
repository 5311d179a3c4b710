//! The clock `perf produce` stamps each send and each completion with.
//!
//! Kafka's tool reads the wall clock twice a record (at the send and in
//! the callback). On this project's machine (a VM, `tsc` clock source) one
//! `clock_gettime(CLOCK_REALTIME)` through the vDSO costs 37–41 ns and a
//! bare `rdtsc` 13–16 ns (a C loop of 20,000,000 calls each), so two
//! wall-clock readings a record were a quarter of the time of a
//! one-thread run: the tool's cost, not the producer's. Where the CPU has
//! an invariant time-stamp counter (one that ticks at a constant rate in
//! every power state, which Linux also relies on when it uses `tsc` as its
//! clock source), the tool reads that counter and converts it to
//! microseconds since the epoch with a rate measured against the wall
//! clock when the clock is made; elsewhere it reads the wall clock. Only
//! the CPUID bit is checked: the tool takes the cores' counters to agree
//! (a callback may run on another core than its send), as Linux checks
//! before it uses `tsc` as its clock source; a completion read as earlier
//! than its send counts 0 µs.
//!
//! The one `unsafe` block reads the counter (`rdtsc`).

#![allow(unsafe_code)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Microseconds since the epoch, by the time-stamp counter if it is
/// invariant, else by the wall clock.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock {
    tsc: Option<Tsc>,
}

/// The counter's reading `base` at wall-clock microsecond `base_us`, and
/// microseconds a tick as a fraction of 2^32 (`us_per_tick_q32`).
#[derive(Clone, Copy, Debug)]
struct Tsc {
    base: u64,
    base_us: u64,
    us_per_tick_q32: u64,
}

/// How long `Clock::new` compares the counter with the wall clock: the
/// rate it measures is off by about the two readings' skew (well under a
/// microsecond) over this, a few parts per million.
const CALIBRATION: Duration = Duration::from_millis(20);

impl Clock {
    /// A clock, calibrated now (taking [`CALIBRATION`] if the counter is
    /// used).
    pub(super) fn new() -> Clock {
        Clock {
            tsc: invariant_counter().then(calibrate).flatten(),
        }
    }

    /// The wall clock only (for tests and CPUs without an invariant
    /// counter).
    #[cfg(test)]
    fn wall() -> Clock {
        Clock { tsc: None }
    }

    /// Microseconds since the epoch (0 before it).
    #[inline]
    pub(super) fn now_us(&self) -> u64 {
        match self.tsc {
            Some(t) => {
                let ticks = rdtsc().saturating_sub(t.base);
                let us = (u128::from(ticks) * u128::from(t.us_per_tick_q32)) >> 32;
                t.base_us.saturating_add(us as u64)
            }
            None => wall_clock_us(),
        }
    }
}

/// Microseconds since the epoch by the wall clock (0 before it), in
/// `u64` arithmetic (`Duration::as_micros` is `u128`).
fn wall_clock_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        d.as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(d.subsec_micros()))
    })
}

/// Reads the wall clock in nanoseconds and the counter as close together
/// as it can: the pair whose counter readings before and after the wall
/// clock's lie nearest, of a few tries, and the counter at their middle.
fn paired() -> (u128, u64) {
    let mut best = (u64::MAX, 0u128, 0u64);
    for _ in 0..5 {
        let before = rdtsc();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let after = rdtsc();
        let spread = after.saturating_sub(before);
        if spread < best.0 {
            best = (spread, wall, before + spread / 2);
        }
    }
    (best.1, best.2)
}

/// The counter's rate against the wall clock, measured over
/// [`CALIBRATION`]; `None` if it did not advance or the wall clock went
/// back meanwhile.
fn calibrate() -> Option<Tsc> {
    let (wall0, tsc0) = paired();
    let start = Instant::now();
    while start.elapsed() < CALIBRATION {
        std::thread::sleep(CALIBRATION.saturating_sub(start.elapsed()));
    }
    let (wall1, tsc1) = paired();
    let ticks = tsc1.checked_sub(tsc0).filter(|&t| t > 0)?;
    let ns = wall1.checked_sub(wall0).filter(|&n| n > 0)?;
    // µs a tick in 32.32 fixed point: ns · 2^32 / (1000 · ticks).
    let us_per_tick_q32 = u64::try_from((ns << 32) / (1000 * u128::from(ticks))).ok()?;
    Some(Tsc {
        base: tsc0,
        base_us: u64::try_from(wall0 / 1000).ok()?,
        us_per_tick_q32,
    })
}

/// Whether the CPU's time-stamp counter is invariant: CPUID leaf
/// 0x8000_0007, EDX bit 8 (Intel SDM vol. 3, 18.17.1; AMD APM vol. 3,
/// CPUID Fn8000_0007).
#[cfg(target_arch = "x86_64")]
fn invariant_counter() -> bool {
    use std::arch::x86_64::__cpuid;
    __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_counter() -> bool {
    false
}

/// The time-stamp counter.
#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC is part of every x86-64 CPU; it reads a register and
    // touches no memory (an OS that forbids it in user mode raises a
    // fault, a signal, not undefined behaviour). It buys a reading at a
    // third of the vDSO clock's cost (module docs).
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Never called: no other architecture's counter is used.
#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_keeps_to_the_wall_clock() {
        let clock = Clock::new();
        // The counter is used wherever it is invariant (it is on the
        // project's machine).
        assert_eq!(clock.tsc.is_some(), invariant_counter());
        let wall = Clock::wall();
        // Within 10 ms of the wall clock read just after (the rate is
        // measured to a few parts per million, but a loaded machine may
        // deschedule this thread between the two readings), and advancing
        // with it: a rate off by 5 % would be 10 ms off over 200 ms.
        let (a0, w0) = (clock.now_us(), wall.now_us());
        assert!(a0.abs_diff(w0) < 10_000, "counter {a0} µs, wall {w0} µs");
        std::thread::sleep(Duration::from_millis(200));
        let (a1, w1) = (clock.now_us(), wall.now_us());
        assert!(a1.abs_diff(w1) < 10_000, "counter {a1} µs, wall {w1} µs");
        let (da, dw) = (a1 - a0, w1 - w0);
        assert!(
            da >= 200_000 && da.abs_diff(dw) < 10_000,
            "{da} µs against {dw} µs"
        );
    }

    #[test]
    fn the_wall_clock_reading_is_in_microseconds_since_the_epoch() {
        let us = Clock::wall().now_us();
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        assert!(us / 1_000_000 <= secs && secs - us / 1_000_000 <= 1);
    }
}
