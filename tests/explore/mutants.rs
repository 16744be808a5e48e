//! The mutation suite (`mutants/catalogue.toml`) in the default test command: every mutant is
//! killed within 500 seeds, every correct parent is clean under its assumption-bounded profile.
//!
//! Parents get 40 seeds here (`lockstep mutants` gives them the mutants' full budget, 500 by
//! default): a parent's budget is spent in full, a mutant's stops at its first kill, and the test
//! must stay within a few minutes in a debug build on 2 cores beside the other test binaries.

use lockstep::app::mutants::{run_suite, SuiteOptions};
use std::path::Path;

#[test]
fn every_mutant_is_killed_and_every_parent_is_clean() {
    let catalogue =
        lockstep::scenario::mutants::load(Path::new("mutants/catalogue.toml")).expect("the catalogue loads");
    assert!(catalogue.mutants.len() >= 25, "{} mutants", catalogue.mutants.len());
    let options = SuiteOptions {
        seeds: 500,
        parent_seeds: 40,
        jobs: 2,
        standard: false,
    };
    let result = run_suite(&catalogue, &options);
    print!("{}", result.render());
    for parent in &result.parents {
        assert!(parent.is_clean(), "parent {} is not clean: {:?}", parent.name, parent);
        assert_eq!(parent.seeds, 40);
        // A parent is clean over seeds that exercised it: the bounds must leave most plans
        // inside every assumption, not make every plan harmless by dropping it.
        assert!(
            parent.seeds_inside > 0,
            "parent {}: no seed stayed inside its assumptions",
            parent.name
        );
    }
    for mutant in &result.mutants {
        let kill = mutant
            .kill
            .as_ref()
            .unwrap_or_else(|| panic!("mutant {} survived", mutant.name));
        assert!(!kill.checkers.is_empty());
    }
    // Under the bounded profiles a kill is judged (a checker the parent is promised), not only
    // a difference from the parent on one seed.
    assert!(
        result
            .mutants
            .iter()
            .filter_map(|m| m.kill.as_ref())
            .any(|k| k.how == "judged"),
        "no kill was judged"
    );
    assert_eq!(result.killed(), result.mutants.len());
    assert!(result.passed());
}

#[test]
fn a_bad_mutant_names_the_catalogue_and_the_mutant() {
    let dir = std::env::temp_dir().join(format!("lockstep-mutants-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("parents")).unwrap();
    std::fs::copy("mutants/parents/token-release.toml", dir.join("parents/p.toml")).unwrap();
    let catalogue = dir.join("catalogue.toml");
    std::fs::write(
        &catalogue,
        "[[parent]]\nname = \"p\"\nfile = \"parents/p.toml\"\nkinds = [\"pause\"]\n\n[[mutant]]\nname = \"m\"\n\
         parent = \"p\"\nbreaks = \"b\"\nsource = \"s\"\nlock = { ttl_ms = 0 }\n",
    )
    .unwrap();
    let error = lockstep::scenario::mutants::load(&catalogue).expect_err("ttl_ms = 0 is refused");
    let text = error.to_string();
    assert!(text.contains("mutant `m`") && text.contains("ttl_ms"), "{text}");
    std::fs::write(
        &catalogue,
        "[[mutant]]\nname = \"m\"\nparent = \"nobody\"\nbreaks = \"b\"\nsource = \"s\"\nlock = {}\n",
    )
    .unwrap();
    let text = lockstep::scenario::mutants::load(&catalogue)
        .expect_err("no parent")
        .to_string();
    assert!(text.contains("no parent `nobody`"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
