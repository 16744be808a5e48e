//! `lockstep explore --bounded`: under the assumption-bounded profile a correct lock shows no
//! violation of a checker it promises, while a lock with a known bug is still caught, and every
//! violating seed says which assumptions its plan broke.

use std::process::Command;

fn explore(file: &str) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args([
            "explore",
            file,
            "--bounded",
            "--kinds",
            "hold,latency,pause",
            "--seeds",
            "100",
        ])
        .args(["--shrink", "0", "--quiet", "--jobs", "2"])
        .output()
        .expect("lockstep runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_correct_lock_is_clean_and_a_buggy_one_is_caught_under_its_assumptions() {
    let (code, text) = explore("mutants/parents/token-release.toml");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("assumption-bounded profile"), "{text}");
    assert!(
        text.contains("0 seeds violate a checker token-release promises under their plan: no implementation bug found"),
        "{text}"
    );
    // The seeds that do violate a checker broke the timing assumption (a pause past the lease).
    assert!(text.contains(": broke timing"), "{text}");

    let (code, text) = explore("scenarios/bug-release-no-owner-check.toml");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("IMPLEMENTATION BUG"), "{text}");
    assert!(text.contains("-> implementation bug"), "{text}");
}

#[test]
fn bounded_refuses_guided_placement() {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args([
            "explore",
            "mutants/parents/token-release.toml",
            "--bounded",
            "--strategy",
            "mixed",
        ])
        .args(["--seeds", "1", "--quiet"])
        .output()
        .expect("lockstep runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("places faults at random only"));
}
