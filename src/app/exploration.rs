//! Explorations as the CLI and the gate start them: the template (a scenario file, or the
//! standard template), the one function that merges a template's `[explore]` block with
//! overrides into an [`ExploreConfig`] (used by both `lockstep explore` and `lockstep ci`), the
//! fault-free check `lockstep explore` runs first ([`fault_free_check`]: a template that fails
//! without any fault is reported as such, not explored), and shrinking the first failing seeds
//! — under the assumption-bounded profile, the first implementation-bug seeds (`shrinkable`) —
//! into counterexample files.
//!
//! The locks of an exploration ([`Locks`]: the template's algorithm, a built-in preset or a
//! user's Rust lock, and for the differential oracle a reference) are threaded through running,
//! shrinking and the per-seed JSON-lines stream; the default is the template's algorithm alone,
//! which runs exactly what it always ran.
//!
//! Leaves out: running seeds, generating faults and shrinking itself (that is `crate::explore`).

use super::error::AppError;
use crate::explore::generate::ExploreCase;
use crate::explore::record::SeedRecord;
use crate::explore::shrink;
use crate::model::fault::FaultProfile;
use crate::model::fault::PlacementStrategy;
use crate::model::fault::GENERATED_KINDS;
/// [`crate::explore::shrink::Shrunk`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::explore::shrink::Shrunk`; removed in 0.3.0"
)]
pub type Shrunk = crate::explore::shrink::Shrunk;
use crate::explore::summary::FailingSeed;
use crate::explore::{ExploreConfig, ExploreSummary, LockChoice, LockRef, Shard};
use crate::scenario::standard::standard_template;
use crate::scenario::{Algorithm, Scenario, MAX_EXPLORE_FAULTS};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The locks of an exploration: the lock under test and, for the differential oracle, a
/// reference run on the same seeds and fault plans.
#[derive(Debug, Clone, Default)]
pub struct Locks {
    /// The lock under test (default: the template's algorithm).
    pub subject: LockChoice,
    /// The reference (default: none).
    pub reference: Option<LockChoice>,
}

impl Locks {
    /// The borrowed pair the explorer and the shrinker take.
    pub(crate) fn refs(&self) -> (LockRef<'_>, Option<LockRef<'_>>) {
        (
            self.subject.lock_ref(),
            self.reference.as_ref().map(LockChoice::lock_ref),
        )
    }
}

/// How many distinct bugs `lockstep explore` shrinks by default (`--shrink`).
pub const DEFAULT_SHRINKS: usize = 4;

/// `lockstep explore`'s options for the locks it compares, the per-seed stream, and shrinking.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OracleArgs {
    /// Differential oracle: also run this lock on the same seeds and fault plans — a built-in
    /// preset (naive, token-release, watchdog, redlock) or a scenario FILE whose `[lock]` is
    /// taken (a script lock's fixed twin, say; the template keeps its key, TTL and fencing);
    /// count, report and shrink the seeds where only the template's lock fails (exit code 1
    /// when there are some).
    #[arg(long, value_name = "PRESET|FILE")]
    pub against: Option<String>,
    /// Write one JSON line per seed to this file as the seeds finish (docs/explore-jsonl.md).
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,
    /// Shrink one seed of each distinct bug, at most this many (0: none). Failing seeds are
    /// grouped by the checker nearest the cause, the fault kinds and the lock operations
    /// involved; groups past this budget are listed unshrunk.
    #[arg(long, default_value_t = DEFAULT_SHRINKS)]
    pub shrink: usize,
    /// Scenario runs a shrink may spend.
    #[arg(long, default_value_t = 300)]
    pub shrink_runs: usize,
}

/// The locks `lockstep explore` runs: the template's, and the `--against` preset or file's lock.
pub fn locks(template: &Scenario, args: &OracleArgs) -> Result<Locks, AppError> {
    let reference = args
        .against
        .as_deref()
        .map(|value| LockChoice::against(value, template).map_err(|e| AppError::BadInput(format!("--against: {e}"))))
        .transpose()?;
    // `--against FILE` takes the file's `[lock]` algorithm only: say what else it says that the
    // template's settings override (issue 42, item 8); the summary carries it too (`run_oracle`).
    if let (Some(value), Some(LockChoice::FromFile { .. })) = (args.against.as_deref(), &reference) {
        let kept = against_unused(template, args);
        if !kept.is_empty() {
            eprintln!(
                "--against {value}: only its [lock] algorithm settings are used; these parts of it differ and are \
                 not used (the template's are): {}",
                kept.join(", ")
            );
        }
    }
    Ok(Locks {
        subject: LockChoice::Template,
        reference,
    })
}

/// The parts of the `--against` scenario file that differ from `template` and are not used
/// (only its `[lock]` algorithm settings are). Empty without `--against`, for a preset (not a
/// readable scenario file), or for a file that differs only in its lock.
fn against_unused(template: &Scenario, args: &OracleArgs) -> Vec<String> {
    let Some(value) = args.against.as_deref() else {
        return Vec::new();
    };
    Scenario::from_file(Path::new(value)).map_or_else(
        |_| Vec::new(),
        |f| f.parts_kept_from(template).into_iter().map(String::from).collect(),
    )
}

/// Bad input when `scenario` names a Rust lock (`[lock] rust_lock`): only a harness holding that
/// lock can run it, and running the built-in `algorithm` instead would replay a different lock.
pub(crate) fn refuse_rust_lock(path: &Path, scenario: &Scenario) -> Result<(), AppError> {
    match &scenario.lock.rust_lock {
        None => Ok(()),
        Some(name) => Err(AppError::BadInput(format!(
            "{}: field `lock.rust_lock`: this scenario runs the Rust lock `{name}`, which only a \
             `lockstep::harness` holding that lock can run (Harness::replay); lockstep will not run the \
             built-in `{}` in its place",
            path.display(),
            scenario.lock.algorithm.name()
        ))),
    }
}

/// A JSON-lines file written as the seeds finish: one [`SeedRecord`] a line, flushed each time,
/// into a new file beside the path that is renamed over it at the end.
pub(crate) struct JsonlSink {
    path: PathBuf,
    out: std::io::BufWriter<tempfile::NamedTempFile>,
    error: Option<String>,
}

