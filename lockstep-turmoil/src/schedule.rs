//! A fault schedule as data: lockstep's faults ([`Fault`], the `[[fault]]` kinds of a scenario
//! file), each with what sets it off — a time, the first (or each) time a service node holds a
//! lock key, or a delay after another fault of the schedule.
//!
//! Written in code:
//!
//! ```
//! use lockstep_turmoil::{fault, FaultSchedule};
//! let schedule = FaultSchedule::new()
//!     .when_holds("worker-1", "invoices", fault::crash("redis-1"))
//!     .then_after_ms(300, fault::restart("redis-1"))
//!     .at_ms(4_000, fault::pause("worker-2", 500));
//! assert_eq!(schedule.len(), 3);
//! ```
//!
//! or as the `[[fault]]` tables of a scenario file ([`FaultSchedule::from_toml`]), read by
//! lockstep's own reader (`lockstep::scenario::fault_tables`: the same kinds, keys, ranges and
//! messages), with two keys of this crate's:
//!
//! ```toml
//! [[fault]]
//! kind = "crash"
//! node = "redis-1"
//! when_holds = { node = "worker-1", key = "invoices" }  # `each = true`: at every grant
//!
//! [[fault]]
//! kind = "restart"
//! node = "redis-1"
//! after = { fault = 0, after_ms = 300 }   # 300 ms after fault[0] fires (each time it does)
//! ```
//!
//! A table with `when_holds` may keep `at_ms`: the trigger is armed from then on. One with
//! `after` may not have `at_ms`.
//!
//! "Holds" is read from the recorded operations, not from the Redis keys: a node holds a key from
//! its `acquire` `ok` (recorded with its [`crate::OpRecorder`]) until it invokes its `release`
//! (or `abort`s), whatever the masters hold meanwhile — a crash that empties the masters does not
//! end the hold the service believes it has, and a new grant sets a trigger off in the step it is
//! recorded in. Holds are read between two turmoil steps: a grant released within the step it
//! was granted in (shorter than a tick) was never held at a step's end, and sets nothing off.
//!
//! The schedule is applied by [`crate::RedisHosts::step`] between two turmoil steps: a fault
//! fires at the end of the step in which its time comes (turmoil's tick, 1 ms by default) or its
//! trigger's grant is recorded.

use crate::error::Error;
use lockstep_sim::{Fault, FaultTargets, Role};

/// What sets a planned fault off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// At `at_ms` of true (turmoil's) time.
    At {
        /// True ms since the simulation began.
        at_ms: u64,
    },
    /// When service node `node` holds lock key `key` (an `acquire` `ok` not yet released), not
    /// before `not_before_ms`: at its first such grant, or at each one (`each`).
    WhileHolds {
        /// The service node (the name its recorder records under).
        node: String,
        /// The lock key.
        key: String,
        /// True ms before which the trigger is not armed.
        not_before_ms: u64,
        /// Fire at every grant, not only the first.
        each: bool,
    },
    /// `after_ms` after the schedule's fault number `fault` (0-based, an earlier one) fires,
    /// each time it does.
    After {
        /// The index of the fault it follows.
        fault: usize,
        /// The delay, true ms.
        after_ms: u64,
    },
}

/// One fault of a schedule and what sets it off.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFault {
    /// What sets it off.
    pub trigger: Trigger,
    /// The fault.
    pub fault: Fault,
}

/// Faults with their triggers, applied by [`crate::RedisHosts::step`] (see the `schedule`
/// module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultSchedule {
    faults: Vec<PlannedFault>,
}

/// Where every node name is accepted as a Redis server: the text is read before the schedule
/// meets the simulation's hosts, which [`crate::RedisHosts::schedule`] checks each fault against.
struct AnyNode;

impl FaultTargets for AnyNode {
    fn role(&self, _node: &str) -> Option<Role> {
        Some(Role::Master)
    }

    fn is_replicated(&self, _node: &str) -> bool {
        false
    }

    fn node_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// This crate's keys of a `[[fault]]` table.
const TRIGGER_KEYS: &[&str] = &["when_holds", "after"];

impl FaultSchedule {
    /// An empty schedule.
    pub fn new() -> Self {
        FaultSchedule::default()
    }

    /// The planned faults, in the order added.
    pub fn faults(&self) -> &[PlannedFault] {
        &self.faults
    }

    /// How many faults are planned.
    pub fn len(&self) -> usize {
        self.faults.len()
    }

    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Adds `fault` set off by `trigger`.
    pub fn push(mut self, trigger: Trigger, fault: Fault) -> Self {
        self.faults.push(PlannedFault { trigger, fault });
        self
    }

