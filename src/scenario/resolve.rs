//! From text to a validated [`Scenario`]: parse, deserialize the raw file, fill in defaults,
//! check every value and name, and turn each failure into a [`ScenarioError`] with the line and
//! the dotted field.

mod script;
mod workload;

use super::locate::{line_col, FieldPath, Locator};
use super::raw::{RawClient, RawDeployment, RawNode, RawScenario, RawTopology};
use super::{ScenarioError, MAX_CLIENT_LINKS, MAX_GENERATED_NODES, MAX_KEY_BYTES, MAX_NODE_NAME_BYTES};
use crate::model::{
    Algorithm, AlgorithmSpec, ClientSpec, ExploreSpec, KeyError, LockKeys, LockSpec, NetworkSpec, NodeSpec, Scenario,
    WorkMs, CHECKERS, GENERATED_KINDS, MAX_EXPLORE_FAULTS, MAX_EXPLORE_SEEDS, RESOURCE_NODE,
};
use lockstep_history::fault::check_drift_ppm;
use lockstep_sim::clock::check_clock_offset_ms;
use lockstep_sim::{
    replica_name, ClockSpec, Fault, FaultError, FaultPlan, FaultTargets, MasterSetup, Role, ScheduledFault,
    RESERVED_NODE_NAMES,
};
use serde::Deserialize;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ops::Range;

/// The longest run a file may ask for (`duration_ms`): one simulated day.
pub(crate) const MAX_DURATION_MS: u64 = 86_400_000;
/// The largest history cap a file may set (`history_events_max`): at about 1 KB an event, some
/// 10 GB, as much as a large CI machine holds.
pub(crate) const MAX_HISTORY_EVENTS: u64 = 10_000_000;
/// The largest cap on a history's bytes of text a file may set (`history_bytes_max`): 8 GiB, as
/// much as a large CI machine holds.
pub(crate) const MAX_HISTORY_BYTES: u64 = 8 << 30;
/// The coarsest scheduler step (`tick_ms`): one minute.
pub(crate) const MAX_TICK_MS: u64 = 60_000;
/// The longest lock TTL (`lock.ttl_ms`): one day.
pub(crate) const MAX_TTL_MS: u64 = 86_400_000;

/// Parses and validates `source`; errors name `origin`.
pub(super) fn parse(source: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    parse_for(source, origin, false)
}

/// [`parse`], for a run of kind `live` (`true`: `lockstep live`, whose clients are real processes
/// that `crash` and `restart` may name).
pub(super) fn parse_for(source: &str, origin: &str, live: bool) -> Result<Scenario, ScenarioError> {
    parse_with(source, origin, live, false).map(|(scenario, _)| scenario)
}

/// A fault timed from a test's start: the test's name and the fault (`at_ms` counting from the
/// test's label).
pub type RelativeFault = (String, lockstep_sim::ScheduledFault);

/// [`parse_for`] a live run, for `lockstep serve`: faults may be timed from a test's start
/// (`after_test = "NAME"`, `at_ms` then counting from the test's label). Those are taken out of
/// the plan and returned with the test's name, in file order.
pub(super) fn parse_for_serve(source: &str, origin: &str) -> Result<(Scenario, Vec<RelativeFault>), ScenarioError> {
    let (mut scenario, marks) = parse_with(source, origin, true, true)?;
    let mut relative = Vec::new();
    let mut kept = Vec::new();
    for (i, f) in scenario.faults.faults.drain(..).enumerate() {
        match marks.iter().find(|(at, _)| *at == i) {
            Some((_, test)) => relative.push((test.clone(), f)),
            None => kept.push(f),
        }
    }
    scenario.faults.faults = kept;
    Ok((scenario, relative))
}

fn parse_with(
    source: &str,
    origin: &str,
    live: bool,
    serve: bool,
) -> Result<(Scenario, Vec<(usize, String)>), ScenarioError> {
    let ctx = Ctx {
        source,
        origin,
        locator: Locator::new(source),
        live,
        script_bytes: Cell::new(0),
        after_tests: serve.then(|| std::cell::RefCell::new(Vec::new())),
    };
    let doc = toml::de::DeTable::parse(source).map_err(|e| ctx.toml_error(&e))?;
    let raw = RawScenario::deserialize(toml::de::Deserializer::from(doc)).map_err(|e| ctx.toml_error(&e))?;
    let scenario = ctx.resolve(raw)?;
    let marks = ctx.after_tests.map(|m| m.into_inner()).unwrap_or_default();
    Ok((scenario, marks))
}

/// A text of `[[fault]]` tables only (see [`super::fault_tables`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    fault: Option<Vec<toml::Table>>,
}

/// The `[[fault]]` tables of `source`, read as a scenario file's are (see
/// [`super::fault_tables`]).
pub(super) fn fault_tables(
    source: &str,
    origin: &str,
    targets: &dyn FaultTargets,
    extra_keys: &[&str],
) -> Result<Vec<super::FaultTable>, ScenarioError> {
    let ctx = Ctx {
        source,
        origin,
        locator: Locator::new(source),
        live: false,
        script_bytes: Cell::new(0),
        after_tests: None,
    };
    let doc = toml::de::DeTable::parse(source).map_err(|e| ctx.toml_error(&e))?;
    let raw = RawFaults::deserialize(toml::de::Deserializer::from(doc)).map_err(|e| ctx.toml_error(&e))?;
    let mut tables = Vec::new();
    for (index, mut table) in raw.fault.unwrap_or_default().into_iter().enumerate() {
        let mut extra = toml::Table::new();
        for key in extra_keys {
            if let Some(value) = table.remove(*key) {
                extra.insert((*key).to_string(), value);
            }
        }
        let at_ms_given = table.contains_key("at_ms");
        if !at_ms_given && !extra.is_empty() {
            table.insert("at_ms".into(), toml::Value::Integer(0));
        }
        let scheduled = ctx.fault(index, table, MAX_DURATION_MS, targets)?;
        tables.push(super::FaultTable {
            index,
            scheduled,
            at_ms_given,
            extra,
        });
    }
    Ok(tables)
}

