//! Faults the test chooses: `lockstep serve`'s control commands, in-band (over the Redis
//! protocol, on any master's connection) and out of band (the HTTP endpoint,
//! [`super::control_http`]), each applied at once and recorded in the history as a fault, like a
//! planned one.
//!
//! In-band, a test uses the commands it already sends a real Redis for this:
//! - `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]`: a clean stop of that master (what its persistence
//!   keeps survives: with `aof-*` everything, with `none` nothing — there is no RDB snapshot), and
//!   the restart policy starts it again after `--restart-after-ms` (default 1000 ms; never with
//!   `--no-restart`). `SHUTDOWN ABORT` answers as Redis does with no shutdown in progress.
//! - `DEBUG SLEEP seconds`: the master stops serving for that long (a `pause` fault); the reply
//!   comes when it ends, as Redis' does.
//! - `CLIENT PAUSE`/`UNPAUSE`, `CLIENT KILL`: the server loop's own (recorded as commands; the
//!   report lists them with the faults).
//! - `ROLE`; on a serve with replicas `FAILOVER` (a `failover` fault: a replica is promoted) and
//!   `REPLICAOF NO ONE` sent to a replica (promotes it the same way). Moving a master under
//!   another (`REPLICAOF host port`) is refused with a reason.
//! - `LOCKSTEP FAULT KIND [field=value ...]` (or one JSON object): any of lockstep's fault kinds,
//!   now, e.g. `LOCKSTEP FAULT crash` (this master), `LOCKSTEP FAULT pause node=redis-2
//!   duration_ms=1500`, `LOCKSTEP FAULT clock-jump delta_ms=20000`; a stop takes
//!   `restart_after_ms=N` or `restart=no` to override the policy. Refused unless serve runs with
//!   `--control` (any local process can connect). `LOCKSTEP LABEL NAME` labels the test now;
//!   `LOCKSTEP HELP` lists the forms.
//!
//! An in-band fault strikes just after its reply is written (a crash of the very master the test
//! talks to would otherwise swallow its `OK`): the fault's time in the history is when it struck.
//! Faults on client processes (`pause`, `crash`, clock faults of a client name) are refused:
//! serve runs no clients. Left out: `REPLICAOF host port`, `DEBUG` but `SLEEP`. (`MONITOR` is the
//! server loop's own.)

use super::faults::{self, LiveNodes, Targets};
use super::recorder::LiveRecorder;
use bytes::Bytes;
use lockstep_history::role::Role;
use lockstep_sim::redis::server::Control;
use lockstep_sim::redis::Reply;
use lockstep_sim::{EventKind, Fault, FaultTargets};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// `--restart-after-ms`'s default.
pub const RESTART_AFTER_MS: u64 = 1_000;

pub use super::recorder::{control_label, CONTROL_LABEL_NOTE, CONTROL_LABEL_SUFFIX};

/// How the test may control the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlSettings {
    /// Whether `LOCKSTEP FAULT` is accepted (`--control`).
    pub lockstep_commands: bool,
    /// How long after a stop the test asked for the master starts again (`None`: it stays down).
    pub restart_after_ms: Option<u64>,
}

impl Default for ControlSettings {
    fn default() -> Self {
        ControlSettings {
            lockstep_commands: false,
            restart_after_ms: Some(RESTART_AFTER_MS),
        }
    }
}

/// A fault the test asked for, with how it came.
#[derive(Debug, Clone, PartialEq)]
pub struct Injection {
    /// The fault.
    pub fault: Fault,
    /// For a stop: when to start the server again, ms after it (`None`: the policy's).
    pub restart_after_ms: Option<Option<u64>>,
}

/// The nodes a serve has, as a fault names them.
struct ServeNodes {
    roles: BTreeMap<String, Role>,
    order: Vec<String>,
    replicated: Vec<String>,
}

impl FaultTargets for ServeNodes {
    fn role(&self, node: &str) -> Option<Role> {
        self.roles.get(node).copied()
    }

    fn is_replicated(&self, node: &str) -> bool {
        self.replicated.iter().any(|n| n == node)
    }

    fn node_names(&self) -> Vec<String> {
        self.order.clone()
    }
}

impl super::server::ControlCommands for Controller {
    fn command(self: Rc<Self>, node: &str, args: &[Bytes]) -> Option<Control> {
        Controller::command(&self, node, args)
    }
}

/// The servers' controller: applies the faults the test asks for.
pub struct Controller {
    rec: LiveRecorder,
    targets: Rc<Targets>,
    settings: ControlSettings,
    nodes: ServeNodes,
    /// The client names of the scenario (port sets): not processes, so no process fault.
    clients: Vec<String>,
    /// Every server's address, by name (for `ROLE`).
    addresses: BTreeMap<String, String>,
}

