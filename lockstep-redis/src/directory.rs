//! The directory: which server is the current master of each replication group, as a
//! Sentinel-aware client asks Sentinel. A group is named after the master it was defined with;
//! a failover moves the name to the promoted replica. Shared by every node of a world.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// Which server is the master of each replication group (a group is named after the master it
/// was defined with). Shared by every node of a world.
#[derive(Debug, Clone, Default)]
pub struct Directory(Rc<RefCell<BTreeMap<String, String>>>);

impl Directory {
    /// The current master of group `host`, or `host` itself when it names no group.
    pub fn resolve(&self, host: &str) -> String {
        self.0.borrow().get(host).cloned().unwrap_or_else(|| host.to_string())
    }

    /// Every group and its current master.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.0.borrow().clone()
    }

    /// Makes `master` the current master of `group`.
    pub fn set(&self, group: &str, master: &str) {
        self.0.borrow_mut().insert(group.to_string(), master.to_string());
    }
}
