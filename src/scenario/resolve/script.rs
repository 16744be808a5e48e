//! Resolving the script lock (`algorithm = "script"`): defaults, placeholders, quorum, and Lua
//! scripts — read from their files (relative to the scenario file, never outside its folder)
//! and compiled with the simulated Redis's own Lua, so a syntax error is a load-time error
//! naming the file, the line and the field.

use super::super::locate::{line_col, FieldPath, Seg};
use super::super::raw::{RawLock, RawScriptOp, RawScriptStep};
use super::super::{
    read_limited, ScenarioError, MAX_KEY_BYTES, MAX_NODE_NAME_BYTES, MAX_SCRIPTS_TOTAL_BYTES, MAX_SCRIPT_BYTES,
    MAX_STEPS, MAX_STEP_BYTES, MAX_STEP_WORDS,
};
use super::Ctx;
use crate::model::{
    Arithmetic, ClockKind, OnRenewFailure, RenewGrants, Renewal, RenewalAfterRelease, ScriptAction, ScriptOp,
    ScriptSpec, ScriptStep, Success, ValidityPolicy, ValuePolicy, ValueStorage, Wait, PLACEHOLDERS,
};
use std::path::{Component, Path, PathBuf};

/// The script-lock keys of `[lock]`, refused under the other algorithms.
const SCRIPT_KEYS: &[&str] = &[
    "masters",
    "quorum",
    "value",
    "value_storage",
    "validity",
    "validity_recheck",
    "acquire_recheck",
    "extend_recheck",
    "validity_from",
    "renewal_after_release",
    "renew_grants",
    "validity_arithmetic",
    "renew",
    "on_renew_failure",
    "unlock_on_failure",
    "tasks",
    "share_lock_object",
    "wait",
    "wait_key",
    "acquire",
    "extend",
    "release",
];

/// The most tasks per client.
const MAX_TASKS: u32 = 16;

/// Which operation a table describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Acquire,
    Extend,
    Release,
}

impl OpKind {
    fn name(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Extend => "extend",
            OpKind::Release => "release",
        }
    }

    /// The operation when `[lock.<op>]` is not written: `SET NX PX`, a compare-and-PEXPIRE, a
    /// compare-and-delete.
    fn default_op(self) -> ScriptOp {
        let step = match self {
            OpKind::Acquire => ScriptStep {
                action: ScriptAction::Command(
                    ["SET", "{key}", "{value}", "NX", "PX", "{ttl_ms}"]
                        .map(String::from)
                        .to_vec(),
                ),
                success: Success::Ok,
            },
            OpKind::Extend => ScriptStep {
                action: ScriptAction::Lua {
                    source: crate::model::script::EXTEND_LUA.to_string(),
                    keys: vec!["{key}".into()],
                    args: vec!["{value}".into(), "{ttl_ms}".into()],
                },
                success: Success::One,
            },
            OpKind::Release => ScriptStep {
                action: ScriptAction::Lua {
                    source: crate::model::script::RELEASE_LUA.to_string(),
                    keys: vec!["{key}".into()],
                    args: vec!["{value}".into()],
                },
                success: Success::One,
            },
        };
        ScriptOp {
            steps: vec![step],
            retries: 0,
            retry_delay_ms: 0,
        }
    }

    /// The success reply of a step that does not say.
    fn default_success(self, is_command: bool) -> Success {
        match (self, is_command) {
            (OpKind::Acquire, true) => Success::Ok,
            (_, true) => Success::Positive,
            (_, false) => Success::One,
        }
    }

    /// The default `ARGV` of a script.
    fn default_args(self) -> Vec<String> {
        match self {
            OpKind::Release => vec!["{value}".into()],
            _ => vec!["{value}".into(), "{ttl_ms}".into()],
        }
    }
}

