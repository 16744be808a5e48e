//! Checkers: judges of a run that read only its history.
//!
//! Each checker answers [`Verdict::Valid`], [`Verdict::Invalid`] or [`Verdict::Unknown`] (it
//! cannot decide from this history), with a one-line explanation and, when invalid, a witness: the
//! events that prove it. Checkers judge the system under test; they never panic on its bugs.

use lockstep_sim::{Event, History};
use serde::{Deserialize, Serialize};

pub use crate::model::Verdict;

/// One checker's result on one history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The checker's name (`mutual-exclusion`, ...).
    pub checker: String,
    /// The verdict.
    pub verdict: Verdict,
    /// One line saying why.
    pub explanation: String,
    /// The events that prove a violation (empty when valid).
    pub witness: Vec<Event>,
}

/// A property of histories.
pub trait Checker {
    /// The checker's name as used in scenario files and reports (`mutual-exclusion`, ...).
    fn name(&self) -> &'static str;
    /// Judges `history`.
    fn check(&self, history: &History) -> CheckResult;
}

pub mod lost_update;
pub mod mutual_exclusion;
pub mod stale_write;
pub mod token_order;

pub use lost_update::LostUpdate;
pub use mutual_exclusion::MutualExclusion;
pub use stale_write::StaleWrite;
pub use token_order::TokenOrder;

/// The checkers' names, in the order [`all`] returns them.
pub const NAMES: &[&str] = &[
    mutual_exclusion::NAME,
    stale_write::NAME,
    lost_update::NAME,
    token_order::NAME,
];

/// Every checker: `mutual-exclusion`, `stale-write`, `lost-update`, `token-order`, in that order.
pub fn all() -> Vec<Box<dyn Checker>> {
    vec![
        Box::new(MutualExclusion),
        Box::new(StaleWrite),
        Box::new(LostUpdate),
        Box::new(TokenOrder),
    ]
}

/// The checker called `name` (one of [`NAMES`]), if there is one.
pub fn by_name(name: &str) -> Option<Box<dyn Checker>> {
    all().into_iter().find(|c| c.name() == name)
}

/// A true time as seconds with three decimals (truncated), e.g. `10.502 s`.
pub(crate) fn seconds(at_us: u64) -> String {
    format!("{}.{:03} s", at_us / 1_000_000, at_us % 1_000_000 / 1_000)
}

/// `token 3`, or `no token`.
/// A grant's value shortened for one-line explanations (the witness keeps it whole).
pub(crate) fn grant_text(value: &str) -> &str {
    value.get(..8).unwrap_or(value)
}

pub(crate) fn token_text(token: Option<u64>) -> String {
    match token {
        Some(t) => format!("token {t}"),
        None => "no token".to_string(),
    }
}

/// `1 grant`, `2 grants`: `n` and the noun, plural unless `n` is 1.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Clones `events` into a witness: in `seq` order, each event once.
pub(crate) fn witness(events: &[&Event]) -> Vec<Event> {
    let mut out: Vec<Event> = events.iter().map(|e| (*e).clone()).collect();
    out.sort_by_key(|e| e.seq);
    out.dedup_by_key(|e| e.seq);
    out
}

#[cfg(test)]
pub(crate) mod testkit {
    //! Hand-built histories for the checkers' unit tests.

    use crate::ops::{self, AcquireInvoke, Grant, GrantRef, WriteInvoke};
    use lockstep_sim::{EventKind, History, Phase};
    use serde_json::{json, Value};

    /// The `seq`s of a result's witness.
    pub(crate) fn seqs(result: &super::CheckResult) -> Vec<u64> {
        result.witness.iter().map(|e| e.seq).collect()
    }

    /// Builds a history event by event; times are true microseconds.
    #[derive(Default)]
    pub(crate) struct Builder {
        pub(crate) history: History,
    }

    impl Builder {
        pub(crate) fn new() -> Self {
            Self::default()
        }

        /// Appends an `Op` event and returns its seq.
        pub(crate) fn op(&mut self, at_us: u64, node: &str, id: u64, phase: Phase, op: &str, data: Value) -> u64 {
            let wall_ms = 1_700_000_000_000 + (at_us / 1_000) as i64;
            self.history.push(
                at_us,
                node,
                wall_ms,
                (at_us / 1_000) as i64,
                EventKind::Op {
                    id,
                    phase,
                    op: op.to_string(),
                    data,
                },
            )
        }

        /// A fresh op id.
        pub(crate) fn id(&mut self) -> u64 {
            self.history.next_op_id()
        }

