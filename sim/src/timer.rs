//! The world's event clock: the timers the simulated software has armed, and what lets the step
//! loop jump over time in which nothing happens.
//!
//! **What it models.** Every timer a node arms through the simulator ([`crate::node::Node`]'s
//! sleeps and timeouts, a pause gate's wake-up) is registered here, with the runtime instant it
//! fires at, for as long as the future that armed it lives. Together with the network's next
//! delivery, the fault plan, the pauses and the deployment's own deadlines, these are every
//! instant at which something can happen; the world's step loop ([`crate::world::World::run`])
//! jumps from one to the next instead of stepping through the idle milliseconds between them.
//! The steps it does take are the steps it always took, at the same tick boundaries: skipping
//! only leaves out steps in which no task would run and no deadline falls, so a run's history
//! is the same with or without skipping (a test runs every shipped scenario both ways).
//!
//! **Software the simulator does not see.** A task that sleeps on the runtime directly
//! (`tokio::time::sleep` in a user's lock) arms a timer nobody registered. The jump still
//! advances the runtime's clock, so that timer fires at its instant; the task it wakes is held
//! back by its node's pause gate (`crate::pause::Gated`), the jump stops there, and the world
//! steps normally from the tick that timer falls in. Such a task runs at the right true time,
//! but not necessarily in the same order among the other tasks of that tick as without
//! skipping; [`crate::world::ClockWork::jumps_stopped`] counts these stops.
//!
//! **What it leaves out.** Only timers armed through the simulator are known ahead; the runtime
//! has no public way to ask for its next timer.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::rc::Rc;
use std::task::Waker;
use tokio::time::Instant;

/// The timers armed in one world, and the state of a jump over idle time.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    /// Runtime instant → how many armed timers fire then.
    armed: RefCell<BTreeMap<Instant, u32>>,
    /// Whether the world is jumping over idle time (a task polled now was woken by a timer the
    /// simulator does not know).
    jumping: Cell<bool>,
    /// Tasks held back during a jump, to wake when the world steps again.
    held_back: RefCell<Vec<Waker>>,
    /// The jump's own waker: a held-back task wakes it, so the jump stops at once.
    jump_waker: RefCell<Option<Waker>>,
}

impl Timers {
    /// Registers a timer firing at `at` until the returned guard is dropped.
    pub(crate) fn arm(self: &Rc<Self>, at: Instant) -> Armed {
        *self.armed.borrow_mut().entry(at).or_insert(0) += 1;
        Armed {
            timers: self.clone(),
            at,
        }
    }

    /// The earliest armed timer later than `now`: timers at or before `now` have fired (their
    /// task is ready, or frozen behind its pause gate, whose own wake-up is armed).
    pub(crate) fn next_after(&self, now: Instant) -> Option<Instant> {
        self.armed
            .borrow()
            .range((Bound::Excluded(now), Bound::Unbounded))
            .next()
            .map(|(at, _)| *at)
    }

    /// Whether a timer armed through the simulator fell due after `after` and at or before `until`
    /// and its future is still waiting: fired in that stretch, its task was woken (or is frozen
    /// behind its pause gate) and has not run to the end of that wait yet.
    pub(crate) fn any_due_within(&self, after: Instant, until: Instant) -> bool {
        after < until
            && self
                .armed
                .borrow()
                .range((Bound::Excluded(after), Bound::Included(until)))
                .next()
                .is_some()
    }

    /// A node's task is about to be polled. `false`: the world is jumping over idle time, so the
    /// task must not run now; it is held back (woken again when the world steps) and the jump
    /// stops.
    pub(crate) fn on_poll(&self, waker: &Waker) -> bool {
        if self.jumping.get() {
            self.held_back.borrow_mut().push(waker.clone());
            if let Some(jump) = self.jump_waker.borrow_mut().take() {
                jump.wake();
            }
            return false;
        }
        true
    }

    /// Starts or ends a jump over idle time.
    pub(crate) fn set_jumping(&self, jumping: bool) {
        self.jumping.set(jumping);
        if !jumping {
            self.jump_waker.borrow_mut().take();
        }
    }

    /// Whether a task was held back during the current jump (the jump must stop); otherwise
    /// `waker` is woken when one is.
    pub(crate) fn held_back_any(&self, waker: &Waker) -> bool {
        if self.held_back.borrow().is_empty() {
            *self.jump_waker.borrow_mut() = Some(waker.clone());
            return false;
        }
        true
    }

    /// Wakes the tasks held back during a jump, in the order they were polled.
    pub(crate) fn release_held_back(&self) {
        let held: Vec<Waker> = std::mem::take(&mut *self.held_back.borrow_mut());
        for waker in held {
            waker.wake();
        }
    }

    fn disarm(&self, at: Instant) {
        let mut armed = self.armed.borrow_mut();
        if let Some(count) = armed.get_mut(&at) {
            *count -= 1;
            if *count == 0 {
                armed.remove(&at);
            }
        }
    }
}

/// A registered timer; dropping it (the sleep finished, or its task was aborted) unregisters it.
#[derive(Debug)]
pub(crate) struct Armed {
    timers: Rc<Timers>,
    at: Instant,
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.timers.disarm(self.at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_timer_is_known_until_its_guard_drops_and_fired_timers_are_not_next() {
        let timers = Rc::new(Timers::default());
        let t0 = Instant::now();
        let a = timers.arm(t0 + Duration::from_millis(5));
        let b = timers.arm(t0 + Duration::from_millis(5));
        let c = timers.arm(t0 + Duration::from_millis(9));
        assert_eq!(timers.next_after(t0), Some(t0 + Duration::from_millis(5)));
        assert_eq!(
            timers.next_after(t0 + Duration::from_millis(5)),
            Some(t0 + Duration::from_millis(9)),
            "a timer at or before now has fired"
        );
        drop(a);
        assert_eq!(
            timers.next_after(t0),
            Some(t0 + Duration::from_millis(5)),
            "one of two left"
        );
        drop(b);
        assert_eq!(timers.next_after(t0), Some(t0 + Duration::from_millis(9)));
        drop(c);
        assert_eq!(timers.next_after(t0), None);
    }

    #[test]
    fn a_timer_due_within_a_step_is_seen_until_its_guard_drops() {
        let timers = Rc::new(Timers::default());
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let at_5 = timers.arm(t0 + ms(5));
        // The step (4, 5] ms: the timer fired on its last instant.
        assert!(timers.any_due_within(t0 + ms(4), t0 + ms(5)));
        // Not in the step before it, nor in the one after it, nor in an empty stretch.
        assert!(!timers.any_due_within(t0 + ms(3), t0 + ms(4)));
        assert!(!timers.any_due_within(t0 + ms(5), t0 + ms(6)));
        assert!(!timers.any_due_within(t0 + ms(5), t0 + ms(5)));
        // Once its future is done with it, it is not waiting any more.
        drop(at_5);
        assert!(!timers.any_due_within(t0 + ms(4), t0 + ms(5)));
    }

    #[test]
    fn a_poll_during_a_jump_is_held_back_and_released_in_order() {
        let timers = Timers::default();
        let waker = futures_util::task::noop_waker();
        assert!(timers.on_poll(&waker));
        timers.set_jumping(true);
        assert!(!timers.held_back_any(&waker));
        assert!(!timers.on_poll(&waker), "a task polled during a jump must not run");
        assert!(timers.held_back_any(&waker));
        timers.set_jumping(false);
        timers.release_held_back();
        assert!(!timers.held_back_any(&waker));
        assert!(timers.on_poll(&waker), "after the jump a task runs again");
    }
}
