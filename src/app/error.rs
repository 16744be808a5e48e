//! The one error type of the application layer, and the one place where outcomes and errors
//! become exit codes.
//!
//! Exit codes: 0 — every expectation held (or nothing was found); 1 — some expectation did not
//! hold (or an exploration found something); 2 — bad input, a run that could not be carried
//! out, or an I/O failure. Leaves out: how errors are printed (the CLI prints `error: {e}`).

/// [`crate::run::expect::Outcome`], under its old path.
#[deprecated(
    since = "0.1.0",
    note = "moved to `lockstep::run::expect::Outcome`; removed in 0.3.0"
)]
pub type Outcome = crate::run::expect::Outcome;
use thiserror::Error;

/// Why a command could not do its work. Every variant exits with code 2.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AppError {
    /// A file that cannot be read or parsed, a flag out of range, an unknown name.
    #[error("{0}")]
    BadInput(String),
    /// The world could not run a scenario (a node failed to start, a panic).
    #[error("{0}")]
    RunFailure(String),
    /// Writing a result failed.
    #[error("{0}")]
    Io(String),
}

impl AppError {
    /// The exit code of a command that stopped on this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            AppError::BadInput(_) | AppError::RunFailure(_) | AppError::Io(_) => 2,
        }
    }
}

/// The exit code of a command's result: the one mapping from results to codes.
pub fn exit_code(result: &Result<crate::run::expect::Outcome, AppError>) -> u8 {
    match result {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => e.exit_code(),
    }
}
