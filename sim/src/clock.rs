//! Per-node clocks built on the world's true simulated time.
//!
//! The world has one true clock. Real machines do not: each has an initial offset from true
//! time, runs fast or slow by some parts per million (drift), and its wall clock can be stepped
//! forward or backward (NTP, an operator). A node here reads two clocks:
//!
//! - **monotonic**: starts at 0, advances at `1 + drift_ppm / 1e6` times true time, never jumps;
//! - **wall**: the epoch plus the initial offset plus monotonic time plus every jump so far.
//!
//! Drift can change mid-run (a fault); the clock keeps an anchor so that the monotonic reading
//! stays continuous across the change. All arithmetic is in integer microseconds, so readings are
//! identical on every machine. Not modelled: leap seconds, clock slewing (a gradual NTP
//! correction is a drift change), and sub-microsecond resolution.

use serde::{Deserialize, Serialize};
use std::cell::Cell;

/// The drift unit: parts per million.
const PPM: i128 = 1_000_000;

/// The lowest drift is above this: at -1 000 000 ppm a clock stands still.
pub(crate) const MIN_DRIFT_PPM: i64 = -1_000_000;

/// A node's clock at the start of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockSpec {
    /// Wall-clock offset from true time, ms.
    pub offset_ms: i64,
    /// Rate error, parts per million.
    pub drift_ppm: i64,
}

/// Checks a rate error: `Err` says why a clock with it would not be a clock.
pub fn check_drift_ppm(drift_ppm: i64) -> Result<(), String> {
    if drift_ppm <= MIN_DRIFT_PPM {
        Err(format!(
            "{drift_ppm} ppm would stop or reverse the clock: must be above {MIN_DRIFT_PPM}"
        ))
    } else {
        Ok(())
    }
}

/// The state of one node's clock. Cheap to copy; shared through [`crate::node::Node`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClockState {
    epoch_ms: i64,
    offset_ms: i64,
    drift_ppm: i64,
    anchor_sim_us: u64,
    anchor_monotonic_us: i64,
    jump_total_ms: i64,
}

/// One node's clock: offset, drift and jumps over true simulated time.
#[derive(Debug)]
pub struct NodeClock {
    state: Cell<ClockState>,
}

impl NodeClock {
    /// A clock whose wall time at true time 0 reads `epoch_ms + offset_ms`, running at
    /// `1 + drift_ppm / 1e6` times true time.
    ///
    /// # Panics
    /// If `drift_ppm <= -1_000_000` (a clock that stands still or runs backwards is not a clock;
    /// scenario validation rejects it before it gets here).
    pub fn new(epoch_ms: i64, offset_ms: i64, drift_ppm: i64) -> Self {
        assert!(drift_ppm > -1_000_000, "drift_ppm must be > -1_000_000");
        NodeClock {
            state: Cell::new(ClockState {
                epoch_ms,
                offset_ms,
                drift_ppm,
                anchor_sim_us: 0,
                anchor_monotonic_us: 0,
                jump_total_ms: 0,
            }),
        }
    }

    /// The monotonic reading in microseconds at true time `sim_us`.
    ///
    /// # Panics
    /// If `sim_us` is earlier than the last drift change: true time never goes backwards.
    pub fn monotonic_us(&self, sim_us: u64) -> i64 {
        let s = self.state.get();
        assert!(
            sim_us >= s.anchor_sim_us,
            "true time went backwards: {sim_us} < {}",
            s.anchor_sim_us
        );
        let elapsed_true = i128::from(sim_us - s.anchor_sim_us);
        let elapsed_local = elapsed_true * (PPM + i128::from(s.drift_ppm)) / PPM;
        s.anchor_monotonic_us + elapsed_local as i64
    }

    /// The monotonic reading in whole milliseconds at true time `sim_us`.
    pub fn monotonic_ms(&self, sim_us: u64) -> i64 {
        self.monotonic_us(sim_us).div_euclid(1000)
    }

    /// The wall-clock reading in milliseconds since the Unix epoch at true time `sim_us`.
    pub fn wall_ms(&self, sim_us: u64) -> i64 {
        let s = self.state.get();
        s.epoch_ms + s.offset_ms + s.jump_total_ms + self.monotonic_ms(sim_us)
    }

    /// Steps the wall clock by `delta_ms` (negative: backwards). Monotonic time is unaffected.
    pub fn jump(&self, delta_ms: i64) {
        let mut s = self.state.get();
        s.jump_total_ms += delta_ms;
        self.state.set(s);
    }

    /// Changes the rate from true time `sim_us` on, keeping both readings continuous.
    ///
    /// # Panics
    /// If `drift_ppm <= -1_000_000`.
    pub fn set_drift(&self, sim_us: u64, drift_ppm: i64) {
        assert!(drift_ppm > -1_000_000, "drift_ppm must be > -1_000_000");
        let monotonic_us = self.monotonic_us(sim_us);
        let mut s = self.state.get();
        s.anchor_sim_us = sim_us;
        s.anchor_monotonic_us = monotonic_us;
        s.drift_ppm = drift_ppm;
        self.state.set(s);
    }