/// Checks the placeholders of `template`: known, closed, and meaningful in `op`.
fn check_template(template: &str, op: OpKind) -> Result<(), String> {
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('}') {
            return Err(format!("`{template}`: a lone `}}` (write `}}}}` for a literal brace)"));
        }
        let Some(end) = tail.find('}') else {
            return Err(format!(
                "`{template}`: `{{` is not closed (write `{{{{` for a literal brace)"
            ));
        };
        let name = &tail[..=end];
        if !PLACEHOLDERS.iter().any(|(p, _)| *p == name) {
            let known: Vec<&str> = PLACEHOLDERS.iter().map(|(p, _)| *p).collect();
            return Err(format!(
                "unknown placeholder `{name}` (placeholders: {})",
                known.join(", ")
            ));
        }
        if name == "{token}" && op == OpKind::Acquire {
            return Err("`{token}` is not known while acquiring: fencing tokens are taken after the grant".into());
        }
        if name == "{ttl_ms}" && op == OpKind::Release {
            return Err("`{ttl_ms}` is not known while releasing".into());
        }
        rest = &tail[end + 1..];
    }
    Ok(())
}

/// The longest text `template` (checked by [`check_template`]) can expand to with a lock key of
/// `key_len` bytes: `{key}` the key, `{value}` and `{client}` a node name at its longest (a
/// random value has 40 bytes), `{ttl_ms}` and `{token}` 20 digits, `{{`/`}}` one brace.
fn expanded_max(template: &str, key_len: usize) -> usize {
    let mut total = 0;
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        total += i;
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            total += 1;
            rest = &tail[2..];
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            total += 1;
            rest = after;
            continue;
        }
        let Some(end) = tail.find('}') else {
            total += tail.len();
            rest = "";
            break;
        };
        total += match &tail[..=end] {
            "{key}" => key_len,
            "{value}" => MAX_NODE_NAME_BYTES.max(40),
            "{client}" => MAX_NODE_NAME_BYTES,
            "{ttl_ms}" | "{token}" | "{now_ms}" => 20,
            other => other.len(),
        };
        rest = &tail[end + 1..];
    }
    total + rest.len()
}

