//! Hand-built histories for the unit tests of the history reader and its readers (checkers,
//! timelines, liveness).

use crate::ops::{self, AcquireInvoke, Grant, GrantRef, WriteInvoke};
use lockstep_sim::{EventKind, History, Phase};
use serde_json::{json, Value};

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
            validity_from_ms: None,
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
            value_sent: None,
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
    pub(crate) fn write_invoke(&mut self, at_us: u64, node: &str, key: &str, value: i64, token: Option<u64>) -> u64 {
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

    /// A command on master `node` (client connection 1) with its key effects: `(key, before,
    /// after)`, each a string value and its expiry (ms), or `None` for absent. Returns its seq.
    #[allow(clippy::type_complexity)]
    pub(crate) fn command(
        &mut self,
        at_us: u64,
        node: &str,
        args: &[&str],
        effects: &[(&str, Option<(&str, i64)>, Option<(&str, i64)>)],
    ) -> u64 {
        self.command_from(at_us, node, None, args, effects)
    }

    /// [`Builder::command`], sent by `client` (as the masters' log names the sender).
    #[allow(clippy::type_complexity)]
    pub(crate) fn command_from(
        &mut self,
        at_us: u64,
        node: &str,
        client: Option<&str>,
        args: &[&str],
        effects: &[(&str, Option<(&str, i64)>, Option<(&str, i64)>)],
    ) -> u64 {
        let state = |s: Option<(&str, i64)>| {
            s.map(|(value, expire_at_ms)| lockstep_sim::KeyState {
                value: Some(value.to_string()),
                fields: Vec::new(),
                expire_at_ms: Some(expire_at_ms),
            })
        };
        let effects = effects
            .iter()
            .map(|&(key, before, after)| lockstep_sim::KeyEffect {
                key: key.to_string(),
                before: state(before),
                after: state(after),
            })
            .collect();
        let wall_ms = 1_700_000_000_000 + (at_us / 1_000) as i64;
        self.history.push(
            at_us,
            node,
            wall_ms,
            (at_us / 1_000) as i64,
            EventKind::Command {
                conn: 1,
                args: args.iter().map(|a| a.to_string()).collect(),
                reply: ":1".to_string(),
                effects,
                client: client.map(str::to_string),
            },
        )
    }

    /// An acquire invoke alone; returns its op id (for [`Builder::granted`]).
    pub(crate) fn acquire_started(&mut self, at_us: u64, node: &str, key: &str) -> u64 {
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
        );
        id
    }

    /// The ok of acquire `id` (from [`Builder::acquire_started`]); returns its seq.
    pub(crate) fn granted(&mut self, at_us: u64, node: &str, id: u64, key: &str, value: &str) -> u64 {
        let grant = Grant {
            key: key.to_string(),
            value: value.to_string(),
            fencing_token: None,
            validity_ms: 9_990,
            validity_from_ms: None,
        };
        self.op(at_us, node, id, Phase::Ok, ops::names::ACQUIRE, ops::to_data(&grant))
    }

    /// An extend of the grant `value` invoked at `invoke_us`, answered ok at `ok_us` (`None`:
    /// still running). Returns the invoke's seq.
    pub(crate) fn extend(&mut self, invoke_us: u64, ok_us: Option<u64>, node: &str, key: &str, value: &str) -> u64 {
        let id = self.id();
        let invoke = json!({ "key": key, "value": value, "fencing_token": null, "ttl_ms": 10_000 });
        let seq = self.op(invoke_us, node, id, Phase::Invoke, ops::names::EXTEND, invoke);
        if let Some(ok_us) = ok_us {
            let grant = json!({ "key": key, "value": value, "fencing_token": null, "validity_ms": 9_990 });
            self.op(ok_us, node, id, Phase::Ok, ops::names::EXTEND, grant);
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
