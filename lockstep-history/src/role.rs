//! What a node is: a Redis master, a replica, the fenced resource or a client. Faults are checked
//! against it (only servers crash, only a client's link to a server drops replies).

use serde::{Deserialize, Serialize};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A Redis master.
    Master,
    /// A replica of a Redis master (a master after a failover promotes it).
    Replica,
    /// The fenced resource.
    Resource,
    /// A client running user code.
    Client,
}

impl Role {
    /// The role in a sentence: `a master`, `a replica`, `the resource`, `a client`.
    pub fn describe(self) -> &'static str {
        match self {
            Role::Master => "a master",
            Role::Replica => "a replica",
            Role::Resource => "the resource",
            Role::Client => "a client",
        }
    }

    /// Whether the node is a Redis server process (a master or a replica), which can be stopped
    /// and started.
    pub fn is_redis_server(self) -> bool {
        matches!(self, Role::Master | Role::Replica)
    }

    /// Whether the node answers requests (a Redis server or the resource).
    pub fn is_server(self) -> bool {
        !matches!(self, Role::Client)
    }
}
