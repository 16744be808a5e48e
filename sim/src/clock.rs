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

pub(crate) use lockstep_history::fault::MIN_DRIFT_PPM;

/// [`lockstep_history::fault::MAX_DRIFT_PPM`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep_history::fault::MAX_DRIFT_PPM`; removed in 0.3.0"
)]
pub const MAX_DRIFT_PPM: i64 = lockstep_history::fault::MAX_DRIFT_PPM;

/// [`lockstep_history::fault::check_drift_ppm`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep_history::fault::check_drift_ppm`; removed in 0.3.0"
)]
pub fn check_drift_ppm(drift_ppm: i64) -> Result<(), String> {
    lockstep_history::fault::check_drift_ppm(drift_ppm)
}

/// The largest wall-clock offset from true time, either way (`offset_ms`, a replica's
/// `replica_offset_ms`), and the largest single clock jump (`delta_ms`): 100 years of 365.25
/// days. Wall readings stay far inside an `i64` of milliseconds whatever the scenario does.
pub const MAX_CLOCK_OFFSET_MS: i64 = 3_155_760_000_000;

/// A node's clock at the start of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockSpec {
    /// Wall-clock offset from true time, ms.
    pub offset_ms: i64,
    /// Rate error, parts per million.
    pub drift_ppm: i64,
}

/// Checks a wall-clock offset or jump in ms: at most [`MAX_CLOCK_OFFSET_MS`] (100 years) either
/// way. `Err` says the range.
pub fn check_clock_offset_ms(offset_ms: i64) -> Result<(), String> {
    if offset_ms.unsigned_abs() > MAX_CLOCK_OFFSET_MS.unsigned_abs() {
        Err(format!(
            "{offset_ms} ms is out of range: must be between -{MAX_CLOCK_OFFSET_MS} and {MAX_CLOCK_OFFSET_MS} (100 years either way)"
        ))
    } else {
        Ok(())
    }
}

/// `drift_ppm` brought inside the range [`lockstep_history::fault::check_drift_ppm`] accepts. Validation refuses a drift
/// outside it before a clock is made; a caller of the sim's API that skips validation gets the
/// nearest clock that is one, never a panic or a reading that wraps around.
fn clamp_drift_ppm(drift_ppm: i64) -> i64 {
    drift_ppm.clamp(MIN_DRIFT_PPM + 1, lockstep_history::fault::MAX_DRIFT_PPM)
}

