//! Which lock an exploration runs, and what it is called: the template's own algorithm, a
//! built-in preset in its place (`--against token-release`), or a user's Rust lock
//! (`lockstep::harness`). One exploration runs a subject and, for the differential oracle, a
//! reference, on the same seeds and the same generated fault plans; shrinking, summaries and
//! counterexample files use and name the same locks.
//!
//! Leaves out: running seeds (`super`) and shrinking (`super::shrink`).

use crate::model::{Algorithm, AlgorithmSpec};
use crate::run::guard::run_guarded;
use crate::run::{LockFactory, ScenarioRun};
use crate::scenario::Scenario;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Builds a user lock factory on a worker thread (factories are not `Send`, makers are).
pub type FactoryMaker = dyn Fn() -> LockFactory + Sync;

/// A user's Rust lock, with its name (`[a-z0-9-]+`, not a built-in algorithm's name): the name
/// is what summaries, reports and counterexample files call it.
#[derive(Clone)]
pub struct UserLock {
    name: String,
    maker: Arc<dyn Fn() -> LockFactory + Send + Sync>,
}

impl fmt::Debug for UserLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserLock")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl UserLock {
    /// A user lock called `name`, built on each worker thread by `maker`. Bad input unless the
    /// name is `[a-z0-9-]+` (at most 64 characters) and not a built-in algorithm's name.
    pub fn new(name: &str, maker: impl Fn() -> LockFactory + Send + Sync + 'static) -> Result<UserLock, String> {
        if !crate::model::lock::is_valid_lock_name(name) {
            return Err(format!(
                "lock name `{name}`: must be [a-z0-9-]+ (at most 64 characters) and not a built-in algorithm's \
                 name ({})",
                Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            ));
        }
        Ok(UserLock {
            name: name.to_string(),
            maker: Arc::new(maker),
        })
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fresh factory (on the calling thread).
    pub fn factory(&self) -> LockFactory {
        (self.maker)()
    }
}

/// Checks `scenario` as a scenario file is checked (written out and read back): a lock moved
/// into another template (`--lock`, `--against FILE`) must still be valid there — a renewal
/// period written for another TTL, say. The error names `origin`.
pub(crate) fn revalidate(scenario: &Scenario, origin: &str) -> Result<(), String> {
    // The line and column would point into the generated text, not the user's file: left out.
    Scenario::from_str(&scenario.to_toml(), origin)
        .map(|_| ())
        .map_err(|e| match &e.field {
            Some(field) => format!("{origin}: field `{field}`: {}", e.message),
            None => format!("{origin}: {}", e.message),
        })
}

/// A lock an exploration can run (owned).
#[derive(Debug, Clone, Default)]
pub enum LockChoice {
    /// The algorithm the template names.
    #[default]
    Template,
    /// A built-in algorithm, with these settings, in place of the template's.
    BuiltIn(AlgorithmSpec),
    /// The lock of another scenario file (`--against FILE`: a script lock's fixed twin, say),
    /// in place of the template's, called `name`.
    FromFile {
        /// What summaries call it: the file's name.
        name: String,
        /// The file's algorithm and settings.
        spec: AlgorithmSpec,
    },
    /// A user's Rust lock.
    User(UserLock),
}

impl LockChoice {
    /// The built-in preset `name` for `template` (`naive`, `token-release`, `watchdog` with
    /// its default period `ttl_ms / 3`, `redlock` with node-redlock's defaults). A script lock
    /// is not a preset: it needs the scripts of a scenario file.
    pub fn preset(name: &str, template: &Scenario) -> Result<LockChoice, String> {
        Algorithm::from_name(name)
            .and_then(|algorithm| AlgorithmSpec::preset(algorithm, template.lock.ttl_ms))
            .map(LockChoice::BuiltIn)
            .ok_or_else(|| {
                format!(
                    "`{name}` is neither a preset (naive, token-release, watchdog, redlock) nor a scenario file \
                     (a script lock is given by its scenario file)"
                )
            })
    }

    /// The lock of the scenario file `path` (its `[lock]` algorithm and settings; the template
    /// keeps its key, TTL, fencing and timeouts), for `--against FILE`. The file must load as a
    /// scenario, must not name a Rust lock, and a script lock must fit the template's masters.
    pub fn from_file(path: &std::path::Path, template: &Scenario) -> Result<LockChoice, String> {
        let other = Scenario::from_file(path).map_err(|e| e.to_string())?;
        LockChoice::from_scenario(path, &other, template)
    }

    /// [`LockChoice::from_file`] of `other`, already read from `path`.
    pub(crate) fn from_scenario(
        path: &std::path::Path,
        other: &Scenario,
        template: &Scenario,
    ) -> Result<LockChoice, String> {
        if let Some(rust) = &other.lock.rust_lock {
            return Err(format!(
                "{}: field `lock.rust_lock`: names the Rust lock `{rust}`, which only a harness can run",
                path.display()
            ));
        }
        let spec = other.lock.algorithm.clone();
        if let AlgorithmSpec::Script(script) = &spec {
            if script.masters > template.masters.len() {
                return Err(format!(
                    "{}: field `lock.masters`: the lock uses {} masters; the template has {}",
                    path.display(),
                    script.masters,
                    template.masters.len()
                ));
            }
        }
        revalidate(
            &LockRef::FromFile("", &spec).scenario(template),
            &format!("{} (its lock in the template)", path.display()),
        )
        .map_err(|e| format!("its lock does not fit the template: {e}"))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .take(64)
            .collect();
        let name = if name.is_empty() { spec.name().to_string() } else { name };
        Ok(LockChoice::FromFile { name, spec })
    }