impl JsonlSink {
    /// Starts the stream of `path`. Like every other output (`report::write_atomic`), a
    /// symbolic link, a directory, a device, a FIFO or a socket is refused, never followed or
    /// truncated (issue 40: `--jsonl LINK` truncated the link's target). The lines go to a new,
    /// uniquely named file beside `path` (`.NAME.XXXXXX.tmp`, created exclusively), renamed over
    /// `path` by [`Self::finish`] (issue 48: written in place, a `path` with a second hard link
    /// rewrote the other name's file too; now that file keeps its contents, and a run that
    /// fails before the end leaves an earlier `path` as it was).
    pub fn create(path: &Path) -> Result<JsonlSink, AppError> {
        let refuse = |what: &str| {
            AppError::BadInput(format!(
                "--jsonl {}: is {what}, not a regular file; not writing through it (that would truncate what \
                 it points to): give the path of a regular file or of a new one",
                path.display()
            ))
        };
        let kind = |meta: &std::fs::Metadata| {
            let t = meta.file_type();
            match () {
                _ if t.is_file() => None,
                _ if t.is_symlink() => Some("a symbolic link"),
                _ if t.is_dir() => Some("a directory"),
                _ => Some("a device, FIFO or socket"),
            }
        };
        if let Some(what) = std::fs::symlink_metadata(path).ok().as_ref().and_then(kind) {
            return Err(refuse(what));
        }
        let cannot = |e: std::io::Error| AppError::BadInput(format!("--jsonl {}: cannot create: {e}", path.display()));
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map_or_else(|| "jsonl".into(), |n| n.to_string_lossy().into_owned());
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(cannot)?;
        // A temporary file is private (0600); what it becomes is as readable as any output.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .map_err(cannot)?;
        }
        Ok(JsonlSink {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
            error: None,
        })
    }

    /// Writes one record (the first write error is kept for [`Self::finish`]).
    pub fn write(&mut self, record: &SeedRecord) {
        if self.error.is_some() {
            return;
        }
        let line = record.to_json_line();
        if let Err(e) = writeln!(self.out, "{line}").and_then(|()| self.out.flush()) {
            self.error = Some(format!(
                "--jsonl {}: {e} (the exploration stopped there: no later record could be kept)",
                self.path.display()
            ));
        }
    }

    /// Puts the stream in place (renamed over the path, replacing a regular file there, never
    /// writing through what is there); the first error, if any. Without a write error the
    /// records written so far are put in place too.
    pub fn finish(self) -> Result<(), AppError> {
        let JsonlSink { path, out, error } = self;
        let io = |e: std::io::Error| AppError::Io(format!("--jsonl {}: {e}", path.display()));
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.as_file().sync_all().map_err(io)?;
        // What is there now must still be a regular file, or nothing: a directory put there
        // meanwhile is not replaced (rename(2) would fail anyway), a link is replaced, not followed.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(AppError::Io(format!(
                "--jsonl {}: is a directory now; the stream is not put in its place",
                path.display()
            )));
        }
        file.persist(&path).map_err(|e| io(e.error))?;
        match error {
            Some(e) => Err(AppError::Io(e)),
            None => Ok(()),
        }
    }
}