/// An error at the top-level `key` of `source` (for checks across files).
pub(super) fn error_at_key(source: &str, origin: &str, key: &str, message: String) -> ScenarioError {
    let ctx = Ctx {
        source,
        origin,
        locator: Locator::new(source),
        live: false,
        script_bytes: Cell::new(0),
        after_tests: None,
    };
    ctx.err(&FieldPath::keys(&[key]), message)
}

/// An error about the field at `path` (dotted, with `[i]` indices: `topology.master[0].replicas`),
/// positioned at its key or its nearest written ancestor.
pub(super) fn error_at_path(source: &str, origin: &str, path: &str, message: String) -> ScenarioError {
    let ctx = Ctx {
        source,
        origin,
        locator: Locator::new(source),
        live: false,
        script_bytes: Cell::new(0),
        after_tests: None,
    };
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, indices) = part.split_once('[').map_or((part, ""), |(k, rest)| (k, rest));
        segs.push(super::locate::Seg::Key(key.to_string()));
        for index in indices.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse::<usize>() {
                segs.push(super::locate::Seg::Index(i));
            }
        }
    }
    let mut err = ctx.err(&FieldPath(segs), message);
    err.field = Some(path.to_string());
    err
}

/// The text between `prefix` and the next backtick, when `message` contains `prefix`.
fn quoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let start = message.find(prefix)? + prefix.len();
    let rest = &message[start..];
    rest.find('`').map(|end| &rest[..end])
}

/// The longest scenario name, in bytes: names become file names in a report (`runs/NAME/`,
/// `charts/timeline-NAME.svg`), which must stay well under a file system's 255 bytes.
pub const SCENARIO_NAME_MAX: usize = 100;

/// `name` followed by `suffix`, the name's part cut so that the whole has at most
/// [`SCENARIO_NAME_MAX`] bytes (a derived name — a counterexample's, a live run's report row —
/// must stay a valid name); a `-` left at the cut is dropped.
pub fn name_with_suffix(name: &str, suffix: &str) -> String {
    let room = SCENARIO_NAME_MAX.saturating_sub(suffix.len());
    let mut head = String::new();
    for c in name.chars() {
        if head.len() + c.len_utf8() > room {
            break;
        }
        head.push(c);
    }
    format!("{}{suffix}", head.trim_end_matches('-'))
}

fn check_scenario_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > SCENARIO_NAME_MAX {
        return Err(format!(
            "is {} bytes long: a scenario name has at most {SCENARIO_NAME_MAX}",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "`{name}` contains {bad:?}: a scenario name is made of a-z, 0-9 and `-`"
        ));
    }
    Ok(())
}

fn check_node_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a node name must not be empty".into());
    }
    if name.len() > MAX_NODE_NAME_BYTES {
        return Err(format!(
            "the node name is {} bytes long: at most {MAX_NODE_NAME_BYTES} (every event of the history carries it)",
            name.len()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "node name `{name}` contains {bad:?}: node names are made of A-Z, a-z, 0-9, `-`, `_` and `.`"
        ));
    }
    // The resource's own name is refused by `Ctx::claim` before this (with its own message).
    if name == RESOURCE_NODE || RESERVED_NODE_NAMES.contains(&name) {
        return Err(format!("node name `{name}` is reserved"));
    }
    Ok(())
}

/// A Redis key the file names: at most [`MAX_KEY_BYTES`].
pub(super) fn check_key_len(key: &str) -> Result<(), String> {
    if key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "is {} bytes long: a key has at most {MAX_KEY_BYTES} (every attempt sends it, and the history records it)",
            key.len()
        ));
    }
    Ok(())
}

fn check_work(work: WorkMs) -> Result<(), String> {
    match work {
        WorkMs::Range(min, max) if min > max => Err(format!("[{min}, {max}]: min is above max")),
        _ => Ok(()),
    }
}

/// The nodes defined so far: their roles, and their names in definition order. Faults are
/// checked against them by the sim's own [`Fault::validate`].
#[derive(Default)]
struct Nodes {
    kinds: BTreeMap<String, Role>,
    order: Vec<String>,
    /// Masters with replicas, and the replicas: what a `failover` may name.
    replicated: std::collections::BTreeSet<String>,
    /// Whether the scenario is read for a live run (clients may crash and restart).
    live: bool,
}

impl FaultTargets for Nodes {
    fn role(&self, node: &str) -> Option<Role> {
        self.kinds.get(node).copied()
    }

    fn is_replicated(&self, node: &str) -> bool {
        self.replicated.contains(node)
    }

    fn node_names(&self) -> Vec<String> {
        self.order.clone()
    }

    /// Clients crash and restart in live runs only: read for a simulation, such a fault is an
    /// error at its `node` field.
    fn restarts_clients(&self) -> bool {
        self.live
    }
}

/// The most replicas one master may have.
const MAX_REPLICAS: u32 = 16;

struct Ctx<'a> {
    source: &'a str,
    origin: &'a str,
    locator: Locator,
    live: bool,
    /// The bytes of Lua read so far (inline and from files), against
    /// [`super::MAX_SCRIPTS_TOTAL_BYTES`].
    script_bytes: Cell<usize>,
    /// For `lockstep serve`: the faults timed from a test's start (`after_test`), by index.
    after_tests: Option<std::cell::RefCell<Vec<(usize, String)>>>,
}

