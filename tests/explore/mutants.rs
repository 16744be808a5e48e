//! The mutation suite (`mutants/catalogue.toml`) in the default test command: every mutant is
//! killed within 500 seeds, every correct parent is clean under its assumption-bounded profile,
//! and each kill reports its seeds to kill (issue 42) in the table and the JSON.
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
    let text = result.render();
    for mutant in &result.mutants {
        let kill = mutant
            .kill
            .as_ref()
            .unwrap_or_else(|| panic!("mutant {} survived", mutant.name));
        assert!(!kill.checkers.is_empty());
        // Issue 42: seeds to kill, the seeds explored up to and including the killing seed,
        // within the budget, in the console table's row of the mutant.
        let seeds_to_kill = mutant
            .seeds_to_kill
            .unwrap_or_else(|| panic!("mutant {}: no seeds to kill", mutant.name));
        assert_eq!(seeds_to_kill, kill.seed + 1, "{}", mutant.name);
        assert_eq!(kill.seeds_to_kill, seeds_to_kill, "{}", mutant.name);
        assert!(
            (1..=options.seeds).contains(&seeds_to_kill),
            "{}: {seeds_to_kill} seeds to kill of {}",
            mutant.name,
            options.seeds
        );
        assert_eq!(
            mutant.seeds, seeds_to_kill,
            "{}: exploring stops at the kill",
            mutant.name
        );
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(mutant.name.as_str()))
            .unwrap_or_else(|| panic!("no table row for {}: {text}", mutant.name));
        let cells: Vec<&str> = row.split_whitespace().collect();
        // mutant, parent, killed, kill seed, seeds to kill, ...
        assert_eq!(
            cells[2..5],
            ["yes", &kill.seed.to_string(), &seeds_to_kill.to_string()],
            "{row}"
        );
    }
    // The JSON (`lockstep mutants --report DIR`'s mutants.json) carries the same numbers.
    let json = serde_json::to_value(&result).expect("serialises");
    for (mutant, value) in result.mutants.iter().zip(json["mutants"].as_array().expect("mutants")) {
        assert_eq!(value["name"], mutant.name.as_str());
        assert_eq!(value["seeds_to_kill"].as_u64(), mutant.seeds_to_kill, "{value}");
        assert_eq!(value["kill"]["seeds_to_kill"].as_u64(), mutant.seeds_to_kill, "{value}");
    }
    assert!(json["summary"]["seeds_to_kill_max"]
        .as_u64()
        .is_some_and(|max| max <= options.seeds));
    let n = result.mutants.len();
    assert!(text.contains(&format!("mutation score {n}/{n}")), "{text}");
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