/// Whether a `lua_file` path stays inside the scenario's folder: relative, no `..`, not empty.
fn sanitised(path: &str) -> Result<PathBuf, String> {
    if path.trim().is_empty() {
        return Err("must not be empty".into());
    }
    let p = Path::new(path);
    for component in p.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "`{path}`: `..` is not allowed: scripts live beside the scenario file"
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{path}` is absolute: write a path relative to the scenario file"
                ))
            }
        }
    }
    Ok(p.to_path_buf())
}

/// A compiler message cut to 1 KiB (it quotes the token it stopped at, which may be a whole
/// string).
fn short(message: &str) -> String {
    let mut text = message.to_string();
    lockstep_history::history::bound_text(&mut text, 1024);
    text
}

impl Ctx<'_> {
    /// Refuses script-lock keys under another algorithm.
    pub(super) fn no_script_keys(&self, raw: &RawLock) -> Result<(), ScenarioError> {
        let written = [
            raw.masters.is_some(),
            raw.quorum.is_some(),
            raw.value.is_some(),
            raw.value_storage.is_some(),
            raw.validity.is_some(),
            raw.validity_recheck.is_some(),
            raw.acquire_recheck.is_some(),
            raw.extend_recheck.is_some(),
            raw.validity_from.is_some(),
            raw.renewal_after_release.is_some(),
            raw.renew_grants.is_some(),
            raw.validity_arithmetic.is_some(),
            raw.renew.is_some(),
            raw.on_renew_failure.is_some(),
            raw.unlock_on_failure.is_some(),
            raw.tasks.is_some(),
            raw.share_lock_object.is_some(),
            raw.wait.is_some(),
            raw.wait_key.is_some(),
            raw.acquire.is_some(),
            raw.extend.is_some(),
            raw.release.is_some(),
        ];
        if let Some(key) = SCRIPT_KEYS.iter().zip(written).find(|(_, w)| *w).map(|(k, _)| k) {
            return Err(self.err(
                &FieldPath::keys(&["lock", key]),
                format!(
                    "`{key}` is a setting of algorithm = \"script\", not of `{}`",
                    raw.algorithm
                ),
            ));
        }
        Ok(())
    }

    /// The script lock's settings from `[lock]`; `masters_available` masters exist.
    pub(super) fn script(
        &self,
        raw: &mut RawLock,
        ttl_ms: u64,
        masters_available: usize,
        key_len: usize,
    ) -> Result<ScriptSpec, ScenarioError> {
        let path = |k: &str| FieldPath::keys(&["lock", k]);
        let masters = match raw.masters {
            None => 1,
            Some(n) if n == 0 || n as usize > masters_available => {
                return Err(self.err(
                    &path("masters"),
                    format!("{n}: must be between 1 and the number of masters in the topology ({masters_available})"),
                ))
            }
            Some(n) => n as usize,
        };
        let quorum = match raw.quorum {
            None => masters / 2 + 1,
            Some(0) => return Err(self.err(&path("quorum"), "must be at least 1")),
            Some(q) if q as usize > masters => {
                return Err(self.err(
                    &path("quorum"),
                    format!("{q} is larger than the lock's masters ({masters}): no acquisition could ever succeed"),
                ))
            }
            Some(q) => q as usize,
        };
        let renewal = match raw.renew.as_deref() {
            None | Some("none") => Renewal::None,
            Some("every") => {
                let interval_ms = raw
                    .extend_every_ms
                    .unwrap_or(crate::model::WatchdogSpec::default_period_ms(ttl_ms));
                if interval_ms == 0 || interval_ms >= ttl_ms {
                    return Err(self.err(
                        &path(if raw.extend_every_ms.is_some() {
                            "extend_every_ms"
                        } else {
                            "renew"
                        }),
                        format!("renewal period {interval_ms} ms: must be above 0 and below ttl_ms ({ttl_ms})"),
                    ));
                }
                Renewal::Every { interval_ms }
            }
            Some("before-expiry") => {
                let threshold_ms = raw.extension_threshold_ms.unwrap_or(500);
                if threshold_ms >= ttl_ms {
                    return Err(self.err(
                        &path("extension_threshold_ms"),
                        format!("{threshold_ms}: must be below ttl_ms ({ttl_ms})"),
                    ));
                }
                Renewal::BeforeExpiry { threshold_ms }
            }
            Some(other) => {
                return Err(self.err(
                    &path("renew"),
                    format!("unknown renewal `{other}` (none, every, before-expiry)"),
                ))
            }
        };
        let tasks = raw.tasks.unwrap_or(1);
        if tasks == 0 || tasks > MAX_TASKS {
            return Err(self.err(&path("tasks"), format!("{tasks}: must be between 1 and {MAX_TASKS}")));
        }
        let (validity_recheck, extend_recheck) = self.rechecks(raw)?;
        let renewal_after_release = raw.renewal_after_release.unwrap_or_default();
        if renewal_after_release != RenewalAfterRelease::Cancelled && renewal == Renewal::None {
            return Err(self.err(
                &path("renewal_after_release"),
                format!(
                    "`{}` is about a renewal armed at the release: it needs renew = \"every\" or \"before-expiry\"",
                    renewal_after_release.name()
                ),
            ));
        }
        let renew_grants = raw.renew_grants.unwrap_or_default();
        if renew_grants != RenewGrants::All && renewal == Renewal::None {
            return Err(self.err(
                &path("renew_grants"),
                format!(
                    "`{}` says which grants are renewed: it needs renew = \"every\" or \"before-expiry\"",
                    renew_grants.name()
                ),
            ));
        }
        let wait = self.wait(raw, key_len)?;
        let acquire = self.op(raw.acquire.take(), OpKind::Acquire, key_len)?;
        let extend = self.op(raw.extend.take(), OpKind::Extend, key_len)?;
        let release = self.op(raw.release.take(), OpKind::Release, key_len)?;
        Ok(ScriptSpec {
            acquire,
            extend,
            release,
            value: raw.value.unwrap_or(ValuePolicy::Random),
            value_storage: raw.value_storage.unwrap_or(ValueStorage::Grant),
            masters,
            quorum,
            validity: raw.validity.unwrap_or(ValidityPolicy::TtlMinusDrift),
            drift_factor: raw.drift_factor.unwrap_or(0.01),
            clock: raw.clock.unwrap_or(ClockKind::Monotonic),
            validity_recheck,
            extend_recheck,
            validity_from: raw.validity_from.unwrap_or_default(),
            renewal_after_release,
            renew_grants,
            validity_arithmetic: raw.validity_arithmetic.unwrap_or(Arithmetic::Signed),
            retry_count: raw.retry_count.unwrap_or(0),
            retry_delay_ms: raw.retry_delay_ms.unwrap_or(200),
            retry_jitter_ms: raw.retry_jitter_ms.unwrap_or(0),
            renewal,
            on_renew_failure: raw.on_renew_failure.unwrap_or(OnRenewFailure::Abort),
            unlock_on_failure: raw.unlock_on_failure.unwrap_or(true),
            tasks,
            share_lock_object: raw.share_lock_object.unwrap_or(true),
            wait,
        })
    }

    /// The acquisition's and the extension's re-checks: `validity_recheck` sets both,
    /// `acquire_recheck` and `extend_recheck` each one (both `validity_recheck` and
    /// `acquire_recheck` written, and different, is an error). The extension's is `None` when it
    /// is the acquisition's.
    fn rechecks(&self, raw: &RawLock) -> Result<(bool, Option<bool>), ScenarioError> {
        if let (Some(both), Some(acquire)) = (raw.validity_recheck, raw.acquire_recheck) {
            if both != acquire {
                return Err(self.err(
                    &FieldPath::keys(&["lock", "acquire_recheck"]),
                    format!(
                        "{acquire} contradicts validity_recheck = {both} (which sets both re-checks): write one of them"
                    ),
                ));
            }
        }
        let acquire = raw.acquire_recheck.or(raw.validity_recheck).unwrap_or(true);
        let extend = raw.extend_recheck.or(raw.validity_recheck).unwrap_or(true);
        Ok((acquire, (extend != acquire).then_some(extend)))
    }

    /// How a failed attempt waits (`wait`, `wait_key`).
    fn wait(&self, raw: &RawLock, key_len: usize) -> Result<Wait, ScenarioError> {
        let path = |k: &str| FieldPath::keys(&["lock", k]);
        let key = raw.wait_key.clone();
        if let Some(key) = &key {
            // The wait key is sent while acquiring: the acquire placeholders apply.
            check_template(key, OpKind::Acquire).map_err(|m| self.err(&path("wait_key"), m))?;
            if key.trim().is_empty() {
                return Err(self.err(&path("wait_key"), "must not be empty"));
            }
            let longest = expanded_max(key, key_len);
            if longest > MAX_KEY_BYTES {
                return Err(self.err(
                    &path("wait_key"),
                    format!("expands to up to {longest} bytes: a key has at most {MAX_KEY_BYTES}"),
                ));
            }
        }
        match raw.wait.as_deref() {
            None | Some("sleep") => {
                if key.is_some() {
                    return Err(self.err(
                        &path("wait_key"),
                        "goes with wait = \"blpop\" or \"subscribe\" (a sleep waits on nothing)",
                    ));
                }
                Ok(Wait::Sleep)
            }
            Some("blpop") => Ok(Wait::Blpop {
                list: key.unwrap_or_else(|| "{key}:signal".into()),
            }),
            Some("subscribe") => Ok(Wait::Subscribe {
                channel: key.unwrap_or_else(|| "{key}:channel".into()),
            }),
            Some(other) => Err(self.err(
                &path("wait"),
                format!("unknown wait `{other}` (sleep, blpop, subscribe)"),
            )),
        }
    }

    /// One operation table (`None`: the default operation).
    fn op(&self, raw: Option<RawScriptOp>, kind: OpKind, key_len: usize) -> Result<ScriptOp, ScenarioError> {
        let Some(raw) = raw else {
            return Ok(kind.default_op());
        };
        let base = FieldPath::keys(&["lock", kind.name()]);
        let own = RawScriptStep {
            command: raw.command,
            lua: raw.lua,
            lua_file: raw.lua_file,
            keys: raw.keys,
            args: raw.args,
            success: raw.success,
        };
        let own_written = own.command.is_some()
            || own.lua.is_some()
            || own.lua_file.is_some()
            || own.keys.is_some()
            || own.args.is_some()
            || own.success.is_some();
        let steps = match raw.steps {
            Some(steps) => {
                if own_written {
                    return Err(self.err(
                        &base.key("steps"),
                        "write either `steps` or one step's keys (command, lua, lua_file, keys, args, success) in the table, not both",
                    ));
                }
                if steps.is_empty() {
                    return Err(self.err(&base.key("steps"), "must list at least one step"));
                }
                if steps.len() > MAX_STEPS {
                    return Err(self.err(
                        &base.key("steps"),
                        format!("{} steps: at most {MAX_STEPS}", steps.len()),
                    ));
                }
                let mut out = Vec::with_capacity(steps.len());
                for (index, step) in steps.into_iter().enumerate() {
                    let mut segs = base.key("steps").0;
                    segs.push(Seg::Index(index));
                    out.push(self.step(step, &FieldPath(segs), kind, key_len)?);
                }
                out
            }
            None => vec![self.step(own, &base, kind, key_len)?],
        };
        Ok(ScriptOp {
            steps,
            retries: raw.retries.unwrap_or(0),
            retry_delay_ms: raw.retry_delay_ms.unwrap_or(100),
        })
    }

    /// One step at `base`.
    fn step(
        &self,
        raw: RawScriptStep,
        base: &FieldPath,
        kind: OpKind,
        key_len: usize,
    ) -> Result<ScriptStep, ScenarioError> {
        let written = [raw.command.is_some(), raw.lua.is_some(), raw.lua_file.is_some()]
            .iter()
            .filter(|w| **w)
            .count();
        if written != 1 {
            let message = if written == 0 {
                "needs one of `command`, `lua` or `lua_file`"
            } else {
                "write only one of `command`, `lua` and `lua_file`"
            };
            let at = if raw.lua.is_some() && raw.command.is_some() {
                base.key("lua")
            } else if raw.lua_file.is_some() {
                base.key("lua_file")
            } else {
                base.clone()
            };
            return Err(self.err(&at, message));
        }
        let success = match raw.success.as_deref() {
            None => kind.default_success(raw.command.is_some()),
            Some(name) => Success::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Success::ALL.iter().map(|(_, n)| *n).collect();
                self.err(
                    &base.key("success"),
                    format!("unknown success reply `{name}` ({})", names.join(", ")),
                )
            })?,
        };
        if success == Success::Token && kind != OpKind::Acquire {
            return Err(self.err(
                &base.key("success"),
                "`token` is an acquire's reply: fencing tokens are issued when the lock is taken",
            ));
        }
        let action = if let Some(words) = raw.command {
            if raw.keys.is_some() || raw.args.is_some() {
                let key = if raw.keys.is_some() { "keys" } else { "args" };
                return Err(self.err(&base.key(key), "`keys` and `args` go with a Lua script, not a command"));
            }
            if words.is_empty() || words[0].trim().is_empty() {
                return Err(self.err(&base.key("command"), "must name a command: [\"SET\", \"{key}\", ...]"));
            }
            self.templates(&words, &base.key("command"), kind)?;
            self.step_size(&[(&words, base.key("command"))], key_len, None)?;
            ScriptAction::Command(words)
        } else {
            let source = match (raw.lua, raw.lua_file) {
                (Some(source), _) => {
                    self.check_inline_lua(&source, &base.key("lua"))?;
                    source
                }
                (None, Some(file)) => self.lua_file(&file, &base.key("lua_file"))?,
                (None, None) => unreachable!("one of the three is written"),
            };
            let keys = raw.keys.unwrap_or_else(|| vec!["{key}".into()]);
            let args = raw.args.unwrap_or_else(|| kind.default_args());
            self.templates(&keys, &base.key("keys"), kind)?;
            self.templates(&args, &base.key("args"), kind)?;
            self.step_size(
                &[(&keys, base.key("keys")), (&args, base.key("args"))],
                key_len,
                Some(&base.key("keys")),
            )?;
            ScriptAction::Lua { source, keys, args }
        };
        Ok(ScriptStep { action, success })
    }

    /// Checks every template of a list; errors name the element.
    fn templates(&self, words: &[String], path: &FieldPath, kind: OpKind) -> Result<(), ScenarioError> {
        for (index, word) in words.iter().enumerate() {
            if let Err(message) = check_template(word, kind) {
                let mut segs = path.0.clone();
                segs.push(Seg::Index(index));
                return Err(self.err(&FieldPath(segs), message));
            }
        }
        Ok(())
    }

    /// What one step sends besides its script: at most [`MAX_STEP_WORDS`] words in all lists,
    /// and [`MAX_STEP_BYTES`] with every placeholder at its longest; each word of the list at
    /// `keys` (a script's `KEYS`) at most [`MAX_KEY_BYTES`]. Errors name the list, or the word.
    fn step_size(
        &self,
        lists: &[(&Vec<String>, FieldPath)],
        key_len: usize,
        keys: Option<&FieldPath>,
    ) -> Result<(), ScenarioError> {
        let words: usize = lists.iter().map(|(words, _)| words.len()).sum();
        if words > MAX_STEP_WORDS {
            let (_, path) = lists.iter().max_by_key(|(words, _)| words.len()).unwrap_or(&lists[0]);
            return Err(self.err(path, format!("the step sends {words} words: at most {MAX_STEP_WORDS}")));
        }
        let mut total = 0usize;
        for (words, path) in lists {
            for (index, word) in words.iter().enumerate() {
                let longest = expanded_max(word, key_len);
                let mut segs = path.0.clone();
                segs.push(Seg::Index(index));
                if Some(path) == keys && longest > MAX_KEY_BYTES {
                    return Err(self.err(
                        &FieldPath(segs),
                        format!("expands to up to {longest} bytes: a key has at most {MAX_KEY_BYTES}"),
                    ));
                }
                total = total.saturating_add(longest);
                if total > MAX_STEP_BYTES {
                    return Err(self.err(
                        &FieldPath(segs),
                        format!(
                            "the step sends up to {total} bytes up to here (placeholders at their longest): at \
                             most {MAX_STEP_BYTES} (every attempt sends them, and the history records them)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Counts `bytes` of Lua at `path` against [`MAX_SCRIPT_BYTES`] and, over the whole file,
    /// [`MAX_SCRIPTS_TOTAL_BYTES`].
    fn count_script(&self, bytes: usize, path: &FieldPath) -> Result<(), ScenarioError> {
        if bytes > MAX_SCRIPT_BYTES {
            return Err(self.err(
                path,
                format!("the script is {bytes} bytes: at most {MAX_SCRIPT_BYTES} (every attempt sends it whole)"),
            ));
        }
        let total = self.script_bytes.get().saturating_add(bytes);
        self.script_bytes.set(total);
        if total > MAX_SCRIPTS_TOTAL_BYTES {
            return Err(self.err(
                path,
                format!(
                    "the lock's scripts come to {total} bytes with this one: at most {MAX_SCRIPTS_TOTAL_BYTES} in all"
                ),
            ));
        }
        Ok(())
    }

    /// Compiles an inline script; a syntax error names the scenario file's line.
    fn check_inline_lua(&self, source: &str, path: &FieldPath) -> Result<(), ScenarioError> {
        self.count_script(source.len(), path)?;
        let (e, what) = match lockstep_sim::check_lua_syntax(source) {
            Err(e) => (e, "Lua syntax error"),
            Ok(()) => match lockstep_sim::check_script_commands(source) {
                Err(e) => (e, "Lua script"),
                Ok(()) => return Ok(()),
            },
        };
        // The script's first line: the line of the opening quote, or the next one when the
        // string starts with a newline right after a `'''` / `"""` (TOML drops that newline).
        let span = self.locator.value_span_of(path);
        let line = span.map(|s| {
            let (line, _) = line_col(self.source, s.start);
            let text = &self.source[s.start.min(self.source.len())..];
            let multi_line_start = ["'''\n", "'''\r\n", "\"\"\"\n", "\"\"\"\r\n"]
                .iter()
                .any(|opening| text.starts_with(opening));
            line + usize::from(multi_line_start) + e.line - 1
        });
        Err(ScenarioError {
            path: self.origin.to_string(),
            line,
            column: None,
            field: Some(path.to_string()),
            message: format!("{what} (line {} of the script): {}", e.line, short(&e.message)),
        })
    }

    /// Reads and compiles a script file named relative to the scenario file. It is read as
    /// scenario files are ([`read_limited`]): a regular file (not a FIFO, a device, a
    /// directory) of at most [`MAX_SCRIPT_BYTES`].
    fn lua_file(&self, file: &str, path: &FieldPath) -> Result<String, ScenarioError> {
        let relative = sanitised(file).map_err(|m| self.err(path, m))?;
        let full = Path::new(self.origin)
            .parent()
            .map_or_else(|| relative.clone(), |dir| dir.join(&relative));
        let bytes = read_limited(&full, MAX_SCRIPT_BYTES as u64).map_err(|m| {
            let message = match m.strip_prefix("cannot read file: ") {
                Some(why) => format!("cannot read script file `{}`: {why}", full.display()),
                None => format!("script file `{}`: {m}", full.display()),
            };
            self.err(path, message)
        })?;
        self.count_script(bytes.len(), path)?;
        let source = String::from_utf8(bytes)
            .map_err(|_| self.err(path, format!("script file `{}` is not valid UTF-8", full.display())))?;
        let checked = match lockstep_sim::check_lua_syntax(&source) {
            Err(e) => Err((e, "Lua syntax error")),
            Ok(()) => lockstep_sim::check_script_commands(&source).map_err(|e| (e, "Lua script")),
        };
        if let Err((e, what)) = checked {
            return Err(ScenarioError {
                path: full.display().to_string(),
                line: Some(e.line),
                column: None,
                field: Some(path.to_string()),
                message: format!("{what}: {}", short(&e.message)),
            });
        }
        Ok(source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_checked() {
        assert_eq!(check_template("{key}", OpKind::Acquire), Ok(()));
        assert_eq!(check_template("{{literal}}", OpKind::Acquire), Ok(()));
        assert!(check_template("{kee}", OpKind::Acquire)
            .unwrap_err()
            .contains("unknown placeholder `{kee}`"));
        assert!(check_template("{key", OpKind::Acquire)
            .unwrap_err()
            .contains("not closed"));
        assert!(check_template("{token}", OpKind::Acquire)
            .unwrap_err()
            .contains("while acquiring"));
        assert_eq!(check_template("{token}", OpKind::Release), Ok(()));
        assert!(check_template("{ttl_ms}", OpKind::Release)
            .unwrap_err()
            .contains("releasing"));
    }

    #[test]
    fn script_paths_stay_beside_the_scenario() {
        assert!(sanitised("release.lua").is_ok());
        assert!(sanitised("scripts/release.lua").is_ok());
        assert!(sanitised("../etc/passwd").is_err());
        assert!(sanitised("/etc/passwd").is_err());
        assert!(sanitised("").is_err());
    }
}