    /// The reference of `--against VALUE`: a preset when `VALUE` names one, else the lock of
    /// the scenario file at `VALUE`.
    pub fn against(value: &str, template: &Scenario) -> Result<LockChoice, String> {
        if crate::model::Algorithm::from_name(value).is_some_and(|a| a != Algorithm::Script) {
            return LockChoice::preset(value, template);
        }
        let path = std::path::Path::new(value);
        if path.exists() || value.ends_with(".toml") {
            return LockChoice::from_file(path, template);
        }
        LockChoice::preset(value, template)
    }

    /// The borrowed form the explorer and the shrinker take.
    #[cfg_attr(not(feature = "cli"), allow(dead_code))]
    pub(crate) fn lock_ref(&self) -> LockRef<'_> {
        match self {
            LockChoice::Template => LockRef::Template,
            LockChoice::BuiltIn(spec) => LockRef::BuiltIn(spec),
            LockChoice::FromFile { name, spec } => LockRef::FromFile(name, spec),
            LockChoice::User(user) => LockRef::User(&user.name, &*user.maker),
        }
    }
}

/// A lock an exploration runs, borrowed (what [`super::explore_with`] and
/// `super::shrink::shrink_with` take).
#[derive(Clone, Copy)]
pub enum LockRef<'a> {
    /// The algorithm the template names.
    Template,
    /// A built-in algorithm, with these settings, in place of the template's.
    BuiltIn(&'a AlgorithmSpec),
    /// Another scenario file's lock, in place of the template's: its name and algorithm.
    FromFile(&'a str, &'a AlgorithmSpec),
    /// A user's Rust lock: its name and the maker of its factory.
    User(&'a str, &'a FactoryMaker),
}

impl fmt::Debug for LockRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockRef::Template => f.write_str("Template"),
            LockRef::BuiltIn(spec) => write!(f, "BuiltIn({})", spec.name()),
            LockRef::FromFile(name, _) => write!(f, "FromFile({name})"),
            LockRef::User(name, _) => write!(f, "User({name})"),
        }
    }
}

impl<'a> LockRef<'a> {
    /// What the lock is called when it runs in `template`.
    pub fn name(&self, template: &Scenario) -> String {
        match self {
            LockRef::Template => template.lock.lock_name().to_string(),
            LockRef::BuiltIn(spec) => spec.name().to_string(),
            LockRef::FromFile(name, _) => name.to_string(),
            LockRef::User(name, _) => name.to_string(),
        }
    }

    /// `scenario` as this lock runs it: the template's unchanged; a built-in's with its
    /// algorithm in place; a user lock's naming it in `[lock] rust_lock` (so a file written
    /// from it says which lock it needs).
    pub fn scenario<'s>(&self, scenario: &'s Scenario) -> Cow<'s, Scenario> {
        match self {
            LockRef::Template => Cow::Borrowed(scenario),
            LockRef::BuiltIn(spec) | LockRef::FromFile(_, spec) => {
                let mut s = scenario.clone();
                s.lock.algorithm = (*spec).clone();
                s.lock.rust_lock = None;
                Cow::Owned(s)
            }
            LockRef::User(name, _) => {
                let mut s = scenario.clone();
                s.lock.rust_lock = Some(name.to_string());
                Cow::Owned(s)
            }
        }
    }

    /// Ready to run on this thread (a user lock's factory built here).
    pub fn prepare(&self) -> PreparedLock<'a> {
        PreparedLock {
            lock: *self,
            factory: match self {
                LockRef::User(_, maker) => Some(maker()),
                _ => None,
            },
        }
    }
}

/// A lock ready to run on one thread.
pub struct PreparedLock<'a> {
    lock: LockRef<'a>,
    factory: Option<LockFactory>,
}

impl PreparedLock<'_> {
    /// Runs `scenario` (a case of the template) with this lock, under the panic guard.
    pub fn run(&self, scenario: &Scenario) -> Result<ScenarioRun, String> {
        run_guarded(&self.lock.scenario(scenario), self.factory.as_ref())
    }

    /// The history of `scenario` with this lock, without checking it, under the panic guard.
    pub fn history(&self, scenario: &Scenario) -> Result<lockstep_sim::History, String> {
        super::history_guarded(&self.lock.scenario(scenario), self.factory.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn user_lock_names_are_checked() {
        let maker = || -> LockFactory { Rc::new(|env| Rc::new(crate::lock::naive::Naive::new(env))) };
        assert!(UserLock::new("my-lock", maker).is_ok());
        for bad in ["", "My Lock", "token-release", "redlock"] {
            let err = UserLock::new(bad, maker).unwrap_err();
            assert!(err.contains("must be [a-z0-9-]+"), "{err}");
        }
    }

    #[test]
    fn presets_replace_the_algorithm_and_name_themselves() {
        let template = crate::scenario::standard::standard_template(
            crate::model::Algorithm::Naive,
            crate::model::Fencing::None,
            lockstep_sim::FencingMode::Unfenced,
            1,
        )
        .unwrap();
        let preset = LockChoice::preset("watchdog", &template).unwrap();
        let s = preset.lock_ref().scenario(&template);
        assert_eq!(s.lock.algorithm.name(), "watchdog");
        assert_eq!(preset.lock_ref().name(&template), "watchdog");
        assert_eq!(LockRef::Template.name(&template), "naive");
        assert!(LockChoice::preset("script", &template).is_err());
        assert!(LockChoice::preset("nope", &template).is_err());
    }
}
