//! The hooks through which the world drives a component: richer behaviour (the Redis deployment)
//! that runs beside the world's own nodes, network and fault plan, with its state private to it.
//!
//! The world calls, at each step of true time: every due fault is logged and applied, then each
//! component's [`Component::on_fault`] takes its part of it; [`Component::before_step`]; the
//! step of the machines; [`Component::after_step`]. A component starts and stops its own hosts through
//! [`Hosts`] (a process crash, a restart); it logs into the history through its nodes.

use crate::machine::{Machines, SoftwareResult};
use crate::wire::Wire;
use lockstep_history::fault::Fault;
use std::future::Future;

/// The simulated machines, as a component may touch them: register a host, kill its software,
/// start it again.
pub(crate) struct Hosts<'a> {
    machines: &'a mut Machines,
    wire: &'a Wire,
}

impl<'a> Hosts<'a> {
    /// The machines and their network.
    pub(crate) fn new(machines: &'a mut Machines, wire: &'a Wire) -> Self {
        Hosts { machines, wire }
    }

    /// Registers host `name` running `software` (started again, afresh, by [`Hosts::bounce`]).
    pub(crate) fn host<F, Fut>(&mut self, name: &str, software: F)
    where
        F: Fn() -> Fut + 'static,
        Fut: Future<Output = SoftwareResult> + 'static,
    {
        self.machines.host(name, software);
    }

    /// Kills every task of host `name` and closes its sockets.
    pub(crate) fn crash(&mut self, name: &str) {
        self.machines.crash(name);
        self.wire.crash(name);
    }

    /// Starts the software of host `name` again.
    pub(crate) fn bounce(&mut self, name: &str) {
        self.machines.crash(name);
        self.wire.crash(name);
        self.machines.bounce(name);
    }
}

/// Behaviour the world drives at each step.
pub(crate) trait Component {
    /// A fault was logged and applied to the world's own nodes and network: the component takes
    /// its part (most faults concern it not at all).
    fn on_fault(&mut self, fault: &Fault, hosts: &mut Hosts<'_>);

    /// Before each step of true time, after the faults due at its start.
    fn before_step(&mut self, hosts: &mut Hosts<'_>);

    /// After each step of true time.
    fn after_step(&mut self, hosts: &mut Hosts<'_>);
}
