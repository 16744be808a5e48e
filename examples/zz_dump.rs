use lockstep::prelude::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = Scenario::from_file(std::path::Path::new(&args[1])).unwrap();
    let run = run_scenario(&scenario, None).unwrap();
    print!("{}", lockstep::timeline::render(&run.history));
    for r in &run.results { println!("   {} {} {}", r.checker, r.verdict.name(), r.explanation); }
}
