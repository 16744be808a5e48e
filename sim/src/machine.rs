//! The machines: one single-threaded tokio runtime with a paused clock runs the software of every
//! node; the world steps it a tick at a time where something happens and jumps its clock over
//! the ticks where nothing does ([`crate::timer`]).
//!
//! **What it models.** Each node runs software: a client's main future (the run ends when every
//! client's has returned), or a server's (started again, afresh, after a restart). Every task a
//! node spawns goes through [`crate::node::Node::spawn`], which records it in the node's
//! [`TaskSet`], so a process crash aborts exactly that node's tasks and the network closes its
//! sockets ([`crate::wire::Wire::crash`]).
//!
//! **Stepping.** One step advances the runtime's paused clock by the tick and runs every task
//! that is ready, in the order tokio's current-thread scheduler and timer wheel give, which
//! depend on nothing but the order of spawns and wakes: the same run on any machine and any
//! thread makes the same choices. tokio's own random choices (`select!` without `biased;`) are
//! seeded from the run's seed (`--cfg tokio_unstable`). A step costs what the woken tasks cost:
//! nothing here visits every node or every link, so a world of 200 nodes costs per event what a
//! world of 3 does: the clients' main futures are only looked at after one of them has ended
//! (each counts its own end), not at every step. A jump ([`Machines::jump`]) moves the paused clock without running any task:
//! the world has worked out that none would run. Steps and jumps are awaited inside one entry
//! into the runtime per run ([`Engine::drive`]), with the world's own work between them done as
//! if from outside the local set ([`Engine::between_steps`]), so tasks are queued and run in the
//! order they were when each step entered the runtime by itself.
//!
//! **What it leaves out.** No preemption (a task runs until it yields), no CPU time (code takes no
//! simulated time to run), one scheduler for all nodes (a node's tasks interleave with other
//! nodes' at await points only, as on one core).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::{AbortHandle, JoinHandle, LocalSet};

use crate::timer::Timers;

/// What a server's software returns when it stops by itself (an error ends the run).
pub type SoftwareResult = Result<(), Box<dyn std::error::Error>>;

type Software = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = SoftwareResult>>>>;

/// The tasks a node has spawned and not yet seen finish.
#[derive(Clone, Default)]
pub(crate) struct TaskSet(Rc<RefCell<TaskList>>);

#[derive(Default)]
struct TaskList {
    tasks: Vec<AbortHandle>,
    /// The length after the last sweep of finished tasks (sweeps are amortised).
    swept_len: usize,
}

impl TaskSet {
    /// Records a task.
    pub(crate) fn push(&self, task: AbortHandle) {
        let mut list = self.0.borrow_mut();
        if list.tasks.len() >= 2 * list.swept_len + 16 {
            list.tasks.retain(|t| !t.is_finished());
            list.swept_len = list.tasks.len();
        }
        list.tasks.push(task);
    }

    /// Aborts every task.
    fn abort_all(&self) {
        let mut list = self.0.borrow_mut();
        for task in list.tasks.drain(..) {
            task.abort();
        }
        list.swept_len = 0;
    }
}

struct Machine {
    tasks: TaskSet,
    software: Option<Software>,
    main: Option<AbortHandle>,
}

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct StepError(pub String);

/// How many times one step may poll its own timer before it calls the software livelocked. The
/// local set polls it once per round of up to 61 ready tasks, so this is about 12 million task
/// polls in one tick — thousands of times what the largest world needs, and reached in about a
/// second of CPU. Counted, not timed: a livelocked run stops at the same step on every machine.
const STEP_POLL_BUDGET: u32 = 200_000;

/// The step's timer, polled between rounds of ready tasks: ready when the tick has passed, or
/// an error once [`STEP_POLL_BUDGET`] rounds ran without the clock getting there (tasks that are
/// always ready keep a paused clock from ever advancing).
struct Budget<'a> {
    sleep: &'a mut Pin<Box<tokio::time::Sleep>>,
    polls_left: u32,
    /// A jump over idle time: ready as soon as a task was held back.
    stop_early: Option<&'a Timers>,
}