/// Explores `template` with `locks`, streaming a JSON line per seed to `jsonl` when given. A
/// stream that can no longer be written stops the exploration (no further seed starts): every
/// record after it would be lost, and [`JsonlSink::finish`] reports the error.
pub(crate) fn run_exploration(
    template: &Scenario,
    config: &ExploreConfig,
    locks: &Locks,
    mut jsonl: Option<&mut JsonlSink>,
) -> ExploreSummary {
    let (subject, reference) = locks.refs();
    let cancel = config.cancel.clone();
    crate::explore::explore_with(template, config, subject, reference, &mut |record| {
        if let Some(sink) = &mut jsonl {
            sink.write(record);
            if sink.error.is_some() {
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
}

/// `lockstep explore`'s run: `locks` (the locks of `args`, see [`locks`]) over `template`,
/// streamed to `--jsonl`.
pub fn run_oracle(
    template: &Scenario,
    config: &ExploreConfig,
    args: &OracleArgs,
    locks: &Locks,
) -> Result<ExploreSummary, AppError> {
    let mut sink = args.jsonl.as_deref().map(JsonlSink::create).transpose()?;
    let mut summary = run_exploration(template, config, locks, sink.as_mut());
    sink.map(JsonlSink::finish).transpose()?;
    // What `--against FILE` did not use is part of the result, not only a line on stderr.
    if let (Some(d), Some(LockChoice::FromFile { .. })) = (summary.differential.as_mut(), &locks.reference) {
        d.against_unused = against_unused(template, args);
    }
    Ok(summary)
}

/// Seeds explored when neither a flag nor the template's `[explore]` block says.
pub(crate) const DEFAULT_SEEDS: u64 = 1_000;

/// The standard template's settings (used when no scenario file is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardSettings {
    /// The lock algorithm (a built-in one).
    pub algorithm: crate::model::Algorithm,
    /// Where fencing tokens come from.
    pub fencing: crate::model::Fencing,
    /// How the resource judges tokens.
    pub resource: lockstep_sim::FencingMode,
    /// The scheduler tick, ms.
    pub tick_ms: u64,
    /// A scenario file whose `[lock]` (algorithm and settings) the template runs in place of
    /// `algorithm` (`--lock FILE`: a script lock under the standard template).
    pub lock_file: Option<PathBuf>,
}

impl StandardSettings {
    /// The settings from the CLI's flags (no lock file).
    pub fn new(
        algorithm: crate::model::Algorithm,
        fencing: crate::model::Fencing,
        resource: lockstep_sim::FencingMode,
        tick_ms: u64,
    ) -> Self {
        StandardSettings {
            algorithm,
            fencing,
            resource,
            tick_ms,
            lock_file: None,
        }
    }
}

/// What the caller sets over the template's `[explore]` block. `None` (or `false`) keeps the
/// block's value, or the default when the template has no block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Seeds `0..seeds`.
    pub seeds: Option<u64>,
    /// Seeds `A..B`, as written (`A..B`); wins over `seeds`.
    pub seed_range: Option<String>,
    /// Worker threads (default: all cores).
    pub jobs: Option<usize>,
    /// Only this shard of the seeds.
    pub shard: Option<Shard>,
    /// Stop starting new seeds after this many wall seconds.
    pub time_limit_s: Option<u64>,
    /// The fault kinds that may be generated.
    pub kinds: Option<Vec<String>>,
    /// At most this many generated faults per seed.
    pub faults_max: Option<usize>,
    /// Aim faults where locks break (also on when the block says so).
    pub lock_aware: bool,
    /// Rerun this percentage of seeds and compare digests.
    pub check_determinism_pct: Option<f64>,
    /// Progress output.
    pub progress: bool,
    /// Where faults are placed; `None`: the block's placement (random) when the template has an
    /// `[explore]` block, else [`DEFAULT_STRATEGY`].
    pub strategy: Option<PlacementStrategy>,
    /// The assumption-bounded profile (`--bounded`): cases inside the template lock's
    /// assumptions, random placement.
    pub bounded: bool,
    /// Guided placement's workload shapes may outlive the lease (`--overrun-shapes`); bad input
    /// with random placement (it draws no shapes).
    pub overrun_shapes: bool,
}

/// The placement `lockstep explore` uses when neither `--strategy` nor an `[explore]` block
/// decides: anchored and random placement mixed, with coverage feedback. A template's
/// `[explore]` block keeps random placement (what its committed results were explored with).
pub const DEFAULT_STRATEGY: PlacementStrategy = PlacementStrategy::Mixed;

/// The template `lockstep explore` explores: the scenario of `file`, else the standard template.
pub fn template(file: Option<&Path>, standard: &StandardSettings) -> Result<Scenario, AppError> {
    let bad = |e: crate::scenario::ScenarioError| AppError::BadInput(e.to_string());
    if let Some(file) = file {
        let scenario = Scenario::from_file(file).map_err(bad)?;
        refuse_rust_lock(file, &scenario)?;
        return Ok(scenario);
    }
    if let Some(lock_file) = &standard.lock_file {
        return standard_template_with_lock(lock_file, standard);
    }
    check_standard(standard)?;
    standard_template(
        standard.algorithm,
        standard.fencing,
        standard.resource,
        standard.tick_ms,
    )
    .map_err(bad)
}

/// The standard template running the lock of the scenario file `lock_file` (`--lock FILE`):
/// one master, or Redlock's five when the lock uses more than one; the lock's algorithm,
/// settings and TTL (its renewal period and margins are written for that TTL) in place of the
/// template's, the run at least five TTLs long; the template's key and fencing kept; named
/// `explore-{file stem}`. The result is checked as a scenario file is.
fn standard_template_with_lock(lock_file: &Path, standard: &StandardSettings) -> Result<Scenario, AppError> {
    check_standard(standard)?;
    let bad = |e: String| AppError::BadInput(format!("--lock: {e}"));
    let file = Scenario::from_file(lock_file).map_err(|e| bad(e.to_string()))?;
    let file_ttl_ms = file.lock.ttl_ms;
    let mut wide = standard_template(
        Algorithm::Redlock,
        standard.fencing,
        standard.resource,
        standard.tick_ms,
    )
    .map_err(|e| bad(e.to_string()))?;
    wide.lock.ttl_ms = file_ttl_ms;
    let LockChoice::FromFile { name, spec } = LockChoice::from_scenario(lock_file, &file, &wide).map_err(bad)? else {
        return Err(bad("not a lock".to_string()));
    };
    let masters_used = spec.claims(file_ttl_ms, wide.masters.len()).masters_used;
    let base = if masters_used > 1 {
        Algorithm::Redlock
    } else {
        Algorithm::TokenRelease
    };
    let mut template = standard_template(base, standard.fencing, standard.resource, standard.tick_ms)
        .map_err(|e| bad(e.to_string()))?;
    template.lock.algorithm = spec;
    template.lock.ttl_ms = file_ttl_ms;
    // The client's timeouts are the lock's own configuration (a library's defaults, or what the
    // file chose): a lock that waits 15 s for a master's reply can take longer than its TTL to
    // acquire, which is exactly where validity bugs live.
    template.lock.request_timeout_ms = file.lock.request_timeout_ms;
    template.lock.connect_timeout_ms = file.lock.connect_timeout_ms;
    if file_ttl_ms.saturating_mul(5) > template.duration_ms {
        template.duration_ms = file_ttl_ms.saturating_mul(5);
        template.workload.until_ms = Some(template.duration_ms - template.duration_ms / 10);
    }
    template.name = format!("explore-{name}");
    template.description = format!(
        "The standard exploration profile with the lock of {}: {} master(s), 3 clients, {} s.",
        lock_file.display(),
        template.masters.len(),
        template.duration_ms / 1000
    );
    let origin = format!("{} (its lock in the standard template)", lock_file.display());
    crate::explore::subject::revalidate(&template, &origin).map_err(bad)?;
    Ok(template)
}

/// Bad input unless the standard template's flags are in range; the message names the flag
/// (they are checked before they are written into the template's TOML).
fn check_standard(standard: &StandardSettings) -> Result<(), AppError> {
    if standard.tick_ms == 0 || standard.tick_ms > 1_000 {
        return Err(AppError::BadInput(format!(
            "--tick-ms {}: must be between 1 and 1000 (the standard template runs 10 s)",
            standard.tick_ms
        )));
    }
    Ok(())
}

/// Parses `A..B` (B excluded, A < B).
fn parse_seed_range(s: &str) -> Result<Range<u64>, AppError> {
    let bad = |m: String| AppError::BadInput(m);
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| bad(format!("--seed-range `{s}` is not A..B")))?;
    let a: u64 = a.trim().parse().map_err(|_| {
        bad(format!(
            "--seed-range start `{a}` is not a number from 0 to {}",
            u64::MAX
        ))
    })?;
    let b: u64 = b
        .trim()
        .parse()
        .map_err(|_| bad(format!("--seed-range end `{b}` is not a number from 0 to {}", u64::MAX)))?;
    if a >= b {
        return Err(bad(format!("--seed-range `{s}` is empty")));
    }
    Ok(a..b)
}

/// The exploration of `template`: the template without its `[explore]` block (every case
/// replaces it anyway), and the config its block gives, each setting overridden by `overrides`.
///
/// Seeds: the range, else `0..seeds`, else the block's `0..seeds`, else `0..1000`. Kinds: the
/// override, else the block's (when not empty), else every generated kind. `faults_max`: the
/// override, else the block's, else the generator's default. `lock_aware`: either says so.
pub fn explore_config(template: &Scenario, overrides: &Overrides) -> Result<(Scenario, ExploreConfig), AppError> {
    let declared = template.explore.as_ref();
    check_overrides(overrides)?;
    let seeds = match &overrides.seed_range {
        Some(range) => parse_seed_range(range)?,
        None => 0..overrides.seeds.or(declared.map(|e| e.seeds)).unwrap_or(DEFAULT_SEEDS),
    };
    let mut profile = FaultProfile {
        faults_max: overrides
            .faults_max
            .or(declared.map(|e| e.faults_max))
            .unwrap_or(FaultProfile::default().faults_max),
        lock_aware: overrides.lock_aware || declared.is_some_and(|e| e.lock_aware),
        // The override, else the block's (`strategy`), else random for a block (what `lockstep
        // ci` always explored) and the default (guided) without one. Shards of a guided
        // exploration each grow their own corpus over their own seeds and merge exactly.
        strategy: overrides
            .strategy
            .or(declared.and_then(|e| e.strategy))
            .unwrap_or(if declared.is_some() {
                PlacementStrategy::Random
            } else {
                DEFAULT_STRATEGY
            }),
        ..FaultProfile::default()
    };
    let kinds = overrides
        .kinds
        .clone()
        .or(declared.map(|e| e.kinds.clone()).filter(|kinds| !kinds.is_empty()));
    if let Some(kinds) = kinds {
        if let Some(kind) = kinds.iter().find(|k| !GENERATED_KINDS.contains(&k.as_str())) {
            let source = if overrides.kinds.is_some() {
                "--kinds"
            } else {
                "[explore] kinds"
            };
            return Err(AppError::BadInput(format!(
                "{source}: unknown fault kind `{kind}` (known: {})",
                GENERATED_KINDS.join(", ")
            )));
        }
        profile.kinds = kinds;
    } else {
        profile.kinds = deployment_kinds(template);
    }
    let config = ExploreConfig {
        seeds,
        jobs: overrides.jobs.unwrap_or_else(|| ExploreConfig::default().jobs).max(1),
        shard: overrides.shard,
        time_limit: overrides.time_limit_s.map(Duration::from_secs),
        profile,
        determinism_per_10k: overrides
            .check_determinism_pct
            .map_or(0, |pct| (pct * 100.0).round().clamp(0.0, 10_000.0) as u64),
        progress: overrides.progress,
        assumptions: None,
        cancel: Default::default(),
        overrun_shapes: overrides.overrun_shapes,
        shrink_reserve: None,
    };
    let config = if overrides.bounded {
        bounded(template, config, overrides)?
    } else {
        config
    };
    if overrides.overrun_shapes && config.profile.strategy == PlacementStrategy::Random {
        return Err(AppError::BadInput(format!(
            "--overrun-shapes: workload shapes are drawn by guided placement only (--strategy mixed, the default \
             without an [explore] block or --bounded); this exploration places faults at random{}",
            if overrides.bounded { " (--bounded)" } else { "" }
        )));
    }
    let mut template = template.clone();
    template.explore = None;
    Ok((template, config))
}

/// The kinds explored when none are named: the default kinds, and every opt-in kind the
/// template's deployment can suffer — a replica's clock step before its group fails over
/// (`replica-clock`) when a master has replicas (issue 42: a failover onto a replica whose clock
/// runs ahead was found only with `--kinds replica-clock`). A template without replicas draws
/// exactly what it always drew.
pub fn deployment_kinds(template: &Scenario) -> Vec<String> {
    let mut kinds = FaultProfile::default().kinds;
    let replicated = template
        .masters
        .iter()
        .any(|m| !template.replicas_of(&m.name).is_empty());
    if replicated {
        kinds.push("replica-clock".to_string());
    }
    kinds
}

/// `config` under the assumption-bounded profile of `template`'s lock: the generator's profile
/// sized by the lock's TTL and drift allowance (the same kinds and fault count), cases brought
/// inside its assumptions, random placement (bad input with another `--strategy`).
fn bounded(template: &Scenario, mut config: ExploreConfig, overrides: &Overrides) -> Result<ExploreConfig, AppError> {
    if let Some(strategy) = overrides.strategy.filter(|s| *s != PlacementStrategy::Random) {
        return Err(AppError::BadInput(format!(
            "--bounded --strategy {}: the assumption-bounded profile places faults at random only",
            strategy.name()
        )));
    }
    let assumptions = crate::explore::assumptions::Assumptions::of(template);
    let profile = FaultProfile {
        faults_max: config.profile.faults_max,
        lock_aware: config.profile.lock_aware,
        strategy: PlacementStrategy::Random,
        ..assumptions.profile(&config.profile.kinds, None)
    };
    config.profile = profile;
    config.assumptions = Some(assumptions);
    Ok(config)
}

/// Bad input when `--generator-version` names a version this build's fault generator is not: a
/// seed names another plan under another version.
pub fn check_generator_version(version: Option<u32>) -> Result<(), AppError> {
    match version.filter(|v| *v != crate::explore::GENERATOR_VERSION) {
        None => Ok(()),
        Some(version) => Err(AppError::BadInput(format!(
            "--generator-version {version}: this build's fault generator is v{}; under it the seed numbers \
             of v{version} name other plans, so exploring them would not reproduce that run (replay a \
             counterexample file with `lockstep run`: its [[fault]] entries need no generator)",
            crate::explore::GENERATOR_VERSION
        ))),
    }
}

/// `lockstep explore`'s exploration: the `--generator-version` checked
/// ([`check_generator_version`]), [`explore_config`], and the shrink reserve kept when the run
/// shrinks ([`keep_shrink_reserve`]).
pub fn cli_config(
    template: &Scenario,
    overrides: &Overrides,
    generator_version: Option<u32>,
    shrink: usize,
) -> Result<(Scenario, ExploreConfig), AppError> {
    check_generator_version(generator_version)?;
    let (template, mut config) = explore_config(template, overrides)?;
    keep_shrink_reserve(&mut config, shrink);
    Ok((template, config))
}

/// `--time-limit` covers the shrink too: when the run shrinks (`shrink` > 0), exploring stops a
/// reserve before the limit once a bug seed is found, so that the first counterexample gets
/// shrunk ([`crate::explore::shrink_reserve_of`]).
pub fn keep_shrink_reserve(config: &mut ExploreConfig, shrink: usize) {
    if shrink > 0 {
        config.shrink_reserve = config.time_limit.map(crate::explore::shrink_reserve_of);
    }
}

/// Bad input unless every override is in range: `--seeds` ≥ 1, `--time-limit` ≥ 1,
/// `--faults-max` in 1..=[`MAX_EXPLORE_FAULTS`], `--check-determinism` a finite percentage in
/// (0, 100], `--jobs` ≥ 1.
fn check_overrides(overrides: &Overrides) -> Result<(), AppError> {
    let bad = |m: &str| Err(AppError::BadInput(m.to_string()));
    if overrides.seeds == Some(0) {
        return bad("--seeds 0: nothing to explore (need at least 1)");
    }
    if overrides.time_limit_s == Some(0) {
        return bad("--time-limit 0: no seed could run (need at least 1 second)");
    }
    if overrides.jobs == Some(0) {
        return bad("--jobs 0: need at least 1 worker");
    }
    if let Some(max) = overrides.faults_max {
        if max == 0 || max as u64 > MAX_EXPLORE_FAULTS {
            return Err(AppError::BadInput(format!(
                "--faults-max {max}: must be between 1 and {MAX_EXPLORE_FAULTS}"
            )));
        }
    }
    if let Some(pct) = overrides.check_determinism_pct {
        if !(pct.is_finite() && pct > 0.0 && pct <= 100.0) {
            return Err(AppError::BadInput(format!(
                "--check-determinism {pct}: must be a percentage above 0 and at most 100"
            )));
        }
    }
    Ok(())
}

/// The failing seeds a shrink takes, in order: with a reference, the implementation-bug seeds
/// whose promised checker the reference keeps ([`crate::explore::summary::Differential::first_bugs`])
/// when there are some, else the seeds where only the subject fails; under the assumption-bounded profile without one, the implementation-bug seeds (each
/// with the checkers its lock promised under its plan) — none when there are none, since the
/// other violations are outside the lock's assumptions; else the implementation-bug seeds of
/// the plans as generated ([`ExploreSummary::classified`]) when there are some, and the first
/// failing seeds when there are none.
/// The second value says whether they are implementation-bug seeds (their checkers promised).
fn shrinkable<'a>(summary: &'a ExploreSummary, locks: &Locks) -> (&'a [FailingSeed], bool) {
    match (&summary.differential, &locks.reference, &summary.assumptions) {
        // Against a reference: the subject's own bugs the reference keeps first (each for its
        // promised checker), then any seed where only the subject fails (issue 42).
        (Some(d), Some(_), _) if !d.first_bugs.is_empty() => (&d.first_bugs, true),
        (Some(d), Some(_), _) => (&d.first_only_subject, false),
        (_, None, Some(bounded)) => (&bounded.first_bugs, true),
        // Plans left as generated: the lock's own bugs first, when some seed shows one.
        _ => match summary.classified.as_ref().filter(|c| !c.first_bugs.is_empty()) {
            Some(classified) => (&classified.first_bugs, true),
            None => (&summary.first_failing, false),
        },
    }
}

