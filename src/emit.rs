//! Writing to standard output and standard error without panicking.
//!
//! `print!` and `eprint!` panic when their stream cannot be written (a full disk behind a
//! redirect: exit 101). Everything the tool prints goes through here instead:
//! - [`stdout`] is the tool's result (verdicts, summaries, JSON). A failure to write it is an
//!   error the caller returns (exit 2), except a closed pipe (`lockstep … | head`): the reader has
//!   what it wanted, so the rest is dropped quietly and the run still ends with its own exit code.
//! - [`stderr`] is progress and diagnostics: best effort, a failure is ignored (there is nowhere
//!   left to report it).
//!
//! Colours reach a terminal only (anstream strips them for pipes, files and `NO_COLOR`).

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output. `Err` names the stream and the cause.
pub fn stdout(text: &str) -> Result<(), String> {
    let mut out = anstream::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to standard output: {e}")),
    }
}

/// Writes `text` and a newline to standard error, ignoring a failure.
pub fn stderr_line(text: &str) {
    let mut err = anstream::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n"));
}