impl Controller {
    /// A controller over `targets`. `redis`: every Redis server (masters and replicas);
    /// `replicated`: the members of groups with replicas; `clients`: the scenario's client names;
    /// `addresses`: each server's address.
    pub fn new(
        rec: LiveRecorder,
        targets: Rc<Targets>,
        settings: ControlSettings,
        redis: &[String],
        replicated: &[String],
        clients: &[String],
        addresses: BTreeMap<String, String>,
    ) -> Rc<Self> {
        let mut roles = BTreeMap::new();
        let mut order = Vec::new();
        for name in redis {
            let role = if targets.replication.repl.borrow().is_master(name) {
                Role::Master
            } else {
                Role::Replica
            };
            roles.insert(name.clone(), role);
            order.push(name.clone());
        }
        roles.insert(crate::run::RESOURCE_NODE.to_string(), Role::Resource);
        order.push(crate::run::RESOURCE_NODE.to_string());
        for c in clients {
            roles.insert(c.clone(), Role::Client);
            order.push(c.clone());
        }
        Rc::new(Controller {
            rec,
            targets,
            settings,
            nodes: ServeNodes {
                roles,
                order,
                replicated: replicated.to_vec(),
            },
            clients: clients.to_vec(),
            addresses,
        })
    }

    /// The settings.
    pub fn settings(&self) -> ControlSettings {
        self.settings
    }

    /// Why `fault` cannot be applied here (`None`: it can).
    pub fn refusal(&self, fault: &Fault) -> Option<String> {
        if let Err(e) = fault.validate(&self.nodes) {
            return Some(format!("{}: {e}", e.field()));
        }
        if let Some(node) = fault.subject().filter(|n| self.clients.iter().any(|c| c == n)) {
            return Some(format!(
                "{node} names a set of ports, not a process: lockstep serve runs no clients (a {} fault needs one)",
                fault.kind()
            ));
        }
        let redis: Vec<String> = self
            .nodes
            .order
            .iter()
            .filter(|n| matches!(self.nodes.roles.get(*n), Some(Role::Master | Role::Replica)))
            .cloned()
            .collect();
        faults::refusal(
            fault,
            &LiveNodes {
                clients: &self.clients,
                redis: &redis,
                replicated: &self.nodes.replicated,
                resource: crate::run::RESOURCE_NODE,
            },
            false,
        )
    }