impl Future for Budget<'_> {
    type Output = Result<(), ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        if self.stop_early.is_some_and(|timers| timers.held_back_any(cx.waker())) {
            return std::task::Poll::Ready(Ok(()));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(Ok(()));
        }
        if self.polls_left == 0 {
            return std::task::Poll::Ready(Err(()));
        }
        self.polls_left -= 1;
        std::task::Poll::Pending
    }
}

/// Counts a client's main future ending when it is dropped: it returned, failed, panicked or
/// was aborted.
struct CountsEnd(Rc<Cell<u64>>);

impl Drop for CountsEnd {
    fn drop(&mut self) {
        self.0.set(self.0.get() + 1);
    }
}

/// The runtime and the local set every node's tasks run on. Shared (an `Rc`), so that the world's
/// step loop can run inside them ([`Engine::drive`]) while it still reaches the machines.
pub(crate) struct Engine {
    // Dropped in this order: the runtime, then the tasks left in the local set.
    runtime: Runtime,
    local: LocalSet,
}

impl Engine {
    /// Runs `future` (the world's step loop) on the runtime, inside the local set, until it
    /// returns. One entry into the runtime per run, not one per step or jump: entering costs
    /// about a microsecond (its context, its metrics' clock reads), which in a sparse run such as
    /// Kleppmann's pause was a fifth of the run.
    pub(crate) fn drive<T>(&self, future: impl Future<Output = T>) -> T {
        self.runtime.block_on(self.local.run_until(future))
    }

    /// Held while the step loop does the world's own work between two steps (deliveries,
    /// faults, restarts, resumptions). A task that work wakes or spawns is queued as if the work
    /// ran outside the local set, on its shared queue, which is where it went when every step was
    /// its own entry into the runtime: the order in which tasks run, and so every history, stays
    /// what it was. Drop it before awaiting a step or a jump.
    pub(crate) fn between_steps(&self) -> tokio::task::LocalEnterGuard {
        self.local.enter()
    }
}

/// Every node's software and the runtime that runs it.
pub(crate) struct Machines {
    /// The timer of the current step or jump, moved from one to the next ([`Machines::timer`]).
    /// Declared before the engine: dropped while the runtime is still there.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    engine: Rc<Engine>,
    machines: BTreeMap<String, Machine>,
    /// The main futures of the clients that have not returned yet.
    clients: Vec<JoinHandle<SoftwareResult>>,
    /// How many clients' main futures have ended ([`CountsEnd`]).
    clients_ended: Rc<Cell<u64>>,
    /// How many of those a step has taken out of `clients`: while fewer than have ended, a step
    /// looks for the finished ones; otherwise none can be.
    clients_taken: u64,
}

