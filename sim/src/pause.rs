//! Process pauses (GC, VM stall): one gate every task of a node is polled through.
//!
//! A runtime has no notion of a paused process, so a node's tasks (its main future, its
//! connection drivers, everything it spawns through [`crate::node::Node::spawn`]) are wrapped in
//! `Gated`. While the gate is closed, a gated future is not polled at all: it registers one
//! timer for the end of the pause and returns `Pending`. Bytes sent to the node wait in its socket
//! buffers; its own timers expire but are only observed when it resumes, exactly as a frozen
//! process finds its timers overdue when it wakes.
//!
//! What it leaves out: a pause does not stop the node's clocks (they are hardware), and the
//! kernel's TCP stack keeps accepting bytes (the simulated sockets' buffers), which is also true of a
//! real stalled process.

use crate::timer::{Armed, Timers};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

/// The shared true time of the run, in microseconds, as the world's step loop sets it.
///
/// Every reading made during one step uses the time at the end of that step, so that events
/// logged by different hosts within one step never appear out of time order. It also carries the
/// world's registry of armed timers ([`Timers`]), which the step loop reads to skip idle time.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrueTime {
    now_us: Rc<Cell<u64>>,
    timers: Rc<Timers>,
}

impl TrueTime {
    /// A clock at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current true time in µs.
    pub fn now_us(&self) -> u64 {
        self.now_us.get()
    }

    /// The timers armed in this world.
    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// A runtime timer of `duration` from now, registered with the world while it lives (so
    /// that the step loop never jumps over it).
    pub(crate) async fn sleep(&self, duration: Duration) {
        let sleep = tokio::time::sleep(duration);
        let _armed = self.timers.arm(sleep.deadline());
        sleep.await
    }

    /// Runs `future` with a runtime deadline of `duration`, registered with the world.
    pub(crate) async fn timeout<F: Future>(
        &self,
        duration: Duration,
        future: F,
    ) -> Result<F::Output, tokio::time::error::Elapsed> {
        let deadline = tokio::time::Instant::now() + duration;
        let _armed = self.timers.arm(deadline);
        tokio::time::timeout_at(deadline, future).await
    }

    fn armed_sleep(&self, duration: Duration) -> (Pin<Box<tokio::time::Sleep>>, Armed) {
        let sleep = Box::pin(tokio::time::sleep(duration));
        let armed = self.timers.arm(sleep.deadline());
        (sleep, armed)
    }

    /// Moves true time to `at_us`.
    ///
    /// # Panics
    /// If `at_us` is earlier than the current time: the scheduler never goes back in time.
    pub(crate) fn advance_to(&self, at_us: u64) {
        assert!(
            at_us >= self.now_us.get(),
            "true time went backwards: {at_us} < {}",
            self.now_us.get()
        );
        self.now_us.set(at_us);
    }
}

/// The gate of one node: closed until a true instant, or open.
#[derive(Debug, Clone)]
pub(crate) struct PauseGate {
    paused_until_us: Rc<Cell<u64>>,
    time: TrueTime,
}

impl PauseGate {
    /// An open gate reading `time`.
    pub fn new(time: TrueTime) -> Self {
        PauseGate {
            paused_until_us: Rc::new(Cell::new(0)),
            time,
        }
    }

    /// Freezes the node for `duration_us` from now. Overlapping pauses extend each other.
    pub(crate) fn pause_for_us(&self, duration_us: u64) {
        let until = self.time.now_us().saturating_add(duration_us);
        self.paused_until_us.set(self.paused_until_us.get().max(until));
    }

    /// Whether the node is frozen now.
    pub fn is_paused(&self) -> bool {
        self.time.now_us() < self.paused_until_us.get()
    }

    /// When the current pause ends (true µs); `None` when not paused.
    pub(crate) fn paused_until_us(&self) -> Option<u64> {
        self.is_paused().then(|| self.paused_until_us.get())
    }

    /// Wraps `future` so that it is only polled while the gate is open.
    pub fn gate<F: Future>(&self, future: F) -> Gated<F> {
        Gated {
            gate: self.clone(),
            inner: Box::pin(future),
            wake_timer: None,
        }
    }
}

/// A future polled only while its node is not paused.
pub(crate) struct Gated<F: Future> {
    gate: PauseGate,
    inner: Pin<Box<F>>,
    wake_timer: Option<(Pin<Box<tokio::time::Sleep>>, Armed)>,
}

impl<F: Future> Future for Gated<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if !self.gate.time.timers().on_poll(cx.waker()) {
            // The world is jumping over idle time: this task runs when it steps again.
            return Poll::Pending;
        }
        loop {
            match self.gate.paused_until_us() {
                Some(until_us) => {
                    let now_us = self.gate.time.now_us();
                    // Sleep at least a millisecond: the runtime's timers have ms resolution and
                    // a zero sleep would spin.
                    let wait = Duration::from_micros((until_us - now_us).max(1_000));
                    if self.wake_timer.is_none() {
                        self.wake_timer = Some(self.gate.time.armed_sleep(wait));
                    }
                    let Some((timer, _)) = self.wake_timer.as_mut() else {
                        return Poll::Pending;
                    };
                    match timer.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        // The timer fired but the true time of this step may still be inside
                        // the pause: arm a new one and check again.
                        Poll::Ready(()) => self.wake_timer = None,
                    }
                    if self.gate.is_paused() {
                        let wait = Duration::from_micros(1_000);
                        self.wake_timer = Some(self.gate.time.armed_sleep(wait));
                        continue;
                    }
                }
                None => {
                    self.wake_timer = None;
                    return self.inner.as_mut().poll(cx);
                }
            }
        }
    }
}