    /// The earliest true µs (at or after the last drift change) at which the monotonic reading
    /// can be `monotonic_us` or more, rounded down: never later than the exact instant, so a
    /// deadline computed from it is never missed.
    pub(crate) fn true_us_when_monotonic_us(&self, monotonic_us: i64) -> u64 {
        let s = self.state.get();
        let ahead_us = i128::from(monotonic_us) - i128::from(s.anchor_monotonic_us);
        if ahead_us <= 0 {
            return s.anchor_sim_us;
        }
        let rate = PPM + i128::from(s.drift_ppm);
        let elapsed_true = ahead_us * PPM / rate;
        s.anchor_sim_us
            .saturating_add(u64::try_from(elapsed_true).unwrap_or(u64::MAX))
    }

    /// The earliest true µs at which the monotonic reading in ms can be `monotonic_ms` or more
    /// (rounded down, as [`NodeClock::true_us_when_monotonic_us`]).
    pub(crate) fn true_us_when_monotonic_ms(&self, monotonic_ms: i64) -> u64 {
        self.true_us_when_monotonic_us(monotonic_ms.saturating_mul(1_000))
    }

    /// The earliest true µs at which the wall clock can read `wall_ms` or more, if no jump
    /// comes first (a jump is a fault, after which deadlines are computed again).
    pub(crate) fn true_us_when_wall_ms(&self, wall_ms: i64) -> u64 {
        let s = self.state.get();
        let base_ms = s.epoch_ms + s.offset_ms + s.jump_total_ms;
        self.true_us_when_monotonic_ms(wall_ms.saturating_sub(base_ms))
    }

    /// The current rate error in parts per million.
    pub fn drift_ppm(&self) -> i64 {
        self.state.get().drift_ppm
    }

    /// How many true microseconds pass while this clock counts `local_us`, rounded up so that a
    /// local sleep never ends early by its own clock.
    pub fn local_to_sim_us(&self, local_us: u64) -> u64 {
        let rate = PPM + i128::from(self.drift_ppm());
        let numerator = i128::from(local_us) * PPM;
        ((numerator + rate - 1) / rate) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instant_a_reading_is_reached_is_never_late_and_at_most_a_microsecond_early() {
        for drift_ppm in [-900_000, -12_345, 0, 1, 7_777, 2_000_000] {
            let clock = NodeClock::new(1_000, 250, drift_ppm);
            clock.set_drift(3_001, drift_ppm);
            clock.jump(-40);
            for target_ms in [0_i64, 1, 5, 999, 1_000, 123_457] {
                let t = clock.true_us_when_monotonic_ms(target_ms);
                assert!(
                    clock.monotonic_ms(t + 1) >= target_ms || t < 3_001,
                    "late for {target_ms} at {drift_ppm}"
                );
                assert!(
                    t == 3_001 || clock.monotonic_ms(t - 1) < target_ms,
                    "early for {target_ms} at {drift_ppm}"
                );
                let wall = clock.wall_ms(5_000) + target_ms;
                let tw = clock.true_us_when_wall_ms(wall);
                assert!(clock.wall_ms(tw + 1) >= wall, "wall late for {wall} at {drift_ppm}");
                assert!(
                    tw <= 5_000 + 1 || clock.wall_ms(tw - 1) < wall,
                    "wall early for {wall} at {drift_ppm}"
                );
            }
        }
    }

    #[test]
    fn drift_of_10000_ppm_reads_10100_ms_after_10000_true_ms() {
        let clock = NodeClock::new(0, 0, 10_000);
        assert_eq!(clock.monotonic_ms(10_000_000), 10_100);
        assert_eq!(clock.wall_ms(10_000_000), 10_100);
        let slow = NodeClock::new(0, 0, -10_000);
        assert_eq!(slow.monotonic_ms(10_000_000), 9_900);
    }

    #[test]
    fn offset_and_jumps_move_wall_time_only() {
        let clock = NodeClock::new(1_000_000, 250, 0);
        assert_eq!(clock.wall_ms(0), 1_000_250);
        clock.jump(15_000);
        assert_eq!(clock.wall_ms(1_000), 1_015_251);
        assert_eq!(clock.monotonic_ms(1_000), 1);
        clock.jump(-20_000);
        assert_eq!(clock.wall_ms(2_000), 995_252);
    }

    #[test]
    fn monotonic_never_goes_backwards_across_a_backward_jump() {
        let clock = NodeClock::new(0, 0, 500);
        let mut last = i64::MIN;
        for step in 0..2_000u64 {
            if step == 1_000 {
                clock.jump(-60_000);
            }
            let now = clock.monotonic_us(step * 1_000);
            assert!(now >= last, "monotonic went back at step {step}");
            last = now;
        }
        assert!(clock.wall_ms(2_000_000) < 0, "the wall clock did go back");
    }

    #[test]
    fn drift_change_is_continuous() {
        let clock = NodeClock::new(0, 0, 0);
        assert_eq!(clock.monotonic_ms(5_000_000), 5_000);
        clock.set_drift(5_000_000, 100_000);
        assert_eq!(clock.monotonic_ms(5_000_000), 5_000);
        assert_eq!(clock.monotonic_ms(6_000_000), 6_100);
    }

    #[test]
    fn local_durations_convert_through_the_rate() {
        let fast = NodeClock::new(0, 0, 10_000);
        // 101 local ms pass in 100 true ms on a clock that runs 1 % fast.
        assert_eq!(fast.local_to_sim_us(101_000), 100_000);
        let exact = NodeClock::new(0, 0, 0);
        assert_eq!(exact.local_to_sim_us(100_000), 100_000);
        let slow = NodeClock::new(0, 0, -500_000);
        assert_eq!(slow.local_to_sim_us(100_000), 200_000);
    }
}
