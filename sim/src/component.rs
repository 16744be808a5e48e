//! Components: behaviour the world drives at each step beside its own nodes, network and fault
//! plan, each with its state private to it — as madsim's plugins. The Redis deployment
//! ([`crate::deployment`]: masters, persistence, restarts, replicas, the Sentinel) is the world's
//! first component; a test may add its own ([`crate::World::add_component`]) and read it back
//! ([`crate::World::component`]).
//!
//! The world calls, at each step of true time: every due fault is logged and applied to the
//! network and the node it names, then each component's [`Component::on_fault`] takes its part
//! of it, in the order the components were added; each [`Component::before_step`]; the step of
//! the machines; each [`Component::after_step`]. Between steps the world jumps over idle time to
//! the first thing due, which includes each component's [`Component::next_due_us`]. A component
//! starts and stops its own hosts through [`Hosts`] (a process crash, a restart), and records
//! into the history through its nodes ([`crate::Node::record`]).
//!
//! Left out: a component cannot add nodes once the world runs, nor see another component
//! (components talk through the nodes and the history, never through each other).

use crate::machine::{Machines, SoftwareResult};
use crate::wire::Wire;
use lockstep_history::fault::Fault;
use std::any::Any;
use std::future::Future;

/// The simulated machines, as a component may touch them: register a host, kill its software,
/// start it again.
pub struct Hosts<'a> {
    machines: &'a mut Machines,
    wire: &'a Wire,
}

impl<'a> Hosts<'a> {
    /// The machines and their network.
    pub(crate) fn new(machines: &'a mut Machines, wire: &'a Wire) -> Self {
        Hosts { machines, wire }
    }

    /// Registers host `name` running `software` (started again, afresh, by [`Hosts::bounce`]).
    pub fn host<F, Fut>(&mut self, name: &str, software: F)
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = SoftwareResult> + 'static,
    {
        self.machines.host(name, software);
    }

    /// Kills every task of host `name` and closes its sockets.
    pub fn crash(&mut self, name: &str) {
        self.machines.crash(name);
        self.wire.crash(name);
    }

    /// Kills the software of host `name`, closes its sockets and starts the software again.
    pub fn bounce(&mut self, name: &str) {
        self.machines.crash(name);
        self.wire.crash(name);
        self.machines.bounce(name);
    }
}

/// Behaviour the world drives at each step. Every hook has a default that does nothing.
///
/// Determinism: a component must draw its randomness from the world's seed (a stream of a node
/// it owns) and keep no `HashMap` whose order matters.
pub trait Component: Any {
    /// A fault was logged and applied to the world's own nodes and network: the component takes
    /// its part (most faults concern it not at all).
    fn on_fault(&mut self, _fault: &Fault, _hosts: &mut Hosts<'_>) {}

    /// Before each step of true time, after the faults due at its start.
    fn before_step(&mut self, _hosts: &mut Hosts<'_>) {}

    /// After each step of true time.
    fn after_step(&mut self, _hosts: &mut Hosts<'_>) {}

    /// When, at the earliest (true µs, after `now_us`), the component has something to do by
    /// itself: the world does not jump over it. `None`: nothing of its own.
    fn next_due_us(&self, _now_us: u64) -> Option<u64> {
        None
    }
}

/// The world's components, in the order they were added (the order their hooks run in).
#[derive(Default)]
pub(crate) struct Components(Vec<Box<dyn Component>>);

impl Components {
    /// Adds `component` after the others.
    pub(crate) fn push(&mut self, component: Box<dyn Component>) {
        self.0.push(component);
    }

    /// The first component of type `T`.
    pub(crate) fn get<T: Component>(&self) -> Option<&T> {
        self.0.iter().find_map(|c| (c.as_ref() as &dyn Any).downcast_ref::<T>())
    }

    /// The first component of type `T`, to change it.
    pub(crate) fn get_mut<T: Component>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find_map(|c| (c.as_mut() as &mut dyn Any).downcast_mut::<T>())
    }

    /// Every component's part of `fault`, in order.
    pub(crate) fn on_fault(&mut self, fault: &Fault, hosts: &mut Hosts<'_>) {
        for c in &mut self.0 {
            c.on_fault(fault, hosts);
        }
    }

    /// Every component's work before a step, in order.
    pub(crate) fn before_step(&mut self, hosts: &mut Hosts<'_>) {
        for c in &mut self.0 {
            c.before_step(hosts);
        }
    }

    /// Every component's work after a step, in order.
    pub(crate) fn after_step(&mut self, hosts: &mut Hosts<'_>) {
        for c in &mut self.0 {
            c.after_step(hosts);
        }
    }

    /// The earliest thing any component has due after `now_us`.
    pub(crate) fn next_due_us(&self, now_us: u64) -> Option<u64> {
        self.0.iter().filter_map(|c| c.next_due_us(now_us)).min()
    }
}