/// The checker an implementation-bug seed is shrunk for ([`crate::explore::groups::cause_first`]).
fn cause_first(checkers: &[String], wanted: &dyn Fn(&str) -> bool) -> Option<String> {
    crate::explore::groups::cause_first(checkers, wanted)
}

/// Under the assumption-bounded profile without a reference, when seeds violated a checker but
/// none is an implementation bug: the line that says so (nothing is shrunk), naming the first
/// violating seed and the assumptions its plan broke.
pub fn no_bug_to_shrink(summary: &ExploreSummary, locks: &Locks) -> Option<String> {
    let bounded = summary.assumptions.as_ref().filter(|_| locks.reference.is_none())?;
    if !bounded.first_bugs.is_empty() || summary.seeds_violating == 0 {
        return None;
    }
    let first = bounded
        .first_violating
        .first()
        .map(|(seed, checkers, broken, _)| {
            format!(
                " (the first, seed {seed} [{}], broke {}: outside the lock's assumptions)",
                checkers.join(","),
                if broken.is_empty() {
                    "no assumption".to_string()
                } else {
                    broken.join(", ")
                }
            )
        })
        .unwrap_or_default();
    Some(format!(
        "  no implementation-bug seed: nothing shrunk; the {} violating seeds broke an assumption of {}{first}\n",
        summary.seeds_violating, summary.algorithm
    ))
}

