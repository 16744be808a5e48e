//! `drop-reply` end to end: the shipped scenario `drop-reply-retry.toml` runs, its history shows
//! the command that ran and the reply that was lost, the client's acquire is outcome-unknown, the
//! orphaned key blocks everyone until it expires, and every checker says what the file expects.

use lockstep::history::OpHistory;
use lockstep::model::Verdict;
use lockstep::run::run_scenario;
use lockstep::scenario::Scenario;
use lockstep::sim::{EventKind, Fault, Phase};
use std::path::Path;

#[test]
fn a_lost_acquire_reply_orphans_the_key_for_a_ttl_and_safety_holds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/drop-reply-retry.toml");
    let scenario = Scenario::from_file(&path).expect("the shipped file parses");
    let run = run_scenario(&scenario, None).expect("the world runs");
    assert!(run.as_expected(), "{:?}", run.mismatches);
    for (checker, verdict) in [
        ("mutual-exclusion", Verdict::Valid),
        ("stale-write", Verdict::Valid),
        ("lost-update", Verdict::Valid),
        ("token-order", Verdict::Unknown),
    ] {
        assert_eq!(run.verdict(checker), Some(verdict), "{checker}");
    }
    let events = run.history.events();

    // The fault is logged on the server, then the acquire it caught: SET NX ran (+OK)...
    let fault_at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Fault { fault } if matches!(fault, Fault::DropReply { .. })))
        .expect("the drop-reply fault is in the history");
    assert_eq!(events[fault_at].node, "redis-1");
    let set_at = events
        .iter()
        .position(|e| {
            e.seq > events[fault_at].seq
                && matches!(&e.kind, EventKind::Command { args, reply, .. }
                    if args.first().is_some_and(|a| a == "SET") && args.contains(&"NX".to_string()) && reply == "+OK")
        })
        .expect("the caught acquire ran on redis-1");
    // ... and right after it, the note that its reply was lost.
    let note = &events[set_at + 1];
    assert_eq!(note.node, "redis-1");
    let EventKind::Note { text } = &note.kind else {
        panic!("expected the drop note after the command, got {note:?}")
    };
    assert!(
        text.contains("reply dropped (drop-reply)") && text.contains("from client-1"),
        "{text}"
    );
    let dropped_us = note.at_us;

    // client-1 saw no reply: its acquire is outcome-unknown (info), not a grant.
    let history = OpHistory::new(&run.history);
    let unknown = events
        .iter()
        .find(|e| {
            e.at_us > dropped_us
                && e.node == "client-1"
                && matches!(&e.kind, EventKind::Op { op, phase: Phase::Info, .. } if op == "acquire")
        })
        .expect("client-1's acquire is outcome-unknown");

    // The key it does not know it set blocks every acquire until it expires, a TTL later.
    let expired = events
        .iter()
        .find(|e| e.at_us > dropped_us && matches!(&e.kind, EventKind::Expired { key, .. } if key == "lock"))
        .expect("the orphaned key expires");
    let ttl_us = scenario.lock.ttl_ms * 1_000;
    assert!(
        expired.at_us >= dropped_us + ttl_us - 10_000 && expired.at_us <= dropped_us + ttl_us + 10_000,
        "expired at {} us, set at {dropped_us} us",
        expired.at_us
    );
    assert!(
        !history
            .holds()
            .iter()
            .any(|h| h.start_us() > unknown.at_us && h.start_us() < expired.at_us),
        "nobody holds the lock while the orphaned key stands"
    );
    // Both clients waited through it: the lock sat free-and-wanted for most of a TTL.
    let live = lockstep::liveness::of(&history);
    assert!(live.unavailable_ms >= scenario.lock.ttl_ms * 3 / 4, "{live:?}");
    assert_eq!(history.holds().len(), 4, "every critical section ran in the end");

    // The text timeline tells it in the sim's words.
    let text = lockstep::report::narrative::text(&history);
    assert!(
        text.contains("DROPS the next 1 reply to client-1 (the command runs, the reply is lost)"),
        "{text}"
    );
    assert!(text.contains("acquire outcome unknown"), "{text}");
}
