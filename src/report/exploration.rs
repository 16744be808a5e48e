//! The console text of an exploration ([`ExploreSummary::render`]): the counts per checker
//! and fault kind, the first failing seeds, the differential oracle's and the assumptions'
//! lines, liveness, determinism and throughput.
//!
//! Left out: the summary's counts themselves (`crate::explore::summary`) and the shrunk
//! counterexamples (`super::console`).

use crate::checker;
use crate::explore::summary::KEEP_FIRST;
use crate::explore::ExploreSummary;
use std::collections::BTreeMap;

impl ExploreSummary {
    /// A human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(
            &mut out,
            format!("exploration of {} ({})", self.scenario, self.algorithm),
        );
        line(
            &mut out,
            format!(
                "  seeds run: {}   violating: {}   errors: {}",
                self.seeds_run, self.seeds_violating, self.errors
            ),
        );
        if let Some(planned) = self.seeds_planned {
            line(
                &mut out,
                format!(
                    "  stopped by the time limit: {} of {planned} seeds ran; the rest were not explored",
                    self.seeds_run
                ),
            );
        }
        if self.seeds_run == 0 {
            line(
                &mut out,
                "  nothing was explored: no seed ran to its end, so nothing was checked (not a pass)".to_string(),
            );
        }
        if let Some(vacuity) = self.vacuity() {
            line(&mut out, format!("  {vacuity}"));
        }
        line(&mut out, "  violations per checker:".to_string());
        for name in checker::NAMES {
            line(
                &mut out,
                format!(
                    "    {:<18} {:>7} invalid {:>7} unknown",
                    name,
                    self.violations.get(*name).copied().unwrap_or(0),
                    self.unknown.get(*name).copied().unwrap_or(0)
                ),
            );
        }
        if !self.fault_kinds.is_empty() {
            line(&mut out, "  seeds per fault kind (violating):".to_string());
            for (kind, count) in &self.fault_kinds {
                line(
                    &mut out,
                    format!("    {:<12} {:>7} ({})", kind, count.seeds, count.violating),
                );
            }
        }
        if !self.first_failing.is_empty() {
            let seeds: Vec<String> = self
                .first_failing
                .iter()
                .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
                .collect();
            // Under the bounded profile most violations are outside the lock's assumptions: the
            // implementation-bug seeds are listed apart (the bounded lines below).
            let label = if self.assumptions.is_some() {
                "first violating seeds (inside or outside the lock's assumptions)"
            } else {
                "first failing seeds"
            };
            line(&mut out, format!("  {label}: {}", seeds.join("; ")));
        }
        for e in &self.first_errors {
            line(&mut out, format!("  error on seed {}: {}", e.seed, e.message));
        }
        if let Some(d) = &self.differential {
            line(
                &mut out,
                format!(
                    "  against {}: {} seeds where only {} fails ({} seeds the reference could not run)",
                    d.reference, d.seeds_only_subject, self.algorithm, d.reference_errors
                ),
            );
            if !d.against_unused.is_empty() {
                line(
                    &mut out,
                    format!(
                        "    only the reference file's [lock] algorithm settings were used; these parts of it differ \
                         and were not used (the template's were): {}",
                        d.against_unused.join(", ")
                    ),
                );
            }
            for name in checker::NAMES {
                let get = |m: &BTreeMap<String, u64>| m.get(*name).copied().unwrap_or(0);
                line(
                    &mut out,
                    format!(
                        "    {:<18} {:>7} only {} {:>7} only {} {:>7} both",
                        name,
                        get(&d.only_subject),
                        self.algorithm,
                        get(&d.only_reference),
                        d.reference,
                        get(&d.both)
                    ),
                );
            }
            if !d.first_only_subject.is_empty() {
                let seeds: Vec<String> = d
                    .first_only_subject
                    .iter()
                    .take(KEEP_FIRST)
                    .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
                    .collect();
                line(
                    &mut out,
                    format!(
                        "    first seeds where only {} fails: {}",
                        self.algorithm,
                        seeds.join("; ")
                    ),
                );
            }
            if !d.first_bugs.is_empty() {
                let seeds: Vec<String> = d
                    .first_bugs
                    .iter()
                    .map(|f| format!("{} [{}]", f.seed, f.checkers.join(",")))
                    .collect();
                line(
                    &mut out,
                    format!(
                        "    first implementation-bug seeds where only {} fails: {} (one seed of each distinct bug is \
                         shrunk, for the checker {} promises)",
                        self.algorithm,
                        seeds.join("; "),
                        self.algorithm
                    ),
                );
            }
        }
        if let Some(coverage) = &self.coverage {
            out.push_str(&coverage.render());
        }
        if let Some(bounded) = &self.assumptions {
            out.push_str(&bounded.render(&self.algorithm));
        }
        if let Some(classified) = self.classified.as_ref().filter(|_| self.seeds_violating > 0) {
            out.push_str(&classified.render_classified(&self.algorithm, self.differential.is_none()));
        }
        if let Some((seed, count)) = self.first_bug() {
            line(
                &mut out,
                match count {
                    Some(n) => format!("  seeds to the first implementation bug: {n} (seed {seed})"),
                    None => format!("  first implementation-bug seed: {seed}"),
                },
            );
        }
        out.push_str(&self.render_bug_classes());
        line(
            &mut out,
            format!(
                "  liveness: acquire latency p50 {} ms, p99 {} ms; unavailability {:.2}% of simulated time; {} acquires never granted",
                self.acquire_latency_percentile(50).map_or("-".into(), |v| v.to_string()),
                self.acquire_latency_percentile(99).map_or("-".into(), |v| v.to_string()),
                self.unavailability() * 100.0,
                self.acquires_abandoned
            ),
        );
        if self.determinism_checked > 0 {
            line(
                &mut out,
                format!(
                    "  determinism: {} seeds rerun, {} mismatches",
                    self.determinism_checked,
                    self.determinism_failures.len()
                ),
            );
            for d in &self.determinism_failures {
                line(&mut out, format!("    seed {}: {}", d.seed, d.first_difference));
            }
        }
        if let Some(version) = self.generator_version {
            line(
                &mut out,
                format!("  fault generator: v{version} (a seed names its plan under this version only)"),
            );
        }
        line(
            &mut out,
            format!(
                "  throughput: {:.1} scenarios/s, {:.1} simulated s per wall s, {:.1} s wall on {} jobs",
                self.throughput.scenarios_per_s,
                self.throughput.sim_s_per_wall_s,
                self.throughput.wall_s,
                self.throughput.jobs
            ),
        );
        out
    }
}