/// Shrinks one seed of each distinct bug ([`shrink_distinct`], at most `count` shrinks) and
/// yields the results in the order they were shrunk (see [`shrink_distinct`] for `runs`,
/// `deadline`, `out` and `wanted`). Before issue 50, `count` was the number of first failing
/// seeds shrunk, which could all show one bug; it is now the number of distinct groups.
pub fn shrink_failures<'a>(
    template: &'a Scenario,
    profile: &'a FaultProfile,
    summary: &'a ExploreSummary,
    locks: &'a Locks,
    budget: (usize, usize, Option<std::time::Instant>),
    out: Option<&'a Path>,
    wanted: &'a dyn Fn(&str) -> bool,
) -> impl Iterator<Item = crate::explore::shrink::Shrunk> + 'a {
    let distinct = shrink_distinct((template, profile), (summary, locks), budget, out, wanted, &mut |_| {});
    distinct
        .groups
        .into_iter()
        .filter_map(|g| g.shrunk.map(|(_, shrunk)| shrunk))
}

/// The distinct bugs of an exploration after shrinking: its groups ([`crate::explore::groups`]),
/// each with its shrink's result when it was shrunk; `bugs` says whether they are
/// implementation-bug groups or violating-seed groups (no seed was an implementation bug).
#[derive(Debug)]
pub struct DistinctBugs {
    /// The groups, in the order they were found.
    pub groups: Vec<crate::explore::groups::DistinctGroup<crate::explore::shrink::Shrunk>>,
    /// Whether the groups are implementation bugs.
    pub bugs: bool,
}