        /// An acquire invoke at `invoke_us` and its ok at `ok_us`; returns the ok's seq.
        pub(crate) fn acquire(
            &mut self,
            invoke_us: u64,
            ok_us: u64,
            node: &str,
            key: &str,
            value: &str,
            token: Option<u64>,
        ) -> u64 {
            let id = self.id();
            let invoke = AcquireInvoke {
                key: key.to_string(),
                ttl_ms: 10_000,
            };
            self.op(
                invoke_us,
                node,
                id,
                Phase::Invoke,
                ops::names::ACQUIRE,
                ops::to_data(&invoke),
            );
            let grant = Grant {
                key: key.to_string(),
                value: value.to_string(),
                fencing_token: token,
                validity_ms: 9_990,
            };
            self.op(ok_us, node, id, Phase::Ok, ops::names::ACQUIRE, ops::to_data(&grant))
        }

        /// An acquire invoke alone; returns its seq.
        pub(crate) fn acquire_invoke(&mut self, at_us: u64, node: &str, key: &str) -> u64 {
            let id = self.id();
            let invoke = AcquireInvoke {
                key: key.to_string(),
                ttl_ms: 10_000,
            };
            self.op(
                at_us,
                node,
                id,
                Phase::Invoke,
                ops::names::ACQUIRE,
                ops::to_data(&invoke),
            )
        }

        /// A release invoke at `invoke_us` and its ok at `ok_us`; returns the invoke's seq.
        pub(crate) fn release(
            &mut self,
            invoke_us: u64,
            ok_us: u64,
            node: &str,
            key: &str,
            value: &str,
            token: Option<u64>,
        ) -> u64 {
            let id = self.id();
            let grant = GrantRef {
                key: key.to_string(),
                value: value.to_string(),
                fencing_token: token,
            };
            let seq = self.op(
                invoke_us,
                node,
                id,
                Phase::Invoke,
                ops::names::RELEASE,
                ops::to_data(&grant),
            );
            self.op(
                ok_us,
                node,
                id,
                Phase::Ok,
                ops::names::RELEASE,
                json!({ "released": true }),
            );
            seq
        }

        /// A write invoke; returns its seq (the caller adds the resource event and completion).
        pub(crate) fn write_invoke(
            &mut self,
            at_us: u64,
            node: &str,
            key: &str,
            value: i64,
            token: Option<u64>,
        ) -> u64 {
            let id = self.id();
            let write = WriteInvoke {
                key: key.to_string(),
                value,
                fencing_token: token,
            };
            self.op(at_us, node, id, Phase::Invoke, ops::names::WRITE, ops::to_data(&write))
        }

        /// A write attempt seen by the resource; returns its seq.
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn resource_write(
            &mut self,
            at_us: u64,
            client: &str,
            key: &str,
            value: i64,
            token: Option<u64>,
            accepted: bool,
            version: u64,
        ) -> u64 {
            self.history.push(
                at_us,
                "resource",
                1_700_000_000_000 + (at_us / 1_000) as i64,
                (at_us / 1_000) as i64,
                EventKind::ResourceWrite {
                    client: client.to_string(),
                    key: key.to_string(),
                    value,
                    token,
                    accepted,
                    version,
                    highest_token_before: None,
                },
            )
        }

        /// A whole write: invoke, resource event, completion. Returns the resource event's seq.
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn write(
            &mut self,
            at_us: u64,
            node: &str,
            key: &str,
            value: i64,
            token: Option<u64>,
            accepted: bool,
            version: u64,
        ) -> u64 {
            let id = self.id();
            let write = WriteInvoke {
                key: key.to_string(),
                value,
                fencing_token: token,
            };
            self.op(at_us, node, id, Phase::Invoke, ops::names::WRITE, ops::to_data(&write));
            let seq = self.resource_write(at_us + 1_000, node, key, value, token, accepted, version);
            if accepted {
                self.op(
                    at_us + 2_000,
                    node,
                    id,
                    Phase::Ok,
                    ops::names::WRITE,
                    json!({ "version": version }),
                );
            } else {
                self.op(
                    at_us + 2_000,
                    node,
                    id,
                    Phase::Fail,
                    ops::names::WRITE,
                    json!({ "error": "stale token" }),
                );
            }
            seq
        }

        pub(crate) fn build(self) -> History {
            self.history
        }
    }