/// How many implementation-bug classes the console lists.
const CLASSES_SHOWN: usize = 5;

impl ExploreSummary {
    /// The lines of the implementation-bug seeds' classes ([`ExploreSummary::bug_groups`]):
    /// how many, and the first ones (checker, fault kinds as drawn, operations, seeds, first
    /// seed); empty without a bug seed.
    pub fn render_bug_classes(&self) -> String {
        let groups = &self.bug_groups;
        if groups.is_empty() {
            return String::new();
        }
        let ordered = groups.in_order(&[]);
        let mut out = format!(
            "  implementation-bug classes: {} (checker · fault kinds as drawn · operations; `explore` shrinks one of \
             each and merges those that need the same faults)\n",
            ordered.len()
        );
        for class in ordered.iter().take(CLASSES_SHOWN) {
            out.push_str(&format!(
                "    {} — {} seed{}, first seed {}\n",
                class.class.describe(),
                class.seeds,
                if class.seeds == 1 { "" } else { "s" },
                class.first.seed
            ));
        }
        let more = ordered.len().saturating_sub(CLASSES_SHOWN);
        if more > 0 || groups.seeds_unclassed > 0 {
            out.push_str(&format!(
                "    … {more} more class{}{}\n",
                if more == 1 { "" } else { "es" },
                match groups.seeds_unclassed {
                    0 => String::new(),
                    n => format!(
                        ", and {n} seeds past the {} classes kept",
                        crate::explore::groups::MAX_CLASSES
                    ),
                }
            ));
        }
        out
    }
}
