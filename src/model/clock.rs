//! Which clock a lock client times itself with ([`ClockKind`]): shared by Redlock's settings and
//! the script lock's.

use serde::{Deserialize, Serialize};

/// Which clock a lock client times its lease with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// The node's monotonic clock (drifts, never jumps).
    #[default]
    Monotonic,
    /// The node's wall clock (drifts and jumps).
    Wall,
}

impl ClockKind {
    /// `monotonic` or `wall`.
    pub fn name(&self) -> &'static str {
        match self {
            ClockKind::Monotonic => "monotonic",
            ClockKind::Wall => "wall",
        }
    }
}