impl DistinctBugs {
    /// The console's block: one line per group shrunk (its class, seeds, first seed,
    /// counterexample), then the classes left unshrunk by the `--shrink` budget; empty with no
    /// group.
    pub fn render(&self, out: Option<&Path>) -> String {
        let (shrunk, unshrunk): (Vec<_>, Vec<_>) = self.groups.iter().partition(|g| g.shrunk.is_some());
        if self.groups.is_empty() {
            return String::new();
        }
        let what = match self.bugs {
            true => "distinct implementation bugs",
            false => "distinct violations (no seed is an implementation bug)",
        };
        let mut text = format!(
            "{what}: {} (by the checker nearest the cause, the fault kinds its shrunk plan needs, the lock operations \
             involved)\n",
            shrunk.len()
        );
        let seeds = |n: u64| format!("{n} seed{}", if n == 1 { "" } else { "s" });
        for (i, group) in shrunk.iter().enumerate() {
            let found = match &group.shrunk {
                Some((_, crate::explore::shrink::Shrunk::Found { file, .. })) if out.is_some() => {
                    format!("counterexample {}", file.display())
                }
                Some((_, crate::explore::shrink::Shrunk::Found { counterexample, .. })) => {
                    format!("counterexample {}.toml (printed above)", counterexample.scenario.name)
                }
                Some((seed, crate::explore::shrink::Shrunk::NotReproduced { .. })) => {
                    format!("seed {seed} did not fail again on its own")
                }
                Some((seed, crate::explore::shrink::Shrunk::OutOfTime { .. })) => {
                    format!("seed {seed} not shrunk: the time limit ran out")
                }
                None => String::new(),
            };
            text.push_str(&format!(
                "  [{}] {} — {}, first seed {}; {found}\n",
                i + 1,
                group.class.describe(),
                seeds(group.seeds),
                group.first_seed
            ));
        }
        if !unshrunk.is_empty() {
            let total: u64 = unshrunk.iter().map(|g| g.seeds).sum();
            text.push_str(&format!(
                "  not shrunk (the --shrink budget ran out; each may be one of the above by another plan): {} more \
                 class{} of {}:\n",
                unshrunk.len(),
                if unshrunk.len() == 1 { "" } else { "es" },
                seeds(total)
            ));
            for group in unshrunk {
                text.push_str(&format!(
                    "      {} (as drawn) — {}, first seed {}\n",
                    group.class.describe(),
                    seeds(group.seeds),
                    group.first_seed
                ));
            }
        }
        text
    }

    /// `lockstep explore --json`'s `distinct` entry: per group its class, seeds, first seed
    /// and the index of its counterexample in `counterexamples` (null: not shrunk).
    pub fn json(&self) -> serde_json::Value {
        let mut index = 0usize;
        let groups: Vec<serde_json::Value> = self
            .groups
            .iter()
            .map(|g| {
                let counterexample = g.shrunk.as_ref().map(|_| {
                    index += 1;
                    index - 1
                });
                serde_json::json!({
                    "shrunk": g.shrunk.is_some(),
                    "checker": g.class.checker,
                    "fault_kinds": g.class.fault_kinds,
                    "ops": g.class.ops,
                    "seeds": g.seeds,
                    "first_seed": g.first_seed,
                    "counterexample": counterexample,
                })
            })
            .collect();
        serde_json::json!({ "implementation_bugs": self.bugs, "groups": groups })
    }

    /// The shrinks' results, in order (the `counterexamples` of `--json`).
    pub fn shrunk(&self) -> impl Iterator<Item = &crate::explore::shrink::Shrunk> {
        self.groups.iter().filter_map(|g| g.shrunk.as_ref().map(|(_, s)| s))
    }
}

/// Shrinks one seed of each distinct bug of `summary` (`(count, runs, deadline)`: at most
/// `count` shrinks, each spending at most `runs` scenario runs, none started after `deadline`:
/// `--time-limit` covers shrinking too), with the exploration's `locks` — with a reference,
/// shrunk while only the subject fails; `on_shrunk` sees each result as it comes. The groups
/// are the implementation-bug classes when some seed is one (`shrinkable`'s choice), else the
/// violating seeds' classes (none under the assumption-bounded profile without a reference);
/// a class whose plan holds the fault kinds of a group already shrunk with its checker and
/// operations joins it unshrunk ([`crate::explore::groups::Distinct::build`]). Each shrink is for
/// the class's checker when `wanted` accepts it, else its first wanted checker; a class with no
/// wanted checker is left out. Each counterexample's file is named in `out` (without `out`, a
/// bare file name: the caller prints it, not writes it). A summary without groups (an older
/// build's) is classed by its failing seeds' checkers and fault kinds.
pub fn shrink_distinct(
    (template, profile): (&Scenario, &FaultProfile),
    (summary, locks): (&ExploreSummary, &Locks),
    (count, runs, deadline): (usize, usize, Option<std::time::Instant>),
    out: Option<&Path>,
    wanted: &dyn Fn(&str) -> bool,
    on_shrunk: &mut dyn FnMut(&crate::explore::shrink::Shrunk),
) -> DistinctBugs {
    let (seeds, bugs) = shrinkable(summary, locks);
    let groups = match bugs {
        true => &summary.bug_groups,
        false if summary.assumptions.is_some() && locks.reference.is_none() => &Default::default(),
        false => &summary.violation_groups,
    };
    // Only the classes whose seed violates a wanted checker; an older summary has no classes.
    let mut kept = crate::explore::groups::Groups::default();
    for class in groups
        .classes
        .iter()
        .filter(|c| c.first.checkers.iter().any(|k| wanted(k)))
    {
        kept.classes.push(class.clone());
    }
    if groups.is_empty() {
        kept = seed_classes(seeds, wanted);
    }
    let mut shrink_one = |class: &crate::explore::groups::ClassSeeds| {
        let failing = &class.first;
        let checker = match wanted(&class.class.checker) {
            true => class.class.checker.clone(),
            false => cause_first(&failing.checkers, wanted).unwrap_or_default(),
        };
        let shrunk = shrink_seed(template, profile, failing, (&checker, locks), (runs, deadline), out);
        on_shrunk(&shrunk);
        let kinds = match &shrunk {
            crate::explore::shrink::Shrunk::Found { counterexample, .. } => {
                Some(crate::explore::groups::kinds_of(&counterexample.case.faults))
            }
            _ => None,
        };
        (shrunk, kinds)
    };
    // Without a bug, the violations of the template's own story first: what the scenario shows.
    let prefer = match bugs {
        true => Vec::new(),
        false => crate::explore::groups::story_kinds(template),
    };
    let distinct = crate::explore::groups::Distinct::build(&kept, (count, &prefer), &mut shrink_one);
    DistinctBugs {
        groups: distinct.groups,
        bugs,
    }
}