    /// Applies `injection` now (recorded as a fault), and for a stop schedules the restart its
    /// policy says. Refused with a reason when the fault cannot be applied.
    pub fn inject(&self, injection: &Injection) -> Result<String, String> {
        if let Some(why) = self.refusal(&injection.fault) {
            return Err(why);
        }
        faults::apply(&self.rec, &self.targets, &injection.fault);
        let mut said = format!("{} applied", injection.fault.describe());
        if let Fault::Crash { node } | Fault::PowerLoss { node } | Fault::Shutdown { node } = &injection.fault {
            let after = injection.restart_after_ms.unwrap_or(self.settings.restart_after_ms);
            match after {
                Some(ms) => {
                    let (rec, targets, node) = (self.rec.clone(), self.targets.clone(), node.clone());
                    said.push_str(&format!("; {node} restarts in {ms} ms"));
                    tokio::task::spawn_local(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        faults::apply(&rec, &targets, &Fault::Restart { node });
                    });
                }
                None => said.push_str(&format!("; {node} stays down until a restart fault")),
            }
        }
        Ok(said)
    }

    /// Records a test label given out of band: the test `name` starts now, for every client.
    pub fn label(&self, name: &str) {
        // A test's name is a line; a client may send megabytes: kept as the history keeps a
        // command's argument.
        let mut name = name.to_string();
        lockstep_history::history::bound_text(&mut name, lockstep_history::history::MAX_EVENT_ARG_BYTES);
        self.rec.record(
            "world",
            EventKind::Note {
                text: format!("{CONTROL_LABEL_NOTE}{name}{CONTROL_LABEL_SUFFIX}"),
            },
        );
    }

    /// Applies `injection` once the reply to the command that asked for it is out (see the
    /// [module](self) docs).
    fn inject_after_reply(self: &Rc<Self>, injection: Injection) -> Result<String, String> {
        if let Some(why) = self.refusal(&injection.fault) {
            return Err(why);
        }
        let said = format!("{} applied", injection.fault.describe());
        let me = self.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let _ = me.inject(&injection);
        });
        Ok(said)
    }

    /// A control command sent to `node` (see the [module](self) docs); `None`: not one.
    pub fn command(self: &Rc<Self>, node: &str, args: &[Bytes]) -> Option<Control> {
        let name = String::from_utf8_lossy(args.first()?).to_ascii_lowercase();
        let text = |i: usize| args.get(i).map(|a| String::from_utf8_lossy(a).into_owned());
        let now = |reply: Reply| Some(Control { reply, after: None });
        match name.as_str() {
            "shutdown" => {
                let mut flags = Vec::new();
                for a in &args[1..] {
                    let a = String::from_utf8_lossy(a).to_ascii_uppercase();
                    if !["NOSAVE", "SAVE", "NOW", "FORCE", "ABORT"].contains(&a.as_str()) {
                        return now(Reply::error("ERR syntax error"));
                    }
                    flags.push(a);
                }
                if flags.iter().any(|f| f == "ABORT") {
                    return now(Reply::error(if flags.len() == 1 {
                        "ERR No shutdown in progress."
                    } else {
                        "ERR syntax error"
                    }));
                }
                if flags.iter().any(|f| f == "SAVE") && flags.iter().any(|f| f == "NOSAVE") {
                    return now(Reply::error("ERR syntax error"));
                }
                let injection = Injection {
                    fault: Fault::Shutdown { node: node.to_string() },
                    restart_after_ms: None,
                };
                // Redis closes the connection without a reply; the reset that follows does.
                now(match self.inject_after_reply(injection) {
                    Ok(_) => Reply::ok(),
                    Err(why) => Reply::error(format!("ERR {why}")),
                })
            }
            "debug" => {
                let sub = text(1)?.to_ascii_lowercase();
                if sub != "sleep" {
                    return None;
                }
                let Some(seconds) = text(2)
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                else {
                    return now(Reply::error("ERR value is not a valid float"));
                };
                let duration_ms = (seconds * 1000.0).round().min(3_600_000.0) as u64;
                if duration_ms == 0 {
                    return now(Reply::ok());
                }
                let injection = Injection {
                    fault: Fault::Pause {
                        node: node.to_string(),
                        duration_ms,
                    },
                    restart_after_ms: None,
                };
                match self.inject(&injection) {
                    Ok(_) => Some(Control {
                        reply: Reply::ok(),
                        after: Some(Box::pin(tokio::time::sleep(Duration::from_millis(duration_ms)))),
                    }),
                    Err(why) => now(Reply::error(format!("ERR {why}"))),
                }
            }
            "role" if args.len() == 1 => now(self.role(node)),
            "failover" => {
                let repl = self.targets.replication.repl.borrow();
                let (is_master, has_replicas) = (
                    repl.is_master(node),
                    repl.replica_links().iter().any(|(_, m, _)| m == node),
                );
                drop(repl);
                if !is_master {
                    return now(Reply::error("ERR FAILOVER is not valid when server is a replica."));
                }
                if !has_replicas {
                    return now(Reply::error("ERR FAILOVER requires connected replicas."));
                }
                let injection = Injection {
                    fault: Fault::Failover { node: node.to_string() },
                    restart_after_ms: None,
                };
                now(match self.inject_after_reply(injection) {
                    Ok(_) => Reply::ok(),
                    Err(why) => Reply::error(format!("ERR {why}")),
                })
            }
            "replicaof" | "slaveof" if args.len() == 3 => {
                let (host, port) = (text(1)?, text(2)?);
                if !(host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one")) {
                    return now(Reply::error(
                        "ERR lockstep serve: only REPLICAOF NO ONE (promote this replica) is supported; replication \
                         follows the scenario's deployment",
                    ));
                }
                let repl = self.targets.replication.repl.borrow();
                let is_master = repl.is_master(node);
                drop(repl);
                if is_master {
                    return now(Reply::ok());
                }
                let injection = Injection {
                    fault: Fault::Failover { node: node.to_string() },
                    restart_after_ms: None,
                };
                now(match self.inject_after_reply(injection) {
                    Ok(_) => Reply::ok(),
                    Err(why) => Reply::error(format!("ERR {why}")),
                })
            }
            "lockstep" => now(self.lockstep(node, args)),
            _ => None,
        }
    }

    /// `ROLE` of `node`.
    fn role(&self, node: &str) -> Reply {
        let repl = self.targets.replication.repl.borrow();
        let offset = repl.offset(node) as i64;
        let bulk = |s: &str| Reply::Bulk(Some(Bytes::copy_from_slice(s.as_bytes())));
        let host_port = |name: &str| {
            let addr = self
                .addresses
                .get(name)
                .cloned()
                .unwrap_or_else(|| "127.0.0.1:0".to_string());
            match addr.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.to_string()),
                None => (addr, "0".to_string()),
            }
        };
        if repl.is_master(node) {
            let replicas: Vec<Reply> = repl
                .replica_links()
                .into_iter()
                .filter(|(_, master, _)| master == node)
                .map(|(_, _, replica)| {
                    let (h, p) = host_port(&replica);
                    Reply::Array(Some(vec![bulk(&h), bulk(&p), bulk(&offset.to_string())]))
                })
                .collect();
            Reply::Array(Some(vec![
                bulk("master"),
                Reply::Integer(offset),
                Reply::Array(Some(replicas)),
            ]))
        } else {
            let master = repl
                .group_name(node)
                .and_then(|g| {
                    repl.replica_links()
                        .into_iter()
                        .find(|(group, _, _)| group == g)
                        .map(|(_, m, _)| m)
                })
                .unwrap_or_default();
            let (h, p) = host_port(&master);
            let port = p.parse::<i64>().unwrap_or(0);
            Reply::Array(Some(vec![
                bulk("slave"),
                bulk(&h),
                Reply::Integer(port),
                bulk("connected"),
                Reply::Integer(offset),
            ]))
        }
    }

    /// `LOCKSTEP ...` sent to `node`.
    fn lockstep(self: &Rc<Self>, node: &str, args: &[Bytes]) -> Reply {
        let sub = args
            .get(1)
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
            .unwrap_or_default();
        match sub.as_str() {
            "HELP" => Reply::Array(Some(
                HELP.iter()
                    .map(|l| Reply::Bulk(Some(Bytes::from_static(l.as_bytes()))))
                    .collect(),
            )),
            "LABEL" if args.len() == 3 => {
                self.label(&String::from_utf8_lossy(&args[2]));
                Reply::ok()
            }
            "FAULT" if !self.settings.lockstep_commands => Reply::error(
                "ERR LOCKSTEP FAULT is disabled: start lockstep serve with --control to let tests inject faults",
            ),
            "FAULT" if args.len() >= 3 => {
                let words: Vec<String> = args[2..]
                    .iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                match parse_injection(&words, Some(node)) {
                    Ok(injection) => match self.inject_after_reply(injection) {
                        Ok(_) => Reply::ok(),
                        Err(why) => Reply::error(format!("ERR {why}")),
                    },
                    Err(why) => Reply::error(format!("ERR {why}")),
                }
            }
            _ => Reply::error("ERR unknown LOCKSTEP subcommand or wrong number of arguments (try LOCKSTEP HELP)"),
        }
    }
}

