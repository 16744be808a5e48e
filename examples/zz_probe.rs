use lockstep::prelude::*;
fn main() {
    for p in std::env::args().skip(1) {
        let scenario = Scenario::from_file(std::path::Path::new(&p)).unwrap();
        let run = run_scenario(&scenario, None).unwrap();
        println!("== {p} as_expected={} digest={}", run.as_expected(), &run.digest[..16]);
        for r in &run.results { println!("   {} {} {}", r.checker, r.verdict.name(), r.explanation); }
    }
}
