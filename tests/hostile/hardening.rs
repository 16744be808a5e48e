//! Issue 13, finding 2 (the half that input over the binary cannot reach): a panic inside one
//! scenario of `lockstep ci` — user code with a bug — is that scenario's error in the report,
//! the gate goes on over the other scenarios and its exploration, and the outcome is exit 1.

use lockstep::app::ci::{run_ci, CiOptions};
use lockstep::app::error::exit_code;
use lockstep::app::exploration::Locks;
use lockstep::app::files::load_inputs;
use lockstep::explore::{LockChoice, UserLock};
use lockstep::prelude::*;
use lockstep::report::{Report, Status};
use std::path::PathBuf;
use std::rc::Rc;

use crate::common;
use common::PanickingLock;

#[test]
fn a_panic_in_one_scenario_of_the_gate_is_its_error_and_the_gate_goes_on() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut inputs = load_inputs(&[
        dir.join("kleppmann-gc-pause.toml"),
        dir.join("kleppmann-gc-pause-fenced.toml"),
        dir.join("explore-token-release-pause-crash.toml"),
    ])
    .unwrap();
    inputs[2].1.explore.as_mut().expect("an [explore] block").seeds = 3;
    let maker = || -> LockFactory { Rc::new(|_env: LockEnv| Rc::new(PanickingLock) as Rc<dyn LockClient>) };
    let options = CiOptions {
        jobs: 1,
        locks: Locks {
            subject: LockChoice::User(UserLock::new("exploding", maker).unwrap()),
            reference: None,
        },
        ..CiOptions::default()
    };
    let ci = run_ci(&inputs, &options).expect("the gate runs to the end");
    assert_eq!(ci.scenarios.len(), 3, "every scenario ran");
    for scenario in &ci.scenarios {
        let error = scenario.run.as_ref().expect_err("each run panicked");
        assert!(error.contains("acquire exploded"), "{error}");
    }
    assert_eq!(ci.explorations.len(), 1, "the exploration ran after the panics");
    assert_eq!(ci.explorations[0].summary.errors, 3);
    let report = Report::build(&ci);
    assert!(report.scenarios.iter().all(|s| s.status == Status::Error), "{report:?}");
    assert!(!report.ok);
    assert_eq!(exit_code(&Ok(report.outcome())), 1);
}
