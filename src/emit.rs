//! Writing to standard output and standard error without panicking.
//!
//! `print!` and `eprint!` panic when their stream cannot be written (a full disk behind a
//! redirect: exit 101). Everything the tool prints goes through here instead:
//! - [`stdout`] is the tool's result (verdicts, summaries, JSON). A failure to write it is an
//!   error the caller returns (exit 2), except a closed pipe (`lockstep … | head`): the reader has
//!   what it wanted, so the rest is dropped quietly and the run still ends with its own exit code.
//! - [`stderr_line`] is progress and diagnostics: best effort, a failure is ignored (there is
//!   nowhere left to report it).
//!
//! Colours reach a terminal only (anstream strips them for pipes, files and `NO_COLOR`; without
//! the `cli` feature the streams are written as they are).

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output. `Err` names the stream and the cause.
pub fn stdout(text: &str) -> Result<(), String> {
    #[cfg(feature = "cli")]
    let mut out = anstream::stdout().lock();
    #[cfg(not(feature = "cli"))]
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to standard output: {e}")),
    }
}

/// Writes `text` and a newline to standard error, ignoring a failure.
pub fn stderr_line(text: &str) {
    #[cfg(feature = "cli")]
    let mut err = anstream::stderr().lock();
    #[cfg(not(feature = "cli"))]
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n"));
}

/// `word` as one shell word, for the commands lockstep prints (replay lines, reruns): as it is
/// when it holds only `A-Za-z0-9._/,:-`, else in single quotes (a quote inside written `'\''`).
pub(crate) fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | ',' | ':'))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn a_shell_word_is_quoted_only_when_it_must_be() {
        assert_eq!(shell_word("scenarios/a-b_c.toml"), "scenarios/a-b_c.toml");
        assert_eq!(shell_word("pause,hold"), "pause,hold");
        assert_eq!(shell_word("my file.toml"), "'my file.toml'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
