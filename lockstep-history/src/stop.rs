//! A request from outside the simulation to stop the runs on this thread: how a wall-clock
//! budget (`lockstep explore --time-limit`) ends a run that is still going when it passes.
//!
//! The world never reads a wall clock: the caller owns the budget and sets a flag; the world
//! checks it between steps and stops with `lockstep_sim::WorldError::Stopped`, a run without a verdict.
//! A run the flag never stops is unaffected by it, so digests do not depend on it.
//!
//! Leaves out: the timer that sets the flag (the caller's).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Words every `lockstep_sim::WorldError::Stopped` message contains (for callers that only keep the
/// text of an error).
pub const STOPPED: &str = "stopped from outside the simulation";

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// While the returned guard lives, runs on this thread stop at their next step once `flag` is
/// set. Dropping the guard puts back the flag that was watched before.
pub fn stop_when(flag: Arc<AtomicBool>) -> StopGuard {
    StopGuard {
        previous: FLAG.with(|f| f.borrow_mut().replace(flag)),
    }
}

/// Watches a stop flag until dropped (see [`stop_when`]).
#[must_use = "the flag is watched only while the guard lives"]
pub struct StopGuard {
    previous: Option<Arc<AtomicBool>>,
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        FLAG.with(|f| *f.borrow_mut() = previous);
    }
}

/// The flag this thread watches, if any: a thread that starts workers hands it to them, so the
/// whole computation stops together.
pub fn current() -> Option<Arc<AtomicBool>> {
    FLAG.with(|f| f.borrow().clone())
}

/// Whether the flag watched on this thread is set.
pub fn requested() -> bool {
    FLAG.with(|f| f.borrow().as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_watches_its_flag_and_restores_the_previous_one() {
        assert!(!requested());
        let outer = Arc::new(AtomicBool::new(false));
        let _outer_guard = stop_when(outer.clone());
        {
            let inner = Arc::new(AtomicBool::new(true));
            let _inner_guard = stop_when(inner);
            assert!(requested());
        }
        assert!(!requested());
        assert!(current().is_some_and(|flag| Arc::ptr_eq(&flag, &outer)));
        outer.store(true, Ordering::Relaxed);
        assert!(requested());
    }
}
