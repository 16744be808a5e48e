//! Which test a served command belongs to: test labels read in history order.
//!
//! A label — `ECHO lockstep:test:NAME` or `CLIENT SETNAME NAME` on any connection
//! ([`super::recorder::test_label`]) — covers **every connection of the same client** from then
//! on, until that client's next label: the client being the set of ports the connection came in
//! on (the scenario's `[[client]]`, `app` without a file), so a connection opened after a crash,
//! or another connection of the pool, stays in the test that opened it. A label given out of band
//! (`LOCKSTEP LABEL`, `POST /label`, [`super::control`]) covers every client. The latest label
//! wins. Left out: telling apart test processes that share one set of ports and run at once
//! (pytest-xdist workers): give each its own `[[client]]`.

use super::recorder::{control_label, test_label};
use lockstep_sim::{Event, EventKind};
use std::collections::BTreeMap;

/// The labels seen so far, per client.
#[derive(Debug, Default, Clone)]
pub struct Labels {
    /// Per client (peer): the seq of its latest label and the test.
    by_peer: BTreeMap<String, (u64, String)>,
    /// The latest out-of-band label.
    control: Option<(u64, String)>,
}

/// A label an event gives: the test, and the client it covers (`None`: every client).
pub fn label_of(event: &Event) -> Option<(String, Option<String>)> {
    match &event.kind {
        EventKind::Command { client, .. } => {
            let name = test_label(&event.kind)?;
            Some((name.to_string(), client.clone()))
        }
        EventKind::Note { text } if event.node == "world" => control_label(text).map(|n| (n.to_string(), None)),
        _ => None,
    }
}

impl Labels {
    /// Reads `event`: a label updates its client's test. Returns the label, if it was one.
    pub fn observe(&mut self, event: &Event) -> Option<String> {
        let (name, peer) = label_of(event)?;
        match peer {
            Some(peer) => {
                self.by_peer.insert(peer, (event.seq, name.clone()));
            }
            None => self.control = Some((event.seq, name.clone())),
        }
        Some(name)
    }

    /// The test client `peer` runs now (the later of its own label and an out-of-band one).
    pub fn test_of(&self, peer: &str) -> Option<&str> {
        let own = self.by_peer.get(peer);
        match (own, &self.control) {
            (Some((a, n)), Some((b, _))) if a > b => Some(n),
            (_, Some((_, n))) => Some(n),
            (Some((_, n)), None) => Some(n),
            (None, None) => None,
        }
    }

    /// Every test running now, one per client (and the out-of-band one), in name order, deduplicated.
    pub fn running(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .by_peer
            .keys()
            .filter_map(|p| self.test_of(p))
            .map(str::to_string)
            .collect();
        if let Some((_, n)) = &self.control {
            names.push(n.clone());
        }
        names.sort();
        names.dedup();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_sim::History;

    fn command(h: &mut History, at_ms: u64, conn: u64, peer: &str, args: &[&str]) {
        h.push(
            at_ms * 1000,
            "redis-1",
            at_ms as i64,
            at_ms as i64,
            EventKind::Command {
                conn,
                args: args.iter().map(|a| a.to_string()).collect(),
                reply: "+OK".to_string(),
                effects: Vec::new(),
                client: Some(peer.to_string()),
            },
        );
    }

    #[test]
    fn a_label_covers_every_connection_of_its_client_until_the_next() {
        let mut h = History::new();
        command(&mut h, 1, 1, "app", &["ECHO", "lockstep:test:first"]);
        command(&mut h, 2, 7, "app", &["GET", "k"]);
        command(&mut h, 3, 2, "other", &["CLIENT", "SETNAME", "theirs"]);
        h.push(
            4_000,
            "world",
            4,
            4,
            EventKind::Note {
                text: "test everyone (control)".to_string(),
            },
        );
        command(&mut h, 5, 9, "app", &["ECHO", "lockstep:test:second"]);
        let mut labels = Labels::default();
        let mut seen = Vec::new();
        for e in h.events() {
            labels.observe(e);
            seen.push((
                labels.test_of("app").map(str::to_string),
                labels.test_of("other").map(str::to_string),
            ));
        }
        let s = |x: &str| Some(x.to_string());
        assert_eq!(seen[1], (s("first"), None), "a connection the label was not sent on");
        assert_eq!(seen[2], (s("first"), s("theirs")));
        assert_eq!(seen[3], (s("everyone"), s("everyone")));
        assert_eq!(seen[4], (s("second"), s("everyone")));
        assert_eq!(labels.running(), ["everyone", "second"]);
    }
}