/// `value` as an `i64`, saturating at its bounds.
fn saturate_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
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
    /// A `drift_ppm` outside the range of [`lockstep_history::fault::check_drift_ppm`] (a clock that stands still or runs
    /// backwards is not a clock; scenario validation and the world reject it before it gets
    /// here) is brought to the nearest end of that range. Every reading saturates at the bounds
    /// of an `i64` rather than wrap, so the monotonic clock never reads less than before
    /// whatever the offsets, drifts and jumps; inside the validated ranges nothing saturates.
    pub fn new(epoch_ms: i64, offset_ms: i64, drift_ppm: i64) -> Self {
        let drift_ppm = clamp_drift_ppm(drift_ppm);
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
        // At most 2^64 × 2^63: inside an i128. The sum saturates (a drift far past any real
        // clock's, through the API): the reading stops at the top, it never wraps backwards.
        let elapsed_local = elapsed_true * (PPM + i128::from(s.drift_ppm)) / PPM;
        saturate_i64(i128::from(s.anchor_monotonic_us) + elapsed_local)
    }

    /// The monotonic reading in whole milliseconds at true time `sim_us`.
    pub fn monotonic_ms(&self, sim_us: u64) -> i64 {
        self.monotonic_us(sim_us).div_euclid(1000)
    }

    /// The wall-clock reading in milliseconds since the Unix epoch at true time `sim_us`.
    pub fn wall_ms(&self, sim_us: u64) -> i64 {
        let s = self.state.get();
        saturate_i64(
            i128::from(s.epoch_ms)
                + i128::from(s.offset_ms)
                + i128::from(s.jump_total_ms)
                + i128::from(self.monotonic_ms(sim_us)),
        )
    }

    /// The wall clock's base: epoch, offset and jumps so far, ms (saturating).
    fn wall_base_ms(s: &ClockState) -> i64 {
        saturate_i64(i128::from(s.epoch_ms) + i128::from(s.offset_ms) + i128::from(s.jump_total_ms))
    }

    /// Moves the epoch the wall clock counts from (a live run learns it only when true time
    /// starts). Offset, drift and jumps are kept.
    pub fn set_epoch_ms(&self, epoch_ms: i64) {
        let mut s = self.state.get();
        s.epoch_ms = epoch_ms;
        self.state.set(s);
    }

    /// Steps the wall clock by `delta_ms` (negative: backwards). Monotonic time is unaffected.
    /// The total of the jumps saturates at the bounds of an `i64`.
    pub fn jump(&self, delta_ms: i64) {
        let mut s = self.state.get();
        s.jump_total_ms = s.jump_total_ms.saturating_add(delta_ms);
        self.state.set(s);
    }

    /// Changes the rate from true time `sim_us` on, keeping both readings continuous. A
    /// `drift_ppm` outside the range of [`lockstep_history::fault::check_drift_ppm`] is brought to its nearest end (as in
    /// [`NodeClock::new`]).
    pub fn set_drift(&self, sim_us: u64, drift_ppm: i64) {
        let drift_ppm = clamp_drift_ppm(drift_ppm);
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
        let base_ms = Self::wall_base_ms(&s);
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
        // A slow clock makes a long local wait longer still in true time: past u64, forever.
        u64::try_from((numerator + rate - 1) / rate).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_history::fault::{check_drift_ppm, MAX_DRIFT_PPM};

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
    fn extreme_offsets_drifts_and_jumps_saturate_and_never_go_backwards() {
        // Issue 40: offset_ms and drift_ppm both at i64::MAX wrapped the monotonic reading to a
        // negative one (the node's self-check panicked). Through the API, validation skipped.
        let extremes = [i64::MIN, i64::MIN + 1, -1_000_000, 0, 1, MAX_DRIFT_PPM, i64::MAX];
        for &offset_ms in &extremes {
            for &drift_ppm in &extremes {
                for &jump_ms in &extremes {
                    let clock = NodeClock::new(DEFAULT_EPOCH_FOR_TESTS, offset_ms, drift_ppm);
                    let mut last_monotonic = i64::MIN;
                    for (step, sim_us) in [0u64, 1, 1_000, 86_400_000_000, u64::MAX / 2, u64::MAX]
                        .into_iter()
                        .enumerate()
                    {
                        if step == 2 {
                            clock.jump(jump_ms);
                            clock.jump(jump_ms);
                        }
                        if step == 3 {
                            clock.set_drift(sim_us, drift_ppm);
                        }
                        let monotonic = clock.monotonic_ms(sim_us);
                        assert!(
                            monotonic >= last_monotonic,
                            "offset {offset_ms} drift {drift_ppm} jump {jump_ms}: {last_monotonic} -> {monotonic}"
                        );
                        last_monotonic = monotonic;
                        let _ = clock.wall_ms(sim_us);
                        let _ = clock.true_us_when_wall_ms(i64::MAX);
                        let _ = clock.true_us_when_wall_ms(i64::MIN);
                        let _ = clock.true_us_when_monotonic_ms(i64::MAX);
                        let _ = clock.local_to_sim_us(u64::MAX);
                    }
                }
            }
        }
    }

    #[test]
    fn readings_inside_the_validated_ranges_are_exact() {
        // The largest offset, drift and jump a scenario may ask for, over a simulated day: no
        // reading saturates, so the arithmetic is the plain one.
        let day_us = 86_400_000_000u64;
        let clock = NodeClock::new(DEFAULT_EPOCH_FOR_TESTS, MAX_CLOCK_OFFSET_MS, MAX_DRIFT_PPM);
        let monotonic_us = i64::try_from(i128::from(day_us) * (PPM + i128::from(MAX_DRIFT_PPM)) / PPM).unwrap();
        assert_eq!(clock.monotonic_us(day_us), monotonic_us);
        clock.jump(MAX_CLOCK_OFFSET_MS);
        assert_eq!(
            clock.wall_ms(day_us),
            DEFAULT_EPOCH_FOR_TESTS + 2 * MAX_CLOCK_OFFSET_MS + monotonic_us / 1_000
        );
        assert!(check_drift_ppm(MAX_DRIFT_PPM).is_ok() && check_drift_ppm(MAX_DRIFT_PPM + 1).is_err());
        assert!(check_clock_offset_ms(-MAX_CLOCK_OFFSET_MS).is_ok());
        let err = check_clock_offset_ms(i64::MIN).unwrap_err();
        assert!(err.contains("between -3155760000000 and 3155760000000"), "{err}");
    }

    /// 2026-01-01, as the world's default epoch.
    const DEFAULT_EPOCH_FOR_TESTS: i64 = 1_767_225_600_000;

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
