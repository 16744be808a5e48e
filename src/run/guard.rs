//! The panic guard: a run whose code panics — a user's lock, a simulated node's task — becomes
//! an error carrying the first panic's message and location, not a crash of the process.
//! Explorations use it per seed (`crate::explore`), `lockstep run` and `lockstep ci` per
//! scenario, the harness per run.
//!
//! Left out: panics on other threads than the one running the guarded call (a simulation runs
//! on one thread).

use super::{run_scenario, run_with_lock, LockFactory, ScenarioRun};
use crate::scenario::Scenario;
use lockstep_sim::History;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// The first panic message seen on this thread since the last [`run_guarded`] began.
    static FIRST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Chains a panic hook that remembers, per thread, the first panic's message and location.
///
/// A panic inside a simulated node is caught by the node's runtime and resurfaces as a generic
/// "a spawned task panicked" error; the hook keeps the user's own message for the report.
fn install_panic_capture() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-text panic payload)".to_string());
            let location = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            FIRST_PANIC.with(|first| {
                first.borrow_mut().get_or_insert_with(|| format!("{payload}{location}"));
            });
            previous(info);
        }));
    });
}

/// Runs `scenario` with the built-in algorithm it names, or with `factory`'s lock, turning a
/// panic anywhere (user lock code included) into an error.
pub fn run_guarded(scenario: &Scenario, factory: Option<&LockFactory>) -> Result<ScenarioRun, String> {
    guarded(|| {
        match factory {
            Some(factory) => run_with_lock(scenario, None, factory.clone()),
            None => run_scenario(scenario, None),
        }
        .map_err(|e| e.to_string())
    })
}

/// The history of `scenario` alone ([`crate::run::history_with_lock`]: no checkers, no digest),
/// with the built-in algorithm it names or with `factory`'s lock, under the panic guard.
pub(crate) fn history_guarded(scenario: &Scenario, factory: Option<&LockFactory>) -> Result<History, String> {
    guarded(|| {
        let factory = factory.cloned().unwrap_or_else(|| crate::run::builtin_lock(scenario));
        crate::run::history_with_lock(scenario, None, factory).map_err(|e| e.to_string())
    })
}

/// Calls `f`, turning a panic anywhere inside it (a simulated node's task included) into an
/// error carrying the first panic's message and location. The one panic guard: explorations
/// use it per seed, `lockstep run` and `lockstep ci` per scenario.
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    install_panic_capture();
    FIRST_PANIC.with(|first| first.borrow_mut().take());
    let outcome = catch_unwind(AssertUnwindSafe(f));
    let first_panic = FIRST_PANIC.with(|first| first.borrow_mut().take());
    match (outcome, first_panic) {
        (Ok(Ok(value)), _) => Ok(value),
        (_, Some(message)) => Err(format!("panicked: {message}")),
        (Ok(Err(e)), None) => Err(e),
        (Err(panic), None) => Err(panic_message(&panic)),
    }
}

/// The text of a caught panic.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}