    /// The seqs of the events that matter in [`kleppmann`].
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Story {
        /// client-1's acquire ok (token 1, at 0.002 s).
        pub(crate) c1_acquired: u64,
        /// client-2's acquire ok (token 2, at 10.502 s).
        pub(crate) c2_acquired: u64,
        /// The resource accepting client-2's write of 1 (10.601 s).
        pub(crate) c2_write: u64,
        /// client-2's release invoke (10.700 s).
        pub(crate) c2_release: u64,
        /// The resource seeing client-1's late write of 1 (17.001 s).
        pub(crate) c1_write: u64,
        /// client-1's release invoke after its pause (17.100 s).
        pub(crate) c1_release: u64,
    }

    /// Kleppmann's pause story: client-1 takes the lock (token 1) and freezes; its lease runs out,
    /// client-2 takes the lock (token 2) at 10.5 s, reads nothing, writes 1 (accepted) and
    /// releases; client-1 wakes at 17 s and writes its own 1. With `fenced`, the resource rejects
    /// client-1's write (token 1 < 2); without, it accepts it.
    pub(crate) fn kleppmann(fenced: bool) -> (History, Story) {
        let mut b = Builder::new();
        let c1_acquired = b.acquire(0, 2_000, "client-1", "lock", "g1", Some(1));
        let id = b.id();
        b.op(
            3_000,
            "client-1",
            id,
            Phase::Invoke,
            ops::names::READ,
            json!({ "key": "counter" }),
        );
        b.op(
            4_000,
            "client-1",
            id,
            Phase::Ok,
            ops::names::READ,
            json!({ "value": null, "version": 0 }),
        );
        let c2_acquired = b.acquire(10_500_000, 10_502_000, "client-2", "lock", "g2", Some(2));
        let id = b.id();
        b.op(
            10_550_000,
            "client-2",
            id,
            Phase::Invoke,
            ops::names::READ,
            json!({ "key": "counter" }),
        );
        b.op(
            10_551_000,
            "client-2",
            id,
            Phase::Ok,
            ops::names::READ,
            json!({ "value": null, "version": 0 }),
        );
        let c2_write = b.write(10_600_000, "client-2", "counter", 1, Some(2), true, 1);
        let c2_release = b.release(10_700_000, 10_701_000, "client-2", "lock", "g2", Some(2));
        let c1_write = b.write(17_000_000, "client-1", "counter", 1, Some(1), !fenced, 2);
        let c1_release = b.release(17_100_000, 17_101_000, "client-1", "lock", "g1", Some(1));
        (
            b.build(),
            Story {
                c1_acquired,
                c2_acquired,
                c2_write,
                c2_release,
                c1_write,
                c1_release,
            },
        )
    }

    /// A history full of op data that decodes as nothing the checkers expect.
    pub(crate) fn malformed() -> History {
        let mut b = Builder::new();
        let junk = [
            Value::Null,
            json!("acquire"),
            json!(42),
            json!([1, 2, 3]),
            json!({ "key": 5, "value": [], "fencing_token": -1 }),
            json!({ "key": "lock" }),
            json!({ "key": "lock", "value": "g", "fencing_token": "seven", "validity_ms": 1 }),
            json!({ "key": "counter", "value": 1.5, "fencing_token": null }),
        ];
        let mut t = 0;
        for data in junk.iter() {
            for op in ["acquire", "release", "extend", "write", "read", "abort", "", "???"] {
                for phase in [Phase::Invoke, Phase::Ok, Phase::Fail, Phase::Info] {
                    let id = b.id();
                    b.op(t, "client-1", id, phase, op, data.clone());
                    t += 1;
                }
            }
        }
        // Resource writes nobody invoked, with extreme values.
        b.resource_write(t, "client-9", "counter", i64::MIN, Some(u64::MAX), true, u64::MAX);
        b.resource_write(t, "client-9", "counter", i64::MAX, None, true, 0);
        b.resource_write(t, "", "", 0, Some(0), false, 0);
        // One good grant after the junk, with an extreme token.
        b.acquire(t + 1, t + 2, "client-2", "lock", "g", Some(u64::MAX));
        b.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_match_checkers() {
        let names: Vec<&str> = all().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["mutual-exclusion", "stale-write", "lost-update", "token-order"]);
        assert_eq!(names, NAMES);
        for name in NAMES {
            assert_eq!(by_name(name).map(|c| c.name()), Some(*name));
        }
        assert!(by_name("linearizable").is_none());
    }

    #[test]
    fn every_checker_names_itself_in_its_result() {
        let history = testkit::kleppmann(false).0;
        for checker in all() {
            assert_eq!(checker.check(&history).checker, checker.name());
        }
    }