/// An older summary's failing seeds (it recorded no classes) classed by what each recorded: the
/// checker nearest its cause among the wanted ones and its plan's fault kinds (no operations).
fn seed_classes(seeds: &[FailingSeed], wanted: &dyn Fn(&str) -> bool) -> crate::explore::groups::Groups {
    let mut groups = crate::explore::groups::Groups::default();
    for failing in seeds {
        let Some(checker) = cause_first(&failing.checkers, wanted) else {
            continue;
        };
        let class = crate::explore::groups::BugClass {
            checker,
            ops: Vec::new(),
            fault_kinds: failing.fault_kinds.clone(),
        };
        groups.add(class, failing.clone());
    }
    groups
}

/// Shrinks one failing seed for `checker`: from its recorded case when it has one (a guided
/// seed's case, or a bug seed's plan without the faults it did not need), else from the seed.
fn shrink_seed(
    template: &Scenario,
    profile: &FaultProfile,
    failing: &FailingSeed,
    (checker, locks): (&str, &Locks),
    (runs, deadline): (usize, Option<std::time::Instant>),
    out: Option<&Path>,
) -> crate::explore::shrink::Shrunk {
    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
        return crate::explore::shrink::Shrunk::OutOfTime {
            seed: failing.seed,
            checker: checker.to_string(),
        };
    }
    let found = match &failing.case {
        // A guided seed's case is recorded: its seed alone does not regenerate it.
        Some(case) => shrink::shrink_case(template, case, (failing.seed, checker), locks.refs(), runs, deadline),
        None => shrink::shrink_with(template, profile, (failing.seed, checker), locks.refs(), runs, deadline),
    };
    // A bug seed recorded without the faults it did not need: the counterexample still says
    // what the plan as drawn had, and which faults were dropped.
    let found = found.map(|mut cx| {
        if !failing.drawn.is_empty() {
            let (scenario, case) = (cx.scenario.clone(), cx.case.clone());
            cx.assumptions.note_drawn(&scenario, &failing.drawn, &case);
            cx.faults_before = failing.drawn.len();
        }
        cx
    });
    found_or_not(found, failing.seed, checker, out)
}

/// A shrink's result as a [`Shrunk`], its file named in `out`.
fn found_or_not(
    found: Option<shrink::Counterexample>,
    seed: u64,
    checker: &str,
    out: Option<&Path>,
) -> crate::explore::shrink::Shrunk {
    match found {
        Some(cx) => crate::explore::shrink::Shrunk::Found {
            file: out.unwrap_or(Path::new("")).join(format!("{}.toml", cx.scenario.name)),
            toml: shrink::counterexample_toml(&cx),
            counterexample: Box::new(cx),
        },
        None => crate::explore::shrink::Shrunk::NotReproduced {
            seed,
            checker: checker.to_string(),
        },
    }
}

/// Seeds of the fault-free check ([`fault_free_check`]): the first ones of the exploration's range.
pub(crate) const FAULT_FREE_SEEDS: u64 = 3;

/// The template failing without any fault ([`fault_free_check`]): the template's verdict, found
/// before exploring — what the search would otherwise report as its finding.
#[derive(Debug, Clone)]
pub struct FaultFree {
    /// The template's name.
    pub template: String,
    /// The lock's name.
    pub lock: String,
    /// The first seed that failed without faults.
    pub seed: u64,
    /// The checkers it violated.
    pub checkers: Vec<String>,
    /// How the workload alone outlives the lease, when it does.
    pub overrun: Option<String>,
}

impl FaultFree {
    /// The headline: "fails without any fault: ...".
    pub fn headline(&self) -> String {
        match &self.overrun {
            Some(_) => "fails without any fault: the workload outlives the lease — fix the template (work_ms vs \
                        ttl_ms) before exploring"
                .to_string(),
            None => format!(
                "fails without any fault: {} breaks {} with no fault injected — the lock (or the template) fails on \
                 its own; fix that before exploring",
                self.lock,
                self.checkers.join(", ")
            ),
        }
    }

    /// The line `lockstep explore` prints after the summary when the lock (not the workload)
    /// fails without any fault: the exploration ran as usual, and that failure is one of its
    /// implementation bugs (shrunk to no fault, "the workload alone violates …").
    pub fn note(&self) -> String {
        format!(
            "  without any fault: seed {} violates {} — {} fails on its own (an implementation bug that needs no fault; \
             its seeds are among the distinct bugs below, shrunk to no fault)\n",
            self.seed,
            self.checkers.join(", "),
            self.lock
        )
    }

    /// What `lockstep explore` prints before the fault-free counterexample.
    pub fn render(&self) -> String {
        let mut out = format!(
            "exploration of {} ({})\n  {}\n",
            self.template,
            self.lock,
            self.headline()
        );
        out.push_str(&format!(
            "  seed {} violates {} with no fault at all",
            self.seed,
            self.checkers.join(", ")
        ));
        match &self.overrun {
            Some(how) => out.push_str(&format!(": {how}.\n")),
            None => out.push_str(".\n"),
        }
        out.push_str(
            "  This is the template's verdict, not a finding of the search: no seed was explored (every one would \
             fail the same way, and shrinking would remove every fault).\n",
        );
        out
    }
}