impl Ctx<'_> {
    fn at(&self, span: Option<Range<usize>>, field: Option<String>, message: String) -> ScenarioError {
        let position = span.map(|s| line_col(self.source, s.start));
        ScenarioError {
            path: self.origin.to_string(),
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            field,
            message,
        }
    }

    /// An error about `path`, positioned at its key (or its nearest written ancestor).
    fn err(&self, path: &FieldPath, message: impl Into<String>) -> ScenarioError {
        self.at(self.locator.nearest_span(path), Some(path.to_string()), message.into())
    }

    /// A required `key` missing from the table at `table`.
    fn missing(&self, table: &FieldPath, key: &str, message: impl Into<String>) -> ScenarioError {
        let span = self
            .locator
            .value_span_of(table)
            .or_else(|| self.locator.nearest_span(table));
        self.at(span, Some(table.key(key).to_string()), message.into())
    }

    /// A syntax or deserialization error from toml, positioned by its span.
    fn toml_error(&self, error: &toml::de::Error) -> ScenarioError {
        let message = error.message().trim().to_string();
        let span = error.span();
        let located = span.as_ref().and_then(|s| self.locator.field_at(s));
        let field = if let Some(name) = quoted_after(&message, "missing field `") {
            Some(located.unwrap_or_default().key(name).to_string())
        } else if let Some(path) = located {
            Some(path.to_string())
        } else if let Some(name) = quoted_after(&message, "unknown field `") {
            Some(name.to_string())
        } else if message.contains("duplicate key") {
            // The second occurrence is not in the document: name the first one's path.
            span.as_ref()
                .and_then(|s| {
                    let text = self.source.get(s.clone())?.trim();
                    let first = self.locator.preceding_key(text, s.start);
                    Some(first.map_or_else(|| text.to_string(), |p| p.to_string()))
                })
                .filter(|text| !text.is_empty())
        } else {
            None
        };
        self.at(span, field, message)
    }

    fn resolve(&self, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let key = |k: &str| FieldPath::keys(&[k]);
        let name = raw
            .name
            .ok_or_else(|| self.err(&key("name"), "required field is missing"))?;
        check_scenario_name(&name).map_err(|m| self.err(&key("name"), m))?;
        let description = raw
            .description
            .ok_or_else(|| self.err(&key("description"), "required field is missing"))?;
        if description.trim().is_empty() {
            return Err(self.err(&key("description"), "must not be blank"));
        }
        let seed = raw.seed.map_or(0, |s| s.0);
        let duration_ms = raw.duration_ms.unwrap_or(60_000);
        if duration_ms == 0 {
            return Err(self.err(&key("duration_ms"), "must be at least 1"));
        }
        if duration_ms > MAX_DURATION_MS {
            return Err(self.err(
                &key("duration_ms"),
                format!("{duration_ms}: must be at most {MAX_DURATION_MS} (one day)"),
            ));
        }
        let tick_ms = raw.tick_ms.unwrap_or(1);
        if tick_ms == 0 {
            return Err(self.err(&key("tick_ms"), "must be at least 1"));
        }
        if tick_ms > MAX_TICK_MS || tick_ms > duration_ms {
            return Err(self.err(
                &key("tick_ms"),
                format!("{tick_ms}: must be at most {MAX_TICK_MS} and at most duration_ms ({duration_ms})"),
            ));
        }
        let history_events_max = raw
            .history_events_max
            .unwrap_or(lockstep_sim::DEFAULT_HISTORY_EVENTS_MAX);
        if !(1..=MAX_HISTORY_EVENTS).contains(&history_events_max) {
            return Err(self.err(
                &key("history_events_max"),
                format!("{history_events_max}: must be between 1 and {MAX_HISTORY_EVENTS}"),
            ));
        }
        let history_bytes_max = raw
            .history_bytes_max
            .unwrap_or(lockstep_sim::world::DEFAULT_HISTORY_BYTES_MAX);
        if !(1..=MAX_HISTORY_BYTES).contains(&history_bytes_max) {
            return Err(self.err(
                &key("history_bytes_max"),
                format!("{history_bytes_max}: must be between 1 and {MAX_HISTORY_BYTES}"),
            ));
        }

        let network = raw.network.unwrap_or_default();
        let defaults = NetworkSpec::default();
        let network_spec = NetworkSpec {
            min_latency_ms: network.min_latency_ms.unwrap_or(defaults.min_latency_ms),
            max_latency_ms: network.max_latency_ms.unwrap_or(defaults.max_latency_ms),
        };
        if network_spec.min_latency_ms > network_spec.max_latency_ms {
            let field = if network.max_latency_ms.is_some() || network.min_latency_ms.is_none() {
                "max_latency_ms"
            } else {
                "min_latency_ms"
            };
            return Err(self.err(
                &FieldPath::keys(&["network", field]),
                format!(
                    "max_latency_ms {} is below min_latency_ms {}",
                    network_spec.max_latency_ms, network_spec.min_latency_ms
                ),
            ));
        }

        let topology = raw.topology.unwrap_or_default();
        let mut kinds = Nodes {
            live: self.live,
            ..Nodes::default()
        };
        let mut deployment = BTreeMap::new();
        let masters = self.masters(&topology, &mut kinds, &mut deployment)?;
        self.replica_keys_need_replicas(&topology, &deployment)?;
        kinds.kinds.insert(RESOURCE_NODE.to_string(), Role::Resource);
        kinds.order.push(RESOURCE_NODE.to_string());
        let explicit_clients = raw.client.is_some();
        let clients = self.clients(&topology, raw.client, &mut kinds)?;
        let lock_tasks = workload::LockTasks::of(raw.lock.as_ref());
        let lock = self.lock(raw.lock, &masters)?;
        let workload = self.workload(raw.workload, &lock, lock_tasks)?;
        self.client_overrides(&clients, &workload, lock_tasks)?;
        self.links(&clients, &workload, &lock, masters.len(), explicit_clients)?;

        let mut faults = Vec::new();
        for (index, table) in raw.fault.unwrap_or_default().into_iter().enumerate() {
            faults.push(self.fault(index, table, duration_ms, &kinds)?);
        }

        let mut expect = BTreeMap::new();
        for (checker, verdict) in raw.expect.unwrap_or_default() {
            // `progress`: did some client get the lock it wanted (see `crate::run::expect`).
            if !CHECKERS.contains(&checker.as_str()) && checker != crate::model::LIVENESS {
                return Err(self.err(
                    &FieldPath::keys(&["expect", &checker]),
                    format!("unknown checker `{checker}` (checkers: {})", CHECKERS.join(", ")),
                ));
            }
            // The progress verdict is `unknown` only when nobody asked for the lock: expecting
            // that gates nothing a lock does.
            if checker == crate::model::LIVENESS && verdict == crate::model::Verdict::Unknown {
                return Err(self.err(
                    &FieldPath::keys(&["expect", &checker]),
                    "`unknown` is not an expectation of progress: write `valid` (some client that wanted the lock \
                     got it; the default) or `invalid` (clients wanted it and nobody ever got it: a vacuous run)",
                ));
            }
            expect.insert(checker, verdict);
        }
        // A file that states what the checkers find expects the ones a correct lock keeps in
        // every story valid unless it names them (a checker added later leaves its rows checked).
        if expect.keys().any(|c| CHECKERS.contains(&c.as_str())) {
            for checker in crate::model::VALID_UNLESS_NAMED {
                expect
                    .entry(checker.to_string())
                    .or_insert(crate::model::Verdict::Valid);
            }
        }
        let explore = raw.explore.map(|e| self.explore(e)).transpose()?;
        if let Some(other) = &raw.compare_with {
            check_scenario_name(other).map_err(|m| self.err(&key("compare_with"), m))?;
        }

        Ok(Scenario {
            name,
            description,
            seed,
            duration_ms,
            tick_ms,
            step_every_tick: false,
            history_events_max,
            history_bytes_max,
            network: network_spec,
            masters,
            resource: topology.resource.unwrap_or_default(),
            lock,
            workload,
            clients,
            faults: FaultPlan::new(faults),
            deployment,
            expect,
            explore,
            compare_with: raw.compare_with,
        })
    }

    /// The `[explore]` block: defaults filled in, kinds and checkers checked.
    fn explore(&self, raw: super::raw::RawExplore) -> Result<ExploreSpec, ScenarioError> {
        let path = |k: &str| FieldPath::keys(&["explore", k]);
        let mut spec = ExploreSpec::default();
        if let Some(seeds) = raw.seeds {
            if seeds == 0 || seeds > MAX_EXPLORE_SEEDS {
                return Err(self.err(
                    &path("seeds"),
                    format!("{seeds}: must be between 1 and {MAX_EXPLORE_SEEDS}"),
                ));
            }
            spec.seeds = seeds;
        }
        if let Some(kinds) = raw.kinds {
            if kinds.is_empty() {
                return Err(self.err(
                    &path("kinds"),
                    format!("must name at least one fault kind ({})", GENERATED_KINDS.join(", ")),
                ));
            }
            for (i, kind) in kinds.iter().enumerate() {
                if !GENERATED_KINDS.contains(&kind.as_str()) {
                    return Err(self.err(
                        &path("kinds"),
                        format!(
                            "unknown generated fault kind `{kind}` (kinds: {})",
                            GENERATED_KINDS.join(", ")
                        ),
                    ));
                }
                if kinds[..i].contains(kind) {
                    return Err(self.err(&path("kinds"), format!("`{kind}` is listed twice")));
                }
            }
            spec.kinds = kinds;
        }
        if let Some(max) = raw.faults_max {
            if max == 0 || max > MAX_EXPLORE_FAULTS {
                return Err(self.err(
                    &path("faults_max"),
                    format!("{max}: must be between 1 and {MAX_EXPLORE_FAULTS}"),
                ));
            }
            spec.faults_max = max as usize;
        }
        spec.lock_aware = raw.lock_aware.unwrap_or(false);
        if let Some(strategy) = raw.strategy {
            spec.strategy = Some(strategy.parse().map_err(|e: String| self.err(&path("strategy"), e))?);
        }
        for (checker, expected) in raw.expect.unwrap_or_default() {
            if !CHECKERS.contains(&checker.as_str()) {
                return Err(self.err(
                    &FieldPath::keys(&["explore", "expect", &checker]),
                    format!("unknown checker `{checker}` (checkers: {})", CHECKERS.join(", ")),
                ));
            }
            spec.expect.insert(checker, expected);
        }
        if !spec.expect.is_empty() {
            for checker in crate::model::VALID_UNLESS_NAMED {
                spec.expect
                    .entry(checker.to_string())
                    .or_insert(crate::model::ExploreExpect::NoneInvalid);
            }
        }
        Ok(spec)
    }

    /// Registers node `name` written at `path`, rejecting bad and duplicate names.
    fn claim(&self, nodes: &mut Nodes, name: &str, kind: Role, path: &FieldPath) -> Result<(), ScenarioError> {
        if name == RESOURCE_NODE {
            return Err(self.err(path, format!("`{name}` is the resource's name")));
        }
        if let Some(existing) = nodes.kinds.get(name) {
            return Err(self.err(
                path,
                format!("duplicate node name: `{name}` is already {}", existing.describe()),
            ));
        }
        check_node_name(name).map_err(|m| self.err(path, m))?;
        nodes.kinds.insert(name.to_string(), kind);
        nodes.order.push(name.to_string());
        Ok(())
    }

    /// The deployment of master `name` (clock `clock`): its own keys (at `own_path`) over the
    /// topology's defaults; its replicas are claimed as nodes.
    #[allow(clippy::too_many_arguments)]
    fn deployment(
        &self,
        name: &str,
        clock: ClockSpec,
        defaults: RawDeployment,
        own: RawDeployment,
        own_path: &FieldPath,
        kinds: &mut Nodes,
        out: &mut BTreeMap<String, MasterSetup>,
    ) -> Result<(), ScenarioError> {
        let topology = FieldPath::keys(&["topology"]);
        // The path of a key: on the master when written there, else on [topology].
        let at = |key: &str, written_here: bool| {
            if written_here {
                own_path.key(key)
            } else {
                topology.key(key)
            }
        };
        let replicas = own.replicas.or(defaults.replicas).unwrap_or(0);
        let replicas_path = at("replicas", own.replicas.is_some());
        if let Some(offset_ms) = own.replica_offset_ms.or(defaults.replica_offset_ms) {
            let path = at("replica_offset_ms", own.replica_offset_ms.is_some());
            check_clock_offset_ms(offset_ms).map_err(|m| self.err(&path, m))?;
        }
        if replicas > MAX_REPLICAS {
            return Err(self.err(&replicas_path, format!("{replicas}: must be at most {MAX_REPLICAS}")));
        }
        let mut failover_after_ms = own.failover_after_ms.or(defaults.failover_after_ms);
        if failover_after_ms == Some(0) {
            let path = at("failover_after_ms", own.failover_after_ms.is_some());
            return Err(self.err(&path, "must be at least 1"));
        }
        if replicas == 0 {
            // Written on the master itself, these make no sense without replicas; as topology
            // defaults they only concern the masters that have some.
            for (key, written) in [
                ("failover_after_ms", own.failover_after_ms.is_some()),
                ("replication_lag_ms", own.replication_lag_ms.is_some()),
                ("replica_offset_ms", own.replica_offset_ms.is_some()),
            ] {
                if written {
                    return Err(self.err(
                        &own_path.key(key),
                        format!("master `{name}` has no replicas: set `replicas` too"),
                    ));
                }
            }
            failover_after_ms = None;
        }
        for i in 1..=replicas {
            self.claim(kinds, &replica_name(name, i), Role::Replica, &replicas_path)?;
            kinds.replicated.insert(replica_name(name, i));
        }
        if replicas > 0 {
            kinds.replicated.insert(name.to_string());
        }
        out.insert(
            name.to_string(),
            MasterSetup {
                clock,
                persistence: own.persistence.or(defaults.persistence).unwrap_or_default(),
                restart_delay_ms: own.restart_delay_ms.or(defaults.restart_delay_ms).unwrap_or(0),
                restart_delay_clock: own
                    .restart_delay_clock
                    .or(defaults.restart_delay_clock)
                    .unwrap_or_default(),
                replicas,
                replica_offset_ms: if replicas > 0 {
                    own.replica_offset_ms.or(defaults.replica_offset_ms).unwrap_or(0)
                } else {
                    0
                },
                replication_lag_ms: if replicas > 0 {
                    own.replication_lag_ms.or(defaults.replication_lag_ms).unwrap_or(0)
                } else {
                    0
                },
                failover_after_ms,
            },
        );
        Ok(())
    }

    fn masters(
        &self,
        topology: &RawTopology,
        kinds: &mut Nodes,
        deployment: &mut BTreeMap<String, MasterSetup>,
    ) -> Result<Vec<NodeSpec>, ScenarioError> {
        let defaults = topology.deployment();
        match (topology.masters, &topology.master) {
            (Some(_), Some(_)) => Err(self.err(
                &FieldPath::keys(&["topology", "masters"]),
                "give either `masters = N` or [[topology.master]] tables, not both",
            )),
            (_, Some(list)) => {
                if list.is_empty() {
                    return Err(self.err(
                        &FieldPath::keys(&["topology", "master"]),
                        "at least one master is needed",
                    ));
                }
                if list.len() as u64 > MAX_GENERATED_NODES {
                    return Err(self.err(
                        &FieldPath(vec![
                            super::locate::Seg::Key("topology".into()),
                            super::locate::Seg::Key("master".into()),
                            super::locate::Seg::Index(MAX_GENERATED_NODES as usize),
                        ]),
                        format!(
                            "{} [[topology.master]] tables: at most {MAX_GENERATED_NODES} Redis servers",
                            list.len()
                        ),
                    ));
                }
                let mut servers = 0;
                let mut masters = Vec::with_capacity(list.len());
                for (index, raw_node) in list.iter().enumerate() {
                    let RawNode {
                        name,
                        offset_ms,
                        drift_ppm,
                        ..
                    } = raw_node;
                    let base = FieldPath(vec![
                        super::locate::Seg::Key("topology".into()),
                        super::locate::Seg::Key("master".into()),
                        super::locate::Seg::Index(index),
                    ]);
                    self.claim(kinds, name, Role::Master, &base.key("name"))?;
                    let drift_ppm = drift_ppm.unwrap_or(0);
                    check_drift_ppm(drift_ppm).map_err(|m| self.err(&base.key("drift_ppm"), m))?;
                    check_clock_offset_ms(offset_ms.unwrap_or(0)).map_err(|m| self.err(&base.key("offset_ms"), m))?;
                    let spec = NodeSpec {
                        name: name.clone(),
                        offset_ms: offset_ms.unwrap_or(0),
                        drift_ppm,
                    };
                    self.deployment(
                        name,
                        spec.clock(),
                        defaults,
                        raw_node.deployment(),
                        &base,
                        kinds,
                        deployment,
                    )?;
                    let own = raw_node.replicas.is_some();
                    self.count_servers(&mut servers, name, deployment, own.then(|| base.key("replicas")))?;
                    masters.push(spec);
                }
                Ok(masters)
            }
            (count, None) => {
                let count = count.unwrap_or(1);
                let path = FieldPath::keys(&["topology", "masters"]);
                if count == 0 || count > MAX_GENERATED_NODES {
                    return Err(self.err(&path, format!("{count}: must be between 1 and {MAX_GENERATED_NODES}")));
                }
                let mut servers = 0;
                let mut masters = Vec::new();
                for i in 1..=count {
                    let name = format!("redis-{i}");
                    self.claim(kinds, &name, Role::Master, &path)?;
                    self.deployment(
                        &name,
                        ClockSpec::default(),
                        defaults,
                        RawDeployment::default(),
                        &FieldPath::keys(&["topology"]),
                        kinds,
                        deployment,
                    )?;
                    self.count_servers(&mut servers, &name, deployment, None)?;
                    masters.push(NodeSpec {
                        name,
                        offset_ms: 0,
                        drift_ppm: 0,
                    });
                }
                Ok(masters)
            }
        }
    }

    /// Counts master `name` and its replicas into `servers`; more than [`MAX_GENERATED_NODES`]
    /// is an error at `replicas` (`own`: the master's own key, else `topology.replicas`) or, for a
    /// master without replicas, at `topology.masters` / the master's table.
    fn count_servers(
        &self,
        servers: &mut u64,
        name: &str,
        deployment: &BTreeMap<String, MasterSetup>,
        own: Option<FieldPath>,
    ) -> Result<(), ScenarioError> {
        let replicas = deployment.get(name).map_or(0, |d| u64::from(d.replicas));
        *servers += 1 + replicas;
        if *servers <= MAX_GENERATED_NODES {
            return Ok(());
        }
        let path = match own {
            Some(path) if replicas > 0 => path,
            _ if replicas > 0 => FieldPath::keys(&["topology", "replicas"]),
            _ => FieldPath::keys(&["topology", "masters"]),
        };
        Err(self.err(
            &path,
            format!(
                "master `{name}` makes {} Redis servers (masters and their replicas): at most {MAX_GENERATED_NODES}",
                *servers
            ),
        ))
    }

    /// Every client's tasks times the masters: at most [`MAX_CLIENT_LINKS`]. The error names the
    /// first `[[client]]` table past it, or `topology.clients`.
    fn links(
        &self,
        clients: &[ClientSpec],
        workload: &crate::model::WorkloadSpec,
        lock: &LockSpec,
        masters: usize,
        explicit: bool,
    ) -> Result<(), ScenarioError> {
        let lock_tasks = match &lock.algorithm {
            AlgorithmSpec::Script(script) => script.tasks,
            _ => 1,
        };
        let mut links = 0u64;
        for (index, client) in clients.iter().enumerate() {
            let tasks = client.effective_tasks(workload).map_or(1, |t| t.tasks).max(lock_tasks);
            links += u64::from(tasks) * masters as u64;
            if links > MAX_CLIENT_LINKS {
                let path = if explicit {
                    FieldPath::item("client", index)
                } else {
                    FieldPath::keys(&["topology", "clients"])
                };
                return Err(self.err(
                    &path,
                    format!(
                        "{} clients, their tasks and {masters} masters make more than {MAX_CLIENT_LINKS} client task \
                         × master pairs (each task talks to every master: memory grows with them); use fewer \
                         clients, tasks or masters",
                        clients.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `replication_lag_ms`, `failover_after_ms` or `replica_offset_ms` written on `[topology]`
    /// when no master has a replica: a setting that would apply to nothing.
    fn replica_keys_need_replicas(
        &self,
        topology: &RawTopology,
        deployment: &BTreeMap<String, MasterSetup>,
    ) -> Result<(), ScenarioError> {
        if deployment.values().any(|d| d.replicas > 0) {
            return Ok(());
        }
        for (key, written) in [
            ("replication_lag_ms", topology.replication_lag_ms.is_some()),
            ("failover_after_ms", topology.failover_after_ms.is_some()),
            ("replica_offset_ms", topology.replica_offset_ms.is_some()),
        ] {
            if written {
                return Err(self.err(
                    &FieldPath::keys(&["topology", key]),
                    "no master has replicas: set `replicas` too (on [topology] or a [[topology.master]])",
                ));
            }
        }
        Ok(())
    }

    fn clients(
        &self,
        topology: &RawTopology,
        explicit: Option<Vec<RawClient>>,
        kinds: &mut Nodes,
    ) -> Result<Vec<ClientSpec>, ScenarioError> {
        let Some(list) = explicit else {
            let count = topology.clients.unwrap_or(2);
            let path = FieldPath::keys(&["topology", "clients"]);
            if count == 0 || count > MAX_GENERATED_NODES {
                return Err(self.err(&path, format!("{count}: must be between 1 and {MAX_GENERATED_NODES}")));
            }
            let mut clients = Vec::new();
            for i in 1..=count {
                let client = ClientSpec::named(format!("client-{i}"));
                self.claim(kinds, &client.name, Role::Client, &path)?;
                clients.push(client);
            }
            return Ok(clients);
        };
        if list.is_empty() {
            return Err(self.err(&FieldPath::keys(&["client"]), "at least one client is needed"));
        }
        if list.len() as u64 > MAX_GENERATED_NODES {
            return Err(self.err(
                &FieldPath::item("client", MAX_GENERATED_NODES as usize),
                format!(
                    "{} [[client]] tables: at most {MAX_GENERATED_NODES} clients",
                    list.len()
                ),
            ));
        }
        let mut clients = Vec::with_capacity(list.len());
        for (index, raw) in list.into_iter().enumerate() {
            let base = FieldPath::item("client", index);
            self.claim(kinds, &raw.name, Role::Client, &base.key("name"))?;
            let drift_ppm = raw.drift_ppm.unwrap_or(0);
            check_drift_ppm(drift_ppm).map_err(|m| self.err(&base.key("drift_ppm"), m))?;
            check_clock_offset_ms(raw.offset_ms.unwrap_or(0)).map_err(|m| self.err(&base.key("offset_ms"), m))?;
            if let Some(work) = raw.work_ms {
                check_work(work).map_err(|m| self.err(&base.key("work_ms"), m))?;
            }
            clients.push(ClientSpec {
                name: raw.name,
                start_ms: raw.start_ms.unwrap_or(0),
                offset_ms: raw.offset_ms.unwrap_or(0),
                drift_ppm,
                iterations: raw.iterations,
                work_ms: raw.work_ms,
                tasks: raw.tasks,
            });
        }
        Ok(clients)
    }

    fn lock(&self, raw: Option<super::raw::RawLock>, masters: &[NodeSpec]) -> Result<LockSpec, ScenarioError> {
        let path = |k: &str| FieldPath::keys(&["lock", k]);
        let Some(mut raw) = raw else {
            return Err(self.err(
                &path("algorithm"),
                format!(
                    "required field is missing: a [lock] table with `algorithm` ({})",
                    Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        let rust_lock = raw.rust_lock.take();
        if rust_lock
            .as_deref()
            .is_some_and(|n| !crate::model::lock::is_valid_lock_name(n))
        {
            return Err(self.err(&path("rust_lock"), "must be a name of [a-z0-9-]+ (the harness's lock)"));
        }
        // What a Rust lock declared about itself: only with the lock it is about.
        let (rust_tokens, rust_drift_factor) = (raw.rust_tokens.take(), raw.rust_drift_factor.take());
        for (field, set) in [
            ("rust_tokens", rust_tokens.is_some()),
            ("rust_drift_factor", rust_drift_factor.is_some()),
        ] {
            if set && rust_lock.is_none() {
                return Err(self.err(&path(field), "is what a Rust lock declares: only with `rust_lock`"));
            }
        }
        if let Some(factor) = rust_drift_factor.filter(|f| !(0.0..1.0).contains(f)) {
            return Err(self.err(&path("rust_drift_factor"), format!("{factor}: must be in [0, 1)")));
        }
        let key = raw.key.take().unwrap_or_else(|| "lock".into());
        if key.is_empty() {
            return Err(self.err(&path("key"), "must not be empty"));
        }
        check_key_len(&key).map_err(|m| self.err(&path("key"), m))?;
        let ttl_ms = raw.ttl_ms.unwrap_or(10_000);
        if ttl_ms == 0 {
            return Err(self.err(&path("ttl_ms"), "must be greater than 0"));
        }
        if ttl_ms > MAX_TTL_MS {
            return Err(self.err(
                &path("ttl_ms"),
                format!("{ttl_ms}: must be at most {MAX_TTL_MS} (one day)"),
            ));
        }
        let fencing_master = match raw.fencing_master.take() {
            Some(name) => {
                if !masters.iter().any(|m| m.name == name) {
                    let names: Vec<&str> = masters.iter().map(|m| m.name.as_str()).collect();
                    return Err(self.err(
                        &path("fencing_master"),
                        format!("`{name}` is not a master (masters: {})", names.join(", ")),
                    ));
                }
                name
            }
            None => masters[0].name.clone(),
        };
        let request_timeout_ms = raw.request_timeout_ms.unwrap_or(50);
        if request_timeout_ms == 0 {
            return Err(self.err(&path("request_timeout_ms"), "must be at least 1"));
        }
        let connect_timeout_ms = raw.connect_timeout_ms.unwrap_or(100);
        if connect_timeout_ms == 0 {
            return Err(self.err(&path("connect_timeout_ms"), "must be at least 1"));
        }
        // The client's own waits: at most a simulated day each, as a run is.
        for (key, value) in [
            ("request_timeout_ms", Some(request_timeout_ms)),
            ("connect_timeout_ms", Some(connect_timeout_ms)),
            ("retry_delay_ms", raw.retry_delay_ms),
            ("retry_jitter_ms", raw.retry_jitter_ms),
        ] {
            if let Some(ms) = value.filter(|ms| *ms > MAX_DURATION_MS) {
                return Err(self.err(&path(key), format!("{ms}: must be at most {MAX_DURATION_MS} (one day)")));
            }
        }
        // The built-in algorithms' keys, range-checked whatever the algorithm (as always); each
        // algorithm keeps only its own settings (the registry, `crate::model::builtin`).
        let keys = LockKeys {
            retry_count: raw.retry_count,
            retry_delay_ms: raw.retry_delay_ms,
            retry_jitter_ms: raw.retry_jitter_ms,
            drift_factor: raw.drift_factor,
            clock: raw.clock,
            extend_every_ms: raw.extend_every_ms,
            auto_extend: raw.auto_extend,
            extension_threshold_ms: raw.extension_threshold_ms,
        };
        let key_error = |e: KeyError| self.err(&path(e.key), e.message);
        keys.check(ttl_ms).map_err(key_error)?;
        if raw.algorithm != Algorithm::Script {
            self.no_script_keys(&raw)?;
        }
        let algorithm = match raw.algorithm.resolve(&keys, ttl_ms) {
            Some(resolved) => resolved.map_err(key_error)?,
            None => AlgorithmSpec::Script(Box::new(self.script(&mut raw, ttl_ms, masters.len(), key.len())?)),
        };
        let fencing = raw.fencing.unwrap_or_default();
        if let AlgorithmSpec::Script(script) = &algorithm {
            if fencing == crate::model::Fencing::Incr && script.issues_tokens() {
                return Err(self.err(
                    &path("fencing"),
                    "`incr` and an acquire step with success = \"token\" are two sources of tokens: keep one",
                ));
            }
        }
        Ok(LockSpec {
            algorithm,
            key,
            ttl_ms,
            fencing,
            fencing_master,
            request_timeout_ms,
            connect_timeout_ms,
            rust_lock,
            rust_tokens,
            rust_drift_factor,
        })
    }

    /// The `index`th `[[fault]]`: deserialized into the sim's own type, then checked against the
    /// run's duration and nodes.
    fn fault(
        &self,
        index: usize,
        table: toml::Table,
        duration_ms: u64,
        nodes: &dyn FaultTargets,
    ) -> Result<ScheduledFault, ScenarioError> {
        let base = FieldPath::item("fault", index);
        let mut table = table;
        if let Some(test) = table.remove("after_test") {
            let Some(marks) = &self.after_tests else {
                return Err(self.err(
                    &base.key("after_test"),
                    "a fault timed from a test's start applies only to `lockstep serve` (a run's faults count from its \
                     start)",
                ));
            };
            match test {
                toml::Value::String(name) if !name.trim().is_empty() => marks.borrow_mut().push((index, name)),
                _ => return Err(self.err(&base.key("after_test"), "must be a test's name (a non-empty string)")),
            }
        }
        match table.get("at_ms") {
            Some(toml::Value::Integer(at)) if *at >= 0 => {}
            Some(_) => return Err(self.err(&base.key("at_ms"), "must be a non-negative integer (true ms)")),
            None => return Err(self.missing(&base, "at_ms", "required field is missing")),
        }
        let kinds_list = Fault::KINDS.join(", ");
        let kind = match table.get("kind") {
            Some(toml::Value::String(kind)) if Fault::KINDS.contains(&kind.as_str()) => kind.clone(),
            Some(toml::Value::String(kind)) => {
                return Err(self.err(
                    &base.key("kind"),
                    format!("unknown fault kind `{kind}` (kinds: {kinds_list})"),
                ))
            }
            Some(_) => return Err(self.err(&base.key("kind"), format!("must be a string, one of {kinds_list}"))),
            None => {
                return Err(self.missing(
                    &base,
                    "kind",
                    format!("required field is missing (kinds: {kinds_list})"),
                ))
            }
        };
        let scheduled = match ScheduledFault::deserialize(toml::Value::Table(table.clone())) {
            Ok(scheduled) => scheduled,
            Err(e) => {
                let message = e.message().trim().to_string();
                if let Some(name) = quoted_after(&message, "missing field `") {
                    return Err(self.missing(&base, name, format!("required field is missing (for kind `{kind}`)")));
                }
                let field = if let Some(name) = quoted_after(&message, "unknown field `") {
                    base.key(name)
                } else {
                    // A mistyped value: the error does not say which key, so try each key alone.
                    table
                        .iter()
                        .filter(|(k, _)| *k != "kind" && *k != "at_ms")
                        .find(|(k, v)| {
                            let mut probe = toml::Table::new();
                            probe.insert("kind".into(), toml::Value::String(kind.clone()));
                            probe.insert((*k).clone(), (*v).clone());
                            Fault::deserialize(toml::Value::Table(probe)).is_err_and(|pe| {
                                let m = pe.message();
                                m.starts_with("invalid type") || m.starts_with("invalid value")
                            })
                        })
                        .map_or_else(|| base.clone(), |(k, _)| base.key(k))
                };
                return Err(self.err(&field, message));
            }
        };

        if scheduled.at_ms > duration_ms {
            return Err(self.err(
                &base.key("at_ms"),
                format!(
                    "{} ms is after the end of the run (duration_ms = {duration_ms})",
                    scheduled.at_ms
                ),
            ));
        }
        // What a fault may name and every range are the sim's rules: the error names the field.
        scheduled
            .fault
            .validate(nodes)
            .map_err(|e: FaultError| self.err(&base.key(e.field()), e.to_string()))?;
        // A jump's size: the wall clock stays inside the range every offset keeps to.
        if let Fault::ClockJump { delta_ms, .. } = &scheduled.fault {
            check_clock_offset_ms(*delta_ms).map_err(|m| self.err(&base.key("delta_ms"), m))?;
        }
        if let Fault::Latency {
            latency_ms,
            max_latency_ms: Some(max),
            ..
        } = &scheduled.fault
        {
            if max < latency_ms {
                return Err(self.err(
                    &base.key("max_latency_ms"),
                    format!("{max} is below latency_ms ({latency_ms}): the delays are drawn from latency_ms..=max_latency_ms"),
                ));
            }
        }
        Ok(scheduled)
    }
}
