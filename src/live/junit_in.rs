//! Reading a test suite's JUnit XML (pytest's `--junitxml`, mocha-junit-reporter, jest-junit,
//! Maven Surefire, `go-junit-report`): each `<testcase>`'s name, class and result, for
//! `lockstep serve -- SUITE`'s per-test rows.
//!
//! A tolerant reader of the one element that matters, written from the format's common shape (the
//! Ant/Surefire schema): `<testcase name=".." classname=".." time="..">` holding a `<failure>`,
//! an `<error>` or a `<skipped>` — or none, a pass. Attributes' five predefined entities and
//! numeric character references are decoded. Left out: nesting beyond that, CDATA inside
//! attributes, namespaces, and `<system-out>`.

/// A test's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseResult {
    /// Neither failed nor skipped.
    Passed,
    /// A `<failure>`.
    Failed,
    /// An `<error>`.
    Error,
    /// A `<skipped>`.
    Skipped,
}

impl CaseResult {
    /// `passed`, `FAILED`, `ERROR`, `skipped`.
    pub fn shown(self) -> &'static str {
        match self {
            CaseResult::Passed => "passed",
            CaseResult::Failed => "FAILED",
            CaseResult::Error => "ERROR",
            CaseResult::Skipped => "skipped",
        }
    }
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Case {
    /// Its `name`.
    pub name: String,
    /// Its `classname` (empty when absent).
    pub classname: String,
    /// Its `time`, s.
    pub time_s: Option<f64>,
    /// Its result.
    pub result: CaseResult,
}

impl Case {
    /// Whether the test label `label` names this case: the name itself, or ending with it after
    /// a separator (`file.py::name`, `Suite name`, `Class.name`).
    pub fn is_named_by(&self, label: &str) -> bool {
        label == self.name
            || label
                .strip_suffix(self.name.as_str())
                .is_some_and(|head| head.ends_with([':', ' ', '.', '/', '#']))
    }
}

/// The test cases of a JUnit XML document, in document order.
pub fn cases(xml: &str) -> Vec<Case> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<testcase") {
        rest = &rest[at + "<testcase".len()..];
        // `<testcases>` or another longer name is not this element.
        if !rest.starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/') {
            continue;
        }
        let Some(tag_end) = tag_end(rest) else {
            break;
        };
        let attrs = &rest[..tag_end];
        let self_closing = attrs.trim_end().ends_with('/');
        rest = &rest[tag_end + 1..];
        let body = if self_closing {
            ""
        } else {
            let end = rest.find("</testcase").unwrap_or(rest.len());
            let body = &rest[..end];
            rest = &rest[end..];
            body
        };
        let has = |tag: &str| {
            body.match_indices(tag)
                .any(|(i, _)| body[i + tag.len()..].starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/'))
        };
        let result = if has("<failure") {
            CaseResult::Failed
        } else if has("<error") {
            CaseResult::Error
        } else if has("<skipped") {
            CaseResult::Skipped
        } else {
            CaseResult::Passed
        };
        out.push(Case {
            name: attr(attrs, "name").unwrap_or_default(),
            classname: attr(attrs, "classname").unwrap_or_default(),
            time_s: attr(attrs, "time").and_then(|t| t.parse().ok()),
            result,
        });
    }
    out
}

/// The index of the `>` closing a tag whose attributes start `text` (quotes respected).
fn tag_end(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The decoded value of attribute `name` in `attrs`.
fn attr(attrs: &str, name: &str) -> Option<String> {
    let mut rest = attrs;
    loop {
        let at = rest.find(name)?;
        let before_ok = at == 0 || rest[..at].ends_with(char::is_whitespace);
        let after = rest[at + name.len()..].trim_start();
        rest = &rest[at + name.len()..];
        if !before_ok {
            continue;
        }
        let Some(value) = after.strip_prefix('=') else {
            continue;
        };
        let value = value.trim_start();
        let quote = value.chars().next()?;
        if quote != '"' && quote != '\'' {
            return None;
        }
        let end = value[1..].find(quote)?;
        return Some(unescape(&value[1..1 + end]));
    }
}

/// XML's predefined entities and numeric references.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';').filter(|e| *e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_and_mocha_reports_are_read() {
        let pytest = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4">
<testcase classname="tests.test_lock" name="test_ok" time="0.010" />
<testcase classname="tests.test_lock" name="test_crash[a&amp;b]" time="1.5"><failure message="assert False">trace</failure></testcase>
<testcase classname="tests.test_lock" name="test_skip" time="0"><skipped type="pytest.skip" message="no" /></testcase>
<testcase classname="tests.test_lock" name="test_err" time="0"><error message="boom">x</error></testcase>
</testsuite></testsuites>"#;
        let c = cases(pytest);
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].result, CaseResult::Passed);
        assert_eq!(c[1].name, "test_crash[a&b]");
        assert_eq!(c[1].result, CaseResult::Failed);
        assert_eq!(c[1].time_s, Some(1.5));
        assert_eq!(c[2].result, CaseResult::Skipped);
        assert_eq!(c[3].result, CaseResult::Error);
        assert!(c[1].is_named_by("tests/test_lock.py::test_crash[a&b]"));
        assert!(!c[0].is_named_by("tests/test_lock.py::not_test_ok"));
        let mocha = "<testsuites><testsuite name='lock'><testcase name='lock crashes the master' classname='crashes the master' time='0.2'>\
                     <failure message='x'/></testcase><testcases/></testsuite></testsuites>";
        let c = cases(mocha);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].result, CaseResult::Failed);
        assert!(c[0].is_named_by("lock crashes the master"));
        assert!(cases("not xml <testcase name=\"x").is_empty());
        assert_eq!(unescape("&#65;&#x42;&bogus;&"), "AB&bogus;&");
    }
}