/// Runs `template` (as the exploration's cases run it: all of its clients, no faults, no shape)
/// with the subject lock on the first `FAULT_FREE_SEEDS` seeds of the exploration's range; the
/// first seed that violates a checker, if any. A seed that cannot run is left to the
/// exploration, which reports it.
pub fn fault_free_check(template: &Scenario, config: &ExploreConfig, locks: &Locks) -> Option<FaultFree> {
    let subject = locks.subject.lock_ref();
    let prepared = subject.prepare();
    let case = fault_free_case(template);
    let end = config
        .seeds
        .end
        .min(config.seeds.start.saturating_add(FAULT_FREE_SEEDS));
    // Under the time limit too: a template whose run never ends must not hold `explore` past it
    // (a run cut by it is left to the exploration, which has no time left either).
    let started = std::time::Instant::now();
    crate::explore::with_time_limit(config, started, || {
        (config.seeds.start..end).find_map(|seed| fault_free_seed(template, &case, seed, &prepared, subject))
    })
}

/// Splits [`fault_free_check`]'s finding: a workload that outlives the lease stops the
/// exploration (the template's verdict, returned first); a lock that fails on its own does not —
/// it is one of the bugs the exploration reports — and gives the note printed after the summary
/// ([`FaultFree::note`], second; empty without one).
pub fn fault_free_split(found: Option<FaultFree>) -> (Option<FaultFree>, String) {
    match found {
        Some(f) if f.overrun.is_some() => (Some(f), String::new()),
        Some(f) => (None, f.note()),
        None => (None, String::new()),
    }
}

/// One seed of [`fault_free_check`].
fn fault_free_seed(
    template: &Scenario,
    case: &crate::explore::generate::ExploreCase,
    seed: u64,
    prepared: &crate::explore::subject::PreparedLock<'_>,
    subject: crate::explore::subject::LockRef<'_>,
) -> Option<FaultFree> {
    let scenario = crate::explore::case_scenario(template, case, seed);
    let run = prepared.run(&scenario).ok()?;
    let checkers: Vec<String> = run
        .results
        .iter()
        .filter(|r| r.verdict == crate::model::Verdict::Invalid)
        .map(|r| r.checker.clone())
        .collect();
    (!checkers.is_empty()).then(|| FaultFree {
        template: template.name.clone(),
        lock: subject.name(template),
        seed,
        checkers,
        overrun: shrink::workload_outlives_lease(&scenario),
    })
}

/// `lockstep explore --json`'s document when the fault-free check stopped it: no summary (no
/// seed was explored), the failure and its counterexample.
pub fn fault_free_json(failure: &FaultFree, shrunk: &crate::explore::shrink::Shrunk, written: bool) -> String {
    let counterexample = shrunk.json(written);
    let doc = serde_json::json!({
        "format": "lockstep-explore",
        "ok": false,
        "fault_free": {
            "template": failure.template,
            "lock": failure.lock,
            "seed": failure.seed,
            "checkers": failure.checkers,
            "workload_outlives_lease": failure.overrun,
            "message": failure.headline(),
        },
        "summary": serde_json::Value::Null,
        "counterexamples": [counterexample],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// The case of a fault-free run: every client of the template, no fault, no shape.
fn fault_free_case(template: &Scenario) -> ExploreCase {
    ExploreCase {
        clients: template.clients.len().max(1),
        faults: Vec::new(),
        shape: None,
    }
}

/// The counterexample of a fault-free failure: its seed, with fewer clients while it still fails
/// (no fault to remove), written to `out` when given.
pub fn fault_free_counterexample(
    template: &Scenario,
    failure: &FaultFree,
    locks: &Locks,
    (runs, deadline): (usize, Option<std::time::Instant>),
    out: Option<&Path>,
) -> crate::explore::shrink::Shrunk {
    let checker = &failure.checkers[0];
    let case = fault_free_case(template);
    let found = shrink::shrink_case(
        template,
        &case,
        (failure.seed, checker),
        (locks.subject.lock_ref(), None),
        runs,
        deadline,
    );
    found_or_not(found, failure.seed, checker, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ExploreSpec;

    use crate::scenario::standard::token_release_unfenced as standard;

    #[test]
    fn the_block_gives_the_defaults_and_overrides_win() {
        let mut template = standard();
        template.explore = Some(ExploreSpec {
            seeds: 80,
            kinds: vec!["pause".into(), "crash".into()],
            faults_max: 3,
            lock_aware: true,
            ..ExploreSpec::default()
        });
        let (stripped, config) = explore_config(&template, &Overrides::default()).unwrap();
        assert!(stripped.explore.is_none());
        assert_eq!(config.seeds, 0..80);
        assert_eq!(config.profile, template.explore.as_ref().unwrap().profile());
        let overrides = Overrides {
            seeds: Some(6),
            faults_max: Some(1),
            ..Overrides::default()
        };
        let (_, config) = explore_config(&template, &overrides).unwrap();
        assert_eq!((config.seeds, config.profile.faults_max), (0..6, 1));
        assert_eq!(config.profile.kinds, vec!["pause".to_string(), "crash".to_string()]);
    }

    #[test]
    fn without_a_block_the_defaults_are_the_generators() {
        let (_, config) = explore_config(&standard(), &Overrides::default()).unwrap();
        assert_eq!(config.seeds, 0..DEFAULT_SEEDS);
        assert_eq!(
            config.profile,
            FaultProfile {
                strategy: DEFAULT_STRATEGY,
                ..FaultProfile::default()
            }
        );
    }

    #[test]
    fn bad_kinds_and_ranges_are_bad_input() {
        let kinds = Overrides {
            kinds: Some(vec!["nonsense".into()]),
            ..Overrides::default()
        };
        let err = explore_config(&standard(), &kinds).unwrap_err();
        assert!(err.to_string().contains("unknown fault kind `nonsense`"), "{err}");
        assert_eq!(err.exit_code(), 2);
        assert_eq!(parse_seed_range("3..7").unwrap(), 3..7);
        assert!(parse_seed_range("7..3").is_err());
        assert!(parse_seed_range("x").is_err());
    }
}
