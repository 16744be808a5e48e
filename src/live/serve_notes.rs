//! `serve.json` and the head of a serve report: how the serve ended, the suite's result, the test
//! labels, every fault (planned, or asked for by a test) with the tests it hit, and per test what
//! struck it and which violations lockstep found in it.
//!
//! A fault hits the tests running when it struck ([`super::attribution`]: the latest label of
//! each client) that go on to send a command under that label — a test that stopped talking to
//! the servers before the fault is not hit by it. A violation belongs to the test of the lane its
//! witness is drawn in (lanes are named after the test a holder was granted in, `NAME #2` for a
//! second holder at once), else to the test labelled last before its first witness event.

use super::attribution::Labels;
use super::junit_in::{Case, CaseResult};
use crate::checker::CheckResult;
use crate::model::Verdict;
use lockstep_sim::{EventKind, History};
use serde::Serialize;
use std::collections::BTreeMap;

/// `serve.json`.
#[derive(Debug, Serialize)]
pub struct ServeNotes {
    /// What stopped the serve.
    pub stopped_by: String,
    /// How long it served, ms.
    pub served_ms: u64,
    /// Events the history cap dropped (0: none), and the `dropped` note.
    pub dropped_events: u64,
    /// The cap's note, if it dropped any.
    pub dropped_note: Option<String>,
    /// The suite serve ran, if any.
    pub suite: Option<SuiteNotes>,
    /// Every test label, in order.
    pub tests: Vec<TestLabel>,
    /// Every fault applied (and control command), with the tests it hit.
    pub faults: Vec<FaultHit>,
    /// Per test, in the order first labelled (then the suite's other tests).
    pub per_test: Vec<TestRow>,
}

/// The suite's command and result.
#[derive(Debug, Serialize)]
pub struct SuiteNotes {
    /// The command line.
    pub command: String,
    /// How it ended.
    pub end: SuiteEnd,
    /// Its JUnit file, when given, and what it said.
    pub junit: Option<JunitNotes>,
}

/// What the suite's JUnit XML said.
#[derive(Debug, Serialize)]
pub struct JunitNotes {
    /// The file.
    pub file: String,
    /// Why it could not be read, if it could not.
    pub error: Option<String>,
    /// Test cases read.
    pub tests: usize,
    /// Failed or in error.
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
}

/// A test label.
#[derive(Debug, Serialize)]
pub struct TestLabel {
    /// The test.
    pub test: String,
    /// When, ms.
    pub at_ms: f64,
    /// The server it was sent to (`world`: out of band).
    pub server: String,
    /// The connection (0: out of band).
    pub conn: u64,
    /// The client (set of ports) it covers (`None`: every client).
    pub client: Option<String>,
}

/// A fault and the tests it hit.
#[derive(Debug, Serialize)]
pub struct FaultHit {
    /// When, ms.
    pub at_ms: f64,
    /// What: `crash on redis-1 (crashed)`, or a control command.
    pub fault: String,
    /// The tests running when it struck that sent a command after it, under that label.
    pub during: Vec<String>,
    /// The last test labelled before the fault, if any.
    pub last_test_before: Option<String>,
}

/// One test's row.
#[derive(Debug, Serialize)]
pub struct TestRow {
    /// The test.
    pub test: String,
    /// Its result in the suite's JUnit XML (`None`: not in it, or no JUnit file).
    pub result: Option<CaseResult>,
    /// The faults that hit it.
    pub faults: Vec<String>,
    /// The checkers that found a violation in it.
    pub violations: Vec<String>,
}

/// Whether `args` is a control command the report lists with the faults: one the server loop
/// runs on other clients, which lockstep's command table files as an administrative command of
/// the connection group (`CLIENT PAUSE`, `UNPAUSE`, `KILL`, `UNBLOCK`, `NO-EVICT`).
fn control_command(args: &[String]) -> bool {
    use lockstep_sim::redis::table::{self, Flags, Group};
    table::resolve(args).is_some_and(|spec| spec.group == Group::Connection && spec.flags.has(Flags::ADMIN))
}

/// How the suite ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuiteEnd {
    /// Its exit code (`None`: killed by a signal, or still running when serve stopped).
    pub exit_code: Option<i32>,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// Whether it exited by itself (not stopped with serve).
    pub exited: bool,
}

