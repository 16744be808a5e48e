//! A component of the caller's own, driven by the world beside the Redis deployment: its hooks
//! run at each step and on each fault, the world does not jump over what it has due, and the
//! caller reads it back after the run.

use lockstep_sim::{ClockSpec, Component, Fault, FaultPlan, Hosts, Node, ScheduledFault, World, WorldConfig};

/// Remembers when (true µs) each step ended and which faults it saw; has something due at `due_us`.
struct Watcher {
    node: Node,
    due_us: u64,
    steps_ended_us: Vec<u64>,
    faults: Vec<String>,
    before_steps: u64,
}

impl Component for Watcher {
    fn on_fault(&mut self, fault: &Fault, _hosts: &mut Hosts<'_>) {
        self.faults
            .push(format!("{} at {} µs", fault.describe(), self.node.true_time_us()));
    }

    fn before_step(&mut self, _hosts: &mut Hosts<'_>) {
        self.before_steps += 1;
    }

    fn after_step(&mut self, _hosts: &mut Hosts<'_>) {
        self.steps_ended_us.push(self.node.true_time_us());
    }

    fn next_due_us(&self, now_us: u64) -> Option<u64> {
        (now_us < self.due_us).then_some(self.due_us)
    }
}

fn run(due_us: u64) -> Watcher {
    let mut w = World::new(WorldConfig {
        seed: 7,
        duration_ms: 20_000,
        ..WorldConfig::default()
    })
    .expect("valid config");
    w.add_master("redis-1", ClockSpec::default()).unwrap();
    // One client that sleeps 10 s: the world jumps over the idle time.
    let client = w
        .add_client("c", ClockSpec::default(), |node| async move {
            node.sleep_true_ms(10_000).await;
        })
        .unwrap();
    w.add_component(Watcher {
        node: client,
        due_us,
        steps_ended_us: Vec::new(),
        faults: Vec::new(),
        before_steps: 0,
    });
    let plan = FaultPlan::new(vec![ScheduledFault {
        at_ms: 3_000,
        fault: Fault::Partition {
            a: "c".into(),
            b: "redis-1".into(),
            oneway: false,
        },
    }]);
    w.run(&plan).unwrap();
    let watcher = w.component::<Watcher>().expect("the component is still there");
    Watcher {
        node: watcher.node.clone(),
        due_us: watcher.due_us,
        steps_ended_us: watcher.steps_ended_us.clone(),
        faults: watcher.faults.clone(),
        before_steps: watcher.before_steps,
    }
}

#[test]
fn the_world_drives_a_component_of_the_callers_own() {
    let watcher = run(5_500_000);
    // Its hooks ran at every step, before and after.
    assert!(!watcher.steps_ended_us.is_empty());
    assert!(watcher.before_steps >= watcher.steps_ended_us.len() as u64);
    // It saw the fault when it struck.
    assert_eq!(watcher.faults.len(), 1, "{:?}", watcher.faults);
    assert!(watcher.faults[0].ends_with("at 3000000 µs"), "{:?}", watcher.faults);
    // The world stepped to what it had due, not over it: a step ends in the tick of 5.5 s.
    let tick_us = WorldConfig::default().tick_ms * 1_000;
    assert!(
        watcher
            .steps_ended_us
            .iter()
            .any(|&end| (5_500_000..5_500_000 + tick_us).contains(&end)),
        "{:?}",
        watcher.steps_ended_us
    );
    // Idle time was still jumped over: far fewer steps than ticks in 10 s.
    assert!((watcher.steps_ended_us.len() as u64) < 10_000_000 / tick_us / 2);
}

#[test]
fn without_anything_due_the_jump_passes_that_instant() {
    // The same run with nothing due at 5.5 s: no step ends in its tick (the assertion above
    // says something).
    let watcher = run(0);
    let tick_us = WorldConfig::default().tick_ms * 1_000;
    assert!(
        !watcher
            .steps_ended_us
            .iter()
            .any(|&end| (5_500_000..5_500_000 + tick_us).contains(&end)),
        "{:?}",
        watcher.steps_ended_us
    );
}