    #[test]
    fn the_kleppmann_story_verdicts() {
        let verdicts = |fenced| -> Vec<Verdict> {
            let history = testkit::kleppmann(fenced).0;
            all().iter().map(|c| c.check(&history).verdict).collect()
        };
        use Verdict::*;
        assert_eq!(verdicts(false), [Invalid, Invalid, Invalid, Valid]);
        assert_eq!(verdicts(true), [Invalid, Valid, Valid, Valid]);
    }

    #[test]
    fn random_histories_never_panic() {
        use crate::ops::{names, to_data, AcquireInvoke, Grant, GrantRef, WriteInvoke};
        use lockstep_sim::Phase;
        use serde_json::json;

        // xorshift64: deterministic and dependency-free.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let nodes = ["client-1", "client-2", "client-3"];
        let keys = ["lock", "counter", "other"];
        let ops = [
            names::ACQUIRE,
            names::EXTEND,
            names::RELEASE,
            names::READ,
            names::WRITE,
            names::ABORT,
        ];
        let phases = [Phase::Invoke, Phase::Ok, Phase::Fail, Phase::Info];
        // Which verdicts each checker reached: the histories must exercise valid and invalid.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let mut b = testkit::Builder::new();
            let mut t = 0;
            for _ in 0..next(60) {
                t += next(3) * 1_000;
                let node = nodes[next(3) as usize];
                let key = keys[next(3) as usize].to_string();
                let value = format!("v{}", next(4));
                let token = [None, Some(next(5)), Some(u64::MAX)][next(3) as usize];
                // Mostly well-formed ops in the workload's shapes, some junk in any shape.
                let (op, phase, data) = match next(8) {
                    0 => (
                        names::ACQUIRE,
                        Phase::Invoke,
                        to_data(&AcquireInvoke { key, ttl_ms: 10 }),
                    ),
                    1 | 2 => (
                        names::ACQUIRE,
                        Phase::Ok,
                        to_data(&Grant {
                            key,
                            value,
                            fencing_token: token,
                            validity_ms: 5,
                        }),
                    ),
                    3 => (
                        [names::RELEASE, names::ABORT][next(2) as usize],
                        Phase::Invoke,
                        to_data(&GrantRef {
                            key,
                            value,
                            fencing_token: token,
                        }),
                    ),
                    4 => {
                        // A write invoke, usually followed by the resource's record of it.
                        let write = WriteInvoke {
                            key,
                            value: next(4) as i64 - 1,
                            fencing_token: token,
                        };
                        let id = next(10);
                        b.op(t, node, id, Phase::Invoke, names::WRITE, to_data(&write));
                        if next(3) != 0 {
                            let accepted = next(4) != 0;
                            b.resource_write(t, node, &write.key, write.value, token, accepted, 0);
                        }
                        continue;
                    }
                    5 => {
                        let junk = [json!({ "key": [key] }), serde_json::Value::Null, json!("x")];
                        (
                            ops[next(6) as usize],
                            phases[next(4) as usize],
                            junk[next(3) as usize].clone(),
                        )
                    }
                    _ => {
                        let accepted = next(3) != 0;
                        let value = [0, 1, 2, 3, i64::MIN, i64::MAX][next(6) as usize];
                        b.resource_write(t, node, &key, value, token, accepted, next(9));
                        continue;
                    }
                };
                let id = next(10);
                b.op(t, node, id, phase, op, data);
            }
            let history = b.build();
            for checker in all() {
                let result = checker.check(&history);
                let seqs: Vec<u64> = result.witness.iter().map(|e| e.seq).collect();
                assert!(seqs.windows(2).all(|w| w[0] < w[1]), "witness out of order: {seqs:?}");
                assert_eq!(result.verdict == Verdict::Invalid, !result.witness.is_empty());
                seen.insert((checker.name(), result.verdict));
            }
        }
        for name in NAMES {
            assert!(
                seen.contains(&(*name, Verdict::Invalid)),
                "{name} never invalid: {seen:?}"
            );
            assert!(seen.contains(&(*name, Verdict::Valid)), "{name} never valid: {seen:?}");
        }
    }

    #[test]
    fn helpers_format() {
        assert_eq!(seconds(10_502_999), "10.502 s");
        assert_eq!(seconds(0), "0.000 s");
        assert_eq!(token_text(Some(3)), "token 3");
        assert_eq!(token_text(None), "no token");
        assert_eq!(count(1, "grant", "grants"), "1 grant");
        assert_eq!(count(0, "grant", "grants"), "0 grants");
    }
}