    /// Adds `fault` at `at_ms` of true time.
    pub fn at_ms(self, at_ms: u64, fault: Fault) -> Self {
        self.push(Trigger::At { at_ms }, fault)
    }

    /// Adds `fault` at the first grant of lock key `key` to service node `node`.
    pub fn when_holds(self, node: &str, key: &str, fault: Fault) -> Self {
        self.holds(node, key, false, fault)
    }

    /// Adds `fault` at every grant of lock key `key` to service node `node`.
    pub fn each_time_holds(self, node: &str, key: &str, fault: Fault) -> Self {
        self.holds(node, key, true, fault)
    }

    fn holds(self, node: &str, key: &str, each: bool, fault: Fault) -> Self {
        let trigger = Trigger::WhileHolds {
            node: node.to_string(),
            key: key.to_string(),
            not_before_ms: 0,
            each,
        };
        self.push(trigger, fault)
    }

    /// Adds `fault` `after_ms` after the fault added last fires (each time it fires). On an empty
    /// schedule it is at `after_ms`.
    pub fn then_after_ms(self, after_ms: u64, fault: Fault) -> Self {
        let trigger = match self.faults.len() {
            0 => Trigger::At { at_ms: after_ms },
            n => Trigger::After { fault: n - 1, after_ms },
        };
        self.push(trigger, fault)
    }

    /// The `[[fault]]` tables of `text` (a TOML text with nothing else), read as a scenario
    /// file's are, with this crate's `when_holds` and `after` keys (see the `schedule` module
    /// docs). The error names the table and key at fault (with line and column where the reader
    /// knows them). The nodes named are checked against the simulation by
    /// [`crate::RedisHosts::schedule`].
    pub fn from_toml(text: &str) -> Result<FaultSchedule, Error> {
        let tables = lockstep::scenario::fault_tables(text, "fault schedule", &AnyNode, TRIGGER_KEYS)
            .map_err(|e| Error::Schedule(e.to_string()))?;
        let mut schedule = FaultSchedule::new();
        for table in tables {
            let index = table.index;
            let bad = |key: &str, message: String| {
                Error::Schedule(format!("fault schedule: fault[{index}].{key}: {message}"))
            };
            let at_ms = table.scheduled.at_ms;
            let trigger = match (table.extra.get("when_holds"), table.extra.get("after")) {
                (Some(_), Some(_)) => {
                    return Err(bad(
                        "after",
                        "a fault has one trigger: `when_holds` or `after`, not both".into(),
                    ))
                }
                (None, None) => Trigger::At { at_ms },
                (Some(value), None) => {
                    let holds = value
                        .as_table()
                        .ok_or_else(|| bad("when_holds", "must be a table: { node = \"…\", key = \"…\" }".into()))?;
                    let text = |name: &str| match holds.get(name) {
                        Some(toml::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                        Some(_) => Err(bad(&format!("when_holds.{name}"), "must be a non-empty string".into())),
                        None => Err(bad(&format!("when_holds.{name}"), "required field is missing".into())),
                    };
                    let each = match holds.get("each") {
                        None => false,
                        Some(toml::Value::Boolean(b)) => *b,
                        Some(_) => return Err(bad("when_holds.each", "must be true or false".into())),
                    };
                    if let Some(other) = holds.keys().find(|k| !["node", "key", "each"].contains(&k.as_str())) {
                        return Err(bad(
                            &format!("when_holds.{other}"),
                            "unknown field (fields: node, key, each)".into(),
                        ));
                    }
                    Trigger::WhileHolds {
                        node: text("node")?,
                        key: text("key")?,
                        not_before_ms: at_ms,
                        each,
                    }
                }
                (None, Some(value)) => {
                    if table.at_ms_given {
                        return Err(bad("at_ms", "a fault set off `after` another has no `at_ms`".into()));
                    }
                    let after = value
                        .as_table()
                        .ok_or_else(|| bad("after", "must be a table: { fault = 0, after_ms = 300 }".into()))?;
                    let number = |name: &str| match after.get(name) {
                        Some(toml::Value::Integer(n)) if *n >= 0 => Ok(*n as u64),
                        Some(_) => Err(bad(&format!("after.{name}"), "must be a non-negative integer".into())),
                        None => Err(bad(&format!("after.{name}"), "required field is missing".into())),
                    };
                    if let Some(other) = after.keys().find(|k| !["fault", "after_ms"].contains(&k.as_str())) {
                        return Err(bad(
                            &format!("after.{other}"),
                            "unknown field (fields: fault, after_ms)".into(),
                        ));
                    }
                    let fault = number("fault")?;
                    if fault >= index as u64 {
                        return Err(bad(
                            "after.fault",
                            format!("{fault}: must name an earlier fault (0 to {})", index as i64 - 1),
                        ));
                    }
                    Trigger::After {
                        fault: fault as usize,
                        after_ms: number("after_ms")?,
                    }
                }
            };
            schedule = schedule.push(trigger, table.scheduled.fault);
        }
        Ok(schedule)
    }
}

/// Faults by name, for schedules written in code (`fault::crash("redis-1")`).
pub mod fault {
    use lockstep_sim::Fault;