const HELP: &[&str] = &[
    "LOCKSTEP FAULT <kind> [<field>=<value> ...] -- apply one of lockstep's faults now (needs --control).",
    "    Kinds: pause, clock-jump, drift, partition, heal, hold, release, latency, loss, crash, restart,",
    "    power-loss, shutdown, failover. `node` defaults to this server. A stop takes restart_after_ms=N",
    "    or restart=no. Or one JSON object: LOCKSTEP FAULT {\"kind\":\"crash\",\"node\":\"redis-1\"}.",
    "LOCKSTEP LABEL <test> -- the test <test> starts now (for the report).",
    "LOCKSTEP HELP -- this text.",
];

/// Reads a fault the test asked for: `KIND field=value ...` or one JSON object (`{"kind": ...}`);
/// `here`: the node a node fault without `node` names. Values that read as integers or booleans
/// are those; the rest strings.
pub fn parse_injection(words: &[String], here: Option<&str>) -> Result<Injection, String> {
    let mut object = match words {
        [one] if one.trim_start().starts_with('{') => match serde_json::from_str::<serde_json::Value>(one) {
            Ok(serde_json::Value::Object(map)) => map,
            Ok(_) => return Err("a fault in JSON is one object".to_string()),
            Err(e) => return Err(format!("the fault is not valid JSON: {e}")),
        },
        [kind, fields @ ..] => {
            let mut map = serde_json::Map::new();
            map.insert("kind".to_string(), serde_json::Value::String(kind.to_ascii_lowercase()));
            for field in fields {
                let Some((k, v)) = field.split_once('=') else {
                    return Err(format!("`{field}`: fields are written field=value"));
                };
                let value = if let Ok(i) = v.parse::<i64>() {
                    serde_json::Value::from(i)
                } else if let Ok(b) = v.parse::<bool>() {
                    serde_json::Value::Bool(b)
                } else {
                    serde_json::Value::String(v.to_string())
                };
                map.insert(k.to_string(), value);
            }
            map
        }
        [] => return Err("no fault kind given (try LOCKSTEP HELP)".to_string()),
    };
    let restart_after_ms = match (object.remove("restart"), object.remove("restart_after_ms")) {
        (Some(serde_json::Value::String(s)), None) if s == "no" || s == "never" => Some(None),
        (Some(serde_json::Value::Bool(false)), None) => Some(None),
        (None, Some(serde_json::Value::Number(n))) => match n.as_u64() {
            Some(ms) => Some(Some(ms)),
            None => return Err("restart_after_ms must be a non-negative integer".to_string()),
        },
        (None, Some(_)) => return Err("restart_after_ms must be a non-negative integer".to_string()),
        (None, None) => None,
        _ => return Err("give restart=no or restart_after_ms=N, not both".to_string()),
    };
    let kind = match object.get("kind") {
        Some(serde_json::Value::String(k)) => k.clone(),
        _ => return Err(format!("a fault needs a kind (one of {})", Fault::KINDS.join(", "))),
    };
    if !Fault::KINDS.contains(&kind.as_str()) {
        return Err(format!(
            "unknown fault kind `{kind}` (kinds: {})",
            Fault::KINDS.join(", ")
        ));
    }
    // A fault that names one node and is given none names `here` (which kinds do is the fault
    // type's own say: the field it misses).
    let read = |object: serde_json::Map<String, serde_json::Value>| {
        serde_json::from_value::<Fault>(serde_json::Value::Object(object)).map_err(|e| e.to_string())
    };
    let fault = match (read(object.clone()), here) {
        (Err(e), Some(here)) if e.contains("missing field `node`") && !object.contains_key("node") => {
            object.insert("node".to_string(), serde_json::Value::String(here.to_string()));
            read(object)
        }
        (result, _) => result,
    }
    .map_err(|e| format!("fault `{kind}`: {e}"))?;
    Ok(Injection {
        fault,
        restart_after_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_fault_is_read_from_words_or_json_and_names_this_server_by_default() {
        let i = parse_injection(&words("crash"), Some("redis-1")).unwrap();
        assert_eq!(i.fault, Fault::Crash { node: "redis-1".into() });
        assert_eq!(i.restart_after_ms, None);
        let i = parse_injection(&words("PAUSE node=redis-2 duration_ms=1500"), Some("redis-1")).unwrap();
        assert_eq!(
            i.fault,
            Fault::Pause {
                node: "redis-2".into(),
                duration_ms: 1500
            }
        );
        let i = parse_injection(&words("shutdown restart=no"), Some("redis-1")).unwrap();
        assert_eq!(i.restart_after_ms, Some(None));
        let i = parse_injection(&words("crash restart_after_ms=250"), Some("redis-1")).unwrap();
        assert_eq!(i.restart_after_ms, Some(Some(250)));
        let json = vec![r#"{"kind":"clock-jump","node":"redis-1","delta_ms":20000}"#.to_string()];
        let i = parse_injection(&json, None).unwrap();
        assert_eq!(
            i.fault,
            Fault::ClockJump {
                node: "redis-1".into(),
                delta_ms: 20_000
            }
        );
    }

    #[test]
    fn a_bad_fault_is_refused_with_what_is_wrong() {
        let e = parse_injection(&words("explode"), Some("redis-1")).unwrap_err();
        assert!(e.contains("unknown fault kind `explode`"), "{e}");
        let e = parse_injection(&words("pause"), Some("redis-1")).unwrap_err();
        assert!(e.contains("duration_ms"), "{e}");
        let e = parse_injection(&words("crash nod=redis-1"), Some("redis-1")).unwrap_err();
        assert!(e.contains("nod"), "{e}");
        let e = parse_injection(&words("crash oops"), Some("redis-1")).unwrap_err();
        assert!(e.contains("field=value"), "{e}");
        let e = parse_injection(&words("crash restart=no restart_after_ms=5"), Some("redis-1")).unwrap_err();
        assert!(e.contains("not both"), "{e}");
        assert!(parse_injection(&[], None).is_err());
        assert!(parse_injection(&["{nope".to_string()], None).is_err());
    }

    #[test]
    fn a_control_label_note_reads_back() {
        assert_eq!(control_label("test test_crash (control)"), Some("test_crash"));
        assert_eq!(control_label("test  (control)"), None);
        assert_eq!(control_label("test x (conn 1, client app)"), None);
    }
}