impl SuiteEnd {
    pub(crate) fn of(status: Option<std::process::ExitStatus>) -> SuiteEnd {
        use std::os::unix::process::ExitStatusExt;
        SuiteEnd {
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            exited: status.is_some(),
        }
    }

    /// Whether the suite passed: it exited 0.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// `exit 0`, `exit 1`, `killed by signal 9`, `stopped with serve`.
    pub fn describe(&self) -> String {
        match (self.exited, self.exit_code, self.signal) {
            (false, _, _) => "still running when serve stopped (killed)".to_string(),
            (true, Some(code), _) => format!("exit {code}"),
            (true, None, Some(sig)) => format!("killed by signal {sig}"),
            (true, None, None) => "ended with no status".to_string(),
        }
    }
}

impl ServeNotes {
    /// The notes of the served `history`; `inferred`: the inferred history the `results` judged
    /// (their witnesses are its events); `cases`: the suite's JUnit cases.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        history: &History,
        stopped_by: &str,
        served_ms: u64,
        dropped: u64,
        suite: Option<SuiteNotes>,
        results: &[CheckResult],
        cases: &[Case],
    ) -> ServeNotes {
        let mut labels = Labels::default();
        let mut tests: Vec<TestLabel> = Vec::new();
        let mut faults: Vec<FaultHit> = Vec::new();
        // Faults waiting for a command of a test running when they struck: (fault, peer or
        // `None` for an out-of-band label, test).
        let mut pending: Vec<(usize, Option<String>, String)> = Vec::new();
        // When each label was given (µs), for violations found outside a test's lane.
        let mut label_times: Vec<(u64, String)> = Vec::new();
        // The test of the last in-band command that asks for a fault (`LOCKSTEP FAULT`,
        // `SHUTDOWN`, ...): the fault that follows is that test's.
        let mut asked_by: Option<String> = None;
        for e in history.events() {
            if let Some((name, peer)) = super::attribution::label_of(e) {
                labels.observe(e);
                let conn = match &e.kind {
                    EventKind::Command { conn, .. } => *conn,
                    _ => 0,
                };
                label_times.push((e.at_us, name.clone()));
                tests.push(TestLabel {
                    test: name,
                    at_ms: e.at_us as f64 / 1000.0,
                    server: e.node.clone(),
                    conn,
                    client: peer,
                });
                continue;
            }
            let struck = match &e.kind {
                EventKind::Fault { fault } => Some(format!("{} on {} ({})", fault.kind(), e.node, fault.short_label())),
                EventKind::Command { args, .. } if control_command(args) => {
                    Some(format!("`{}` on {} (control command)", args.join(" "), e.node))
                }
                _ => None,
            };
            if let Some(what) = struck {
                let index = faults.len();
                faults.push(FaultHit {
                    at_ms: e.at_us as f64 / 1000.0,
                    fault: what,
                    during: Vec::new(),
                    last_test_before: tests.last().map(|t| t.test.clone()),
                });
                // A control command is its own test's: it hit the test that sent it.
                if let EventKind::Command { client: Some(peer), .. } = &e.kind {
                    if let Some(test) = labels.test_of(peer) {
                        faults[index].during.push(test.to_string());
                    }
                    continue;
                }
                if let Some(test) = asked_by.take() {
                    faults[index].during.push(test);
                    continue;
                }
                for test in labels.running() {
                    pending.push((index, None, test));
                }
                continue;
            }
            if let EventKind::Command {
                client: Some(peer),
                args,
                reply,
                ..
            } = &e.kind
            {
                let word = |i: usize| args.get(i).map(|a| a.to_ascii_lowercase()).unwrap_or_default();
                let asks = match word(0).as_str() {
                    "lockstep" => word(1) == "fault",
                    "debug" => word(1) == "sleep",
                    "shutdown" | "failover" | "replicaof" | "slaveof" => true,
                    _ => false,
                };
                if asks && !reply.starts_with('-') {
                    asked_by = labels.test_of(peer).map(str::to_string);
                }
                let now = labels.test_of(peer).map(str::to_string);
                pending.retain(|(index, _, test)| {
                    if now.as_deref() == Some(test.as_str()) {
                        let hit = &mut faults[*index];
                        if !hit.during.contains(test) {
                            hit.during.push(test.clone());
                        }
                        false
                    } else {
                        true
                    }
                });
            }
        }
        // Per test: in label order, then the suite's cases never labelled.
        let mut order: Vec<String> = Vec::new();
        for t in &tests {
            if !order.contains(&t.test) {
                order.push(t.test.clone());
            }
        }
        let mut rows: BTreeMap<String, TestRow> = order
            .iter()
            .map(|t| {
                (
                    t.clone(),
                    TestRow {
                        test: t.clone(),
                        result: cases.iter().find(|c| c.is_named_by(t)).map(|c| c.result),
                        faults: Vec::new(),
                        violations: Vec::new(),
                    },
                )
            })
            .collect();
        for f in &faults {
            for t in &f.during {
                if let Some(row) = rows.get_mut(t) {
                    row.faults.push(format!("{:.3} s: {}", f.at_ms / 1000.0, f.fault));
                }
            }
        }
        for r in results.iter().filter(|r| r.verdict == Verdict::Invalid) {
            let mut hit: Vec<String> = Vec::new();
            for w in &r.witness {
                let lane = w.node.rsplit_once(" #").map_or(w.node.as_str(), |(base, n)| {
                    if n.chars().all(|c| c.is_ascii_digit()) {
                        base
                    } else {
                        w.node.as_str()
                    }
                });
                if rows.contains_key(lane) && !hit.iter().any(|h| h == lane) {
                    hit.push(lane.to_string());
                }
            }
            if hit.is_empty() {
                if let Some(first) = r.witness.first() {
                    if let Some((_, t)) = label_times.iter().rev().find(|(at, _)| *at <= first.at_us) {
                        hit.push(t.clone());
                    }
                }
            }
            for t in hit {
                if let Some(row) = rows.get_mut(&t) {
                    if !row.violations.contains(&r.checker) {
                        row.violations.push(r.checker.clone());
                    }
                }
            }
        }
        let mut per_test: Vec<TestRow> = order.iter().filter_map(|t| rows.remove(t)).collect();
        for c in cases {
            if !per_test.iter().any(|r| c.is_named_by(&r.test)) {
                per_test.push(TestRow {
                    test: if c.classname.is_empty() {
                        c.name.clone()
                    } else {
                        format!("{}::{}", c.classname, c.name)
                    },
                    result: Some(c.result),
                    faults: Vec::new(),
                    violations: Vec::new(),
                });
            }
        }
        let dropped_note = history.events().iter().rev().find_map(|e| match &e.kind {
            EventKind::Note { text } if text.starts_with(super::recorder::DROPPED_NOTE) => Some(text.clone()),
            _ => None,
        });
        ServeNotes {
            stopped_by: stopped_by.to_string(),
            served_ms,
            dropped_events: dropped,
            dropped_note,
            suite,
            tests,
            faults,
            per_test,
        }
    }

    /// The headline: the suite's result, then lockstep's verdicts (`results`).
    pub fn headline(&self, results: &[CheckResult], grants: u64) -> String {
        let mut parts = Vec::new();
        if let Some(suite) = &self.suite {
            let junit = suite.junit.as_ref().map_or(String::new(), |j| match &j.error {
                Some(e) => format!("; JUnit file {} unreadable: {e}", j.file),
                None => format!("; {} of {} tests failed", j.failed, j.tests),
            });
            parts.push(format!(
                "the suite {} ({}{junit})",
                if suite.end.passed() { "PASSED" } else { "FAILED" },
                suite.end.describe()
            ));
        }
        let invalid: Vec<&str> = results
            .iter()
            .filter(|r| r.verdict == Verdict::Invalid)
            .map(|r| r.checker.as_str())
            .collect();
        parts.push(match invalid.as_slice() {
            [] => format!(
                "lockstep found no violation over {grants} lock grant{} read off the commands",
                if grants == 1 { "" } else { "s" }
            ),
            names => format!("lockstep: {} INVALID", names.join(", ")),
        });
        let s = parts.join(" · ");
        match s.strip_prefix("the suite") {
            Some(rest) => format!("The suite{rest}"),
            None => s,
        }
    }

    /// The serve's section at the top of `summary.md`.
    pub fn markdown(&self, results: &[CheckResult], grants: u64) -> String {
        let mut s = format!("> **lockstep serve** — {}.\n>\n", self.headline(results, grants));
        if let Some(suite) = &self.suite {
            s.push_str(&format!("> Suite: `{}`.\n>\n", suite.command.replace('`', "'")));
        }
        s.push_str(&format!(
            "> Stopped by {} after {:.1} s: {} test label{}, {} fault{} applied, {} lock grant{} read off the commands \
             (judged by {}).\n",
            self.stopped_by,
            self.served_ms as f64 / 1000.0,
            self.tests.len(),
            if self.tests.len() == 1 { "" } else { "s" },
            self.faults.len(),
            if self.faults.len() == 1 { "" } else { "s" },
            grants,
            if grants == 1 { "" } else { "s" },
            super::grants::CHECKERS.join(" and "),
        ));
        if let Some(note) = &self.dropped_note {
            s.push_str(&format!(">\n> **History incomplete**: {note}.\n"));
        }
        if !self.faults.is_empty() {
            s.push_str(">\n> Faults and the tests they hit:\n");
            for f in &self.faults {
                s.push_str(&format!(
                    "> - {:.3} s: {} — {}\n",
                    f.at_ms / 1000.0,
                    f.fault,
                    f.hit_text()
                ));
            }
        }
        if !self.per_test.is_empty() {
            s.push_str("\n| test | suite | faults that struck it | lockstep violations |\n|---|---|---|---|\n");
            for r in &self.per_test {
                s.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    cell(&r.test),
                    r.result.map_or("—", CaseResult::shown),
                    if r.faults.is_empty() {
                        "—".to_string()
                    } else {
                        cell(&r.faults.join("; "))
                    },
                    if r.violations.is_empty() {
                        "none".to_string()
                    } else {
                        r.violations.join(", ")
                    },
                ));
            }
        }
        s
    }

    /// The same as HTML, for the top of `index.html`.
    pub fn html(&self, results: &[CheckResult], grants: u64) -> String {
        let bad = self.suite.as_ref().is_some_and(|s| !s.end.passed())
            || results.iter().any(|r| r.verdict == Verdict::Invalid);
        let mut s = format!(
            "<div style=\"border:1px solid {c};background:{bg};padding:8px;margin-bottom:8px\"><p><strong>lockstep serve</strong> — {}.</p>",
            esc(&self.headline(results, grants)),
            c = if bad { "#d08080" } else { "#80b080" },
            bg = if bad { "#fbeaea" } else { "#eef7ee" },
        );
        if let Some(suite) = &self.suite {
            s.push_str(&format!("<p>Suite: <code>{}</code></p>", esc(&suite.command)));
        }
        if !self.faults.is_empty() {
            s.push_str("<p>Faults and the tests they hit:</p><ul>");
            for f in &self.faults {
                s.push_str(&format!(
                    "<li>{:.3} s: {} — {}</li>",
                    f.at_ms / 1000.0,
                    esc(&f.fault),
                    esc(&f.hit_text())
                ));
            }
            s.push_str("</ul>");
        }
        if !self.per_test.is_empty() {
            s.push_str(
                "<table><tr><th>test</th><th>suite</th><th>faults that struck it</th><th>lockstep violations</th></tr>",
            );
            for r in &self.per_test {
                s.push_str(&format!(
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&r.test),
                    r.result.map_or("—", CaseResult::shown),
                    if r.faults.is_empty() {
                        "—".to_string()
                    } else {
                        esc(&r.faults.join("; "))
                    },
                    if r.violations.is_empty() {
                        "none".to_string()
                    } else {
                        esc(&r.violations.join(", "))
                    },
                ));
            }
            s.push_str("</table>");
        }
        s.push_str("</div>");
        s
    }
}

impl FaultHit {
    /// `during NAME, ...`, or who was labelled last.
    fn hit_text(&self) -> String {
        match (&self.during[..], &self.last_test_before) {
            ([], Some(last)) => format!("no labelled test running (last labelled before: {last})"),
            ([], None) => "no labelled test".to_string(),
            (d, _) => format!("during {}", d.join(", ")),
        }
    }
}

/// `text` escaped for HTML.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A Markdown table cell's text: pipes escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::control_command;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_control_commands_listed_with_the_faults_are_the_tables_administrative_client_commands() {
        for listed in [
            &["CLIENT", "PAUSE", "100"][..],
            &["client", "kill", "ID", "3"],
            &["Client", "UNPAUSE"],
        ] {
            assert!(control_command(&args(listed)), "{listed:?}");
        }
        for not in [
            &["CLIENT", "SETNAME", "x"][..],
            &["CLIENT"],
            &["GET", "k"],
            &["CONFIG", "SET", "a", "b"],
            &[],
        ] {
            assert!(!control_command(&args(not)), "{not:?}");
        }
    }
}