    /// Crash Redis host `node`'s process: it keeps what its persistence keeps.
    pub fn crash(node: &str) -> Fault {
        Fault::Crash { node: node.into() }
    }

    /// Start Redis host `node` again (a running one after a clean shutdown).
    pub fn restart(node: &str) -> Fault {
        Fault::Restart { node: node.into() }
    }

    /// Cut Redis host `node`'s power (with `aof-everysec`, unsynced writes are lost too).
    pub fn power_loss(node: &str) -> Fault {
        Fault::PowerLoss { node: node.into() }
    }

    /// Stop Redis host `node` cleanly (with AOF nothing is lost).
    pub fn shutdown(node: &str) -> Fault {
        Fault::Shutdown { node: node.into() }
    }

    /// Hold every link of host `node` for `duration_ms` (see [`crate::RedisHosts::pause`]).
    pub fn pause(node: &str, duration_ms: u64) -> Fault {
        Fault::Pause {
            node: node.into(),
            duration_ms,
        }
    }

    /// Step Redis host `node`'s wall clock by `delta_ms`.
    pub fn clock_jump(node: &str, delta_ms: i64) -> Fault {
        Fault::ClockJump {
            node: node.into(),
            delta_ms,
        }
    }

    /// Set Redis host `node`'s clock rate error.
    pub fn drift(node: &str, drift_ppm: i64) -> Fault {
        Fault::Drift {
            node: node.into(),
            drift_ppm,
        }
    }

    /// Drop every message between hosts `a` and `b`.
    pub fn partition(a: &str, b: &str) -> Fault {
        Fault::Partition {
            a: a.into(),
            b: b.into(),
            oneway: false,
        }
    }

    /// Restore the link between hosts `a` and `b`.
    pub fn heal(a: &str, b: &str) -> Fault {
        Fault::Heal {
            a: a.into(),
            b: b.into(),
            oneway: false,
        }
    }

    /// Hold every message between hosts `a` and `b` until a `release`.
    pub fn hold(a: &str, b: &str) -> Fault {
        Fault::Hold {
            a: a.into(),
            b: b.into(),
        }
    }

    /// Deliver what was held between hosts `a` and `b`, and stop holding.
    pub fn release(a: &str, b: &str) -> Fault {
        Fault::Release {
            a: a.into(),
            b: b.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_schedule_reads_as_the_same_schedule_in_code() {
        let text = r#"
[[fault]]
kind = "crash"
node = "redis-1"
when_holds = { node = "worker-1", key = "invoices" }

[[fault]]
kind = "restart"
node = "redis-1"
after = { fault = 0, after_ms = 300 }

[[fault]]
at_ms = 4000
kind = "pause"
node = "worker-2"
duration_ms = 500
"#;
        let code = FaultSchedule::new()
            .when_holds("worker-1", "invoices", fault::crash("redis-1"))
            .then_after_ms(300, fault::restart("redis-1"))
            .at_ms(4_000, fault::pause("worker-2", 500));
        assert_eq!(FaultSchedule::from_toml(text), Ok(code));
    }

    #[test]
    fn a_bad_table_is_named_as_a_scenario_files_would_be() {
        let err = |text: &str| FaultSchedule::from_toml(text).expect_err("refused").to_string();
        let unknown = err("[[fault]]\nat_ms = 1\nkind = \"flood\"\nnode = \"redis-1\"\n");
        assert!(
            unknown.contains("fault[0].kind") && unknown.contains("unknown fault kind `flood`"),
            "{unknown}"
        );
        let missing = err("[[fault]]\nkind = \"crash\"\nwhen_holds = { node = \"w\" }\nnode = \"r\"\n");
        assert_eq!(
            missing,
            "fault schedule: fault[0].when_holds.key: required field is missing"
        );
        let forward = err("[[fault]]\nkind = \"restart\"\nnode = \"r\"\nafter = { fault = 0, after_ms = 1 }\n");
        assert!(
            forward.contains("fault[0].after.fault: 0: must name an earlier fault"),
            "{forward}"
        );
        let neither = err("[[fault]]\nkind = \"crash\"\nnode = \"r\"\n");
        assert!(neither.contains("fault[0]") && neither.contains("at_ms"), "{neither}");
    }
}