impl Machines {
    /// A runtime whose scheduler's random choices come from `rng_seed`.
    pub(crate) fn new(rng_seed: [u8; 32]) -> std::io::Result<Self> {
        let mut builder = tokio::runtime::Builder::new_current_thread();
        builder.enable_time().start_paused(true);
        #[cfg(tokio_unstable)]
        {
            builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&rng_seed));
        }
        #[cfg(not(tokio_unstable))]
        let _ = rng_seed;
        #[allow(unused_mut)]
        let mut local = LocalSet::new();
        // A panic in any node's task fails the run instead of silently ending that task.
        #[cfg(tokio_unstable)]
        local.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);
        Ok(Machines {
            timer: None,
            engine: Rc::new(Engine {
                runtime: builder.build()?,
                local,
            }),
            machines: BTreeMap::new(),
            clients: Vec::new(),
            clients_ended: Rc::default(),
            clients_taken: 0,
        })
    }

    /// Registers node `name`, whose spawned tasks are recorded in `tasks`.
    pub(crate) fn add_node(&mut self, name: &str, tasks: TaskSet) {
        self.machines.insert(
            name.to_string(),
            Machine {
                tasks,
                software: None,
                main: None,
            },
        );
    }

    /// The runtime and local set, to drive a run on ([`Engine::drive`]).
    pub(crate) fn engine(&self) -> Rc<Engine> {
        self.engine.clone()
    }

    fn spawn(&self, future: impl Future<Output = SoftwareResult> + 'static) -> JoinHandle<SoftwareResult> {
        let _guard = self.engine.runtime.enter();
        self.engine.local.spawn_local(future)
    }

    /// Starts `software` on server node `name` (and again after each [`Machines::bounce`]).
    pub(crate) fn host<F, Fut>(&mut self, name: &str, software: F)
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = SoftwareResult> + 'static,
    {
        let software: Software = Rc::new(move || Box::pin(software()));
        let handle = self.spawn(software());
        if let Some(machine) = self.machines.get_mut(name) {
            machine.main = Some(handle.abort_handle());
            machine.software = Some(software);
        }
    }

    /// Starts client `software` on node `name`; the run ends once every client's has returned.
    pub(crate) fn client(&mut self, _name: &str, software: impl Future<Output = SoftwareResult> + 'static) {
        let ends = CountsEnd(self.clients_ended.clone());
        let handle = self.spawn(async move {
            let _ends = ends;
            software.await
        });
        self.clients.push(handle);
    }

    /// Kills every task of node `name` (the caller closes its sockets).
    pub(crate) fn crash(&mut self, name: &str) {
        if let Some(machine) = self.machines.get_mut(name) {
            if let Some(main) = machine.main.take() {
                main.abort();
            }
            machine.tasks.abort_all();
        }
    }

    /// Starts the software of node `name` again, afresh.
    pub(crate) fn bounce(&mut self, name: &str) {
        self.crash(name);
        let Some(software) = self.machines.get(name).and_then(|m| m.software.clone()) else {
            return;
        };
        let handle = self.spawn(software());
        if let Some(machine) = self.machines.get_mut(name) {
            machine.main = Some(handle.abort_handle());
        }
    }

    /// The runtime's clock now.
    pub(crate) fn now(&self) -> tokio::time::Instant {
        let _clock = self.engine.runtime.enter();
        tokio::time::Instant::now()
    }

    /// How long from `now` (the runtime's clock) until the runtime fires a timer armed for `at`, µs: its timers fire on
    /// whole milliseconds of its clock, which every step ends on.
    pub(crate) fn until_fires_us(now: tokio::time::Instant, at: tokio::time::Instant) -> u64 {
        let ahead_us = at.saturating_duration_since(now).as_micros() as u64;
        ahead_us.div_ceil(1_000) * 1_000
    }

    /// Moves the runtime's clock `by_us` forward (whole ms) without running any task: the world
    /// knows nothing is due before then. A timer it did not know (software sleeping on the
    /// runtime directly) stops the jump where it fires; the task it woke is held back by its
    /// pause gate until the next step. Returns how far the clock moved, µs. Awaited inside
    /// [`Engine::drive`].
    pub(crate) async fn jump(&mut self, by_us: u64, timers: &Timers) -> u64 {
        let start = tokio::time::Instant::now();
        let budget = Budget {
            sleep: self.timer(Duration::from_micros(by_us)),
            polls_left: STEP_POLL_BUDGET,
            stop_early: Some(timers),
        };
        timers.set_jumping(true);
        let _ = budget.await;
        timers.set_jumping(false);
        tokio::time::Instant::now().saturating_duration_since(start).as_micros() as u64
    }

    /// The step's or jump's timer, set `length` from now: one timer moved from step to step
    /// rather than a new one registered and dropped each time. Inside [`Engine::drive`].
    fn timer(&mut self, length: Duration) -> &mut Pin<Box<tokio::time::Sleep>> {
        let deadline = tokio::time::Instant::now() + length;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        timer.as_mut().reset(deadline);
        timer
    }

    /// Advances the runtime's clock by `length` (a tick, or what is left of one after a jump
    /// stopped inside it), running every task that becomes ready. Returns whether every client's
    /// software has returned. Awaited inside [`Engine::drive`].
    pub(crate) async fn step(&mut self, length: Duration) -> Result<bool, StepError> {
        let budget = Budget {
            sleep: self.timer(length),
            polls_left: STEP_POLL_BUDGET,
            stop_early: None,
        };
        if budget.await.is_err() {
            return Err(StepError(
                "the simulated software never let time pass: some task was ready again every time it yielded \
                 (a retry loop without any delay?), so the clock could not reach the end of this step; the run \
                 stops here instead of hanging"
                    .to_string(),
            ));
        }
        if self.clients_taken == self.clients_ended.get() {
            return Ok(self.clients.is_empty());
        }
        let mut i = 0;
        while i < self.clients.len() {
            if !self.clients[i].is_finished() {
                i += 1;
                continue;
            }
            self.clients_taken += 1;
            // Finished: awaiting it only takes its result.
            match self.clients.swap_remove(i).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(StepError(e.to_string())),
                Err(e) if e.is_cancelled() => {}
                Err(e) => return Err(StepError(format!("client software failed: {e}"))),
            }
        }
        Ok(self.clients.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// One 1 ms step.
    fn tick(m: &mut Machines) -> Result<bool, StepError> {
        let engine = m.engine();
        engine.drive(m.step(Duration::from_millis(1)))
    }

    fn machines() -> Machines {
        Machines::new([7; 32]).expect("a runtime")
    }

    #[test]
    fn software_that_never_lets_time_pass_stops_the_step_instead_of_hanging() {
        let mut m = machines();
        // A retry loop without a delay: always ready again, so the paused clock never advances.
        m.client("spinner", async move {
            loop {
                tokio::task::yield_now().await;
            }
        });
        let err = tick(&mut m).expect_err("a livelocked step is an error");
        assert!(err.0.contains("never let time pass"), "{err}");
    }

    #[test]
    fn a_step_advances_the_clock_by_one_tick_and_the_run_ends_with_its_clients() {
        let mut m = machines();
        let woke_at: Rc<Cell<u32>> = Rc::default();
        let out = woke_at.clone();
        m.client("c", async move {
            let start = tokio::time::Instant::now();
            tokio::time::sleep(Duration::from_millis(5)).await;
            out.set(start.elapsed().as_millis() as u32);
            Ok(())
        });
        let mut steps = 0;
        while !tick(&mut m).expect("no failure") {
            steps += 1;
        }
        // The sleep ends 5 ms in, at the fifth step's end: the step's own timer fires first at
        // that instant, so the client runs (still at 5 ms) in the sixth step, and returns there.
        assert_eq!((steps + 1, woke_at.get()), (6, 5));
    }

    #[test]
    fn a_crash_aborts_every_task_of_the_node_and_a_bounce_starts_its_software_afresh() {
        let mut m = machines();
        let tasks = TaskSet::default();
        m.add_node("server", tasks.clone());
        let (starts, ticks): (Rc<Cell<u32>>, Rc<Cell<u32>>) = Default::default();
        let (s, t) = (starts.clone(), ticks.clone());
        m.host("server", move || {
            let (tasks, ticks) = (tasks.clone(), t.clone());
            s.set(s.get() + 1);
            async move {
                // A task the software spawns: it counts milliseconds until it is killed.
                let handle = tokio::task::spawn_local(async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        ticks.set(ticks.get() + 1);
                    }
                });
                tasks.push(handle.abort_handle());
                std::future::pending::<()>().await;
                Ok(())
            }
        });
        for _ in 0..10 {
            tick(&mut m).unwrap();
        }
        let before = ticks.get();
        assert!(before >= 8, "{before}");
        m.crash("server");
        for _ in 0..10 {
            tick(&mut m).unwrap();
        }
        assert_eq!(ticks.get(), before, "the spawned task died with the process");
        m.bounce("server");
        for _ in 0..10 {
            tick(&mut m).unwrap();
        }
        assert_eq!(starts.get(), 2);
        assert!(ticks.get() > before, "the restarted software runs again");
    }

    #[test]
    fn a_client_that_fails_fails_the_step() {
        let mut m = machines();
        m.client("c", async { Err("the client gave up".into()) });
        let err = tick(&mut m).unwrap_err();
        assert!(err.0.contains("the client gave up"), "{err}");
    }
}
