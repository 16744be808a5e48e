//! The live workload: lockstep's client loop, one protocol request at a time, recorded in the
//! same operation vocabulary as the simulated workload ([`crate::ops`]), so the checkers run on
//! the merged history unchanged.
//!
//! Each iteration: acquire (retrying every `acquire_retry_ms` while busy or failing) → read the
//! counter → work for `work_ms` (lockstep waits; a pause of the client process during it delays
//! the adapter's next step, the write, exactly as a stopped program would) → write the value read
//! plus one with the grant's token → release. Every request is stamped when it is written to the
//! adapter's stdin, every answer when its line is read. A request due while the client's process
//! is stopped is written when it is continued: a stopped program reads nothing, so that is when
//! the step really starts.
//!
//! A crash fault kills the client's process: the request in flight (if any) ends as an unknown
//! outcome (`info`: it may have taken effect), the grant it held is forgotten (its key expires
//! after its TTL), and the driver waits for the restart fault. Then it starts the command again
//! (same name, same environment), waits for its hello, and resumes the workload with a new
//! acquisition; the interrupted iteration does not count. Without a restart to come, the client
//! stays down for the rest of the run.
//!
//! Left out compared with the simulated workload: lockstep does not keep a lock alive with
//! extensions (an adapter whose library does that, e.g. node-redlock's `using()`, does it
//! itself), so no `abort` ops are recorded.

use super::process::{ClientProcess, ProcessError};
use super::protocol::{parse_answer, Answer, Request, Status};
use super::recorder::LiveRecorder;
use crate::ops::{names, to_data, AcquireInvoke, Grant, GrantRef, OpError, ReadOk, WriteInvoke};
use crate::scenario::WorkMs;
use crate::workload::ClientPlan;
use lockstep_sim::Phase;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::time::Duration;

/// What one client does (true times are ms since the run began): the simulated run's plan of
/// the client ([`ClientPlan::of`]; a live run takes its basic turn), and what driving a process
/// adds.
#[derive(Debug, Clone)]
pub(crate) struct LivePlan {
    /// The client's turn, as a simulated run reads it.
    pub turn: ClientPlan,
    /// How long an adapter may take for one step (time stopped by a pause excluded).
    pub step_timeout_ms: u64,
    /// The run's deadline (no acquire retries after it).
    pub deadline_ms: u64,
    /// How many restart faults the plan holds for this client.
    pub restarts: u32,
    /// How long a restarted adapter may take to say hello, ms.
    pub start_timeout_ms: u64,
}

/// Why a client's driver stopped early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DriverError {
    /// The process misbehaved (exited, hung, stdin closed).
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// The adapter answered something that is not a protocol answer.
    #[error("{client}: the adapter's answer to {op} (request {id}) is not valid: {reason}: {line:?}")]
    Garbage {
        /// The client.
        client: String,
        /// The request's op.
        op: String,
        /// The request's id.
        id: u64,
        /// What is wrong.
        reason: String,
        /// The line.
        line: String,
    },
    /// A crash fault killed the process (the driver waits for its restart).
    #[error("the client process was killed by a crash fault")]
    Crashed,
}

/// One client's driver.
pub(crate) struct Driver {
    /// The process.
    pub process: ClientProcess,
    /// The recorder.
    pub rec: LiveRecorder,
    /// The plan.
    pub plan: LivePlan,
    /// Work durations are drawn from this (seeded per client).
    pub rng: ChaCha8Rng,
    /// The client's faked wall clock, told when a restarted process starts.
    pub fake_clock: Option<std::rc::Rc<super::fakeclock::FakeClock>>,
    /// Restarts done so far.
    pub restarts_done: u32,
    /// Whether the driver stopped because the scenario's duration ran out (not because its
    /// workload was done). The run's own timeout and the driver's deadline check fire at the same
    /// instant, so the run cannot tell from which one returned first.
    pub ran_out_of_time: bool,
}

impl Driver {
    fn name(&self) -> String {
        self.process.name().to_string()
    }

    fn now_ms(&self) -> u64 {
        self.rec.now_us() / 1000
    }

    /// Whether the workload is over: its own `until_ms`, or the scenario's duration (noted in
    /// `ran_out_of_time`).
    fn until_passed(&mut self) -> bool {
        let now = self.now_ms();
        if now >= self.plan.deadline_ms {
            self.ran_out_of_time = true;
            return true;
        }
        self.plan.turn.until_ms.is_some_and(|u| now >= u)
    }

    /// Waits `ms`, or less when a crash fault kills the process meanwhile.
    async fn sleep_ms(&self, ms: u64) {
        let until = tokio::time::Instant::now() + Duration::from_millis(ms);
        let control = self.process.control();
        while !control.is_crashed() {
            let now = tokio::time::Instant::now();
            if now >= until {
                return;
            }
            tokio::time::sleep_until(until.min(now + Duration::from_millis(5))).await;
        }
    }

    /// Sends `request` (recording its invoke with `invoke_data`) and reads its answer.
    async fn call(&mut self, request: Request, invoke_data: serde_json::Value) -> Result<(u64, Answer), DriverError> {
        let client = self.name();
        let op = request.op();
        let id = self.rec.next_op_id();
        let request = with_id(request, id);
        // A stopped process reads nothing: the step is handed over (and stamped) once it runs.
        let control = self.process.control();
        while control.is_paused() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if control.is_crashed() {
            return Err(DriverError::Crashed);
        }
        self.rec.op(&client, id, Phase::Invoke, op, invoke_data);
        // Killed while this request was in flight: its outcome is unknown (it may have run).
        let killed = |driver: &Self| {
            driver.complete(
                id,
                op,
                Phase::Info,
                to_data(&OpError {
                    error: "unknown: the client process was killed (crash fault)".to_string(),
                }),
            );
            DriverError::Crashed
        };
        if let Err(e) = self.process.send(&request.to_line()) {
            return Err(if control.is_crashed() { killed(self) } else { e.into() });
        }
        let waiting_for = format!("the answer to {op} (request {id})");
        loop {
            let line = match self.process.recv(&waiting_for, self.plan.step_timeout_ms).await {
                Ok(line) => line,
                Err(_) if control.is_crashed() => return Err(killed(self)),
                Err(ProcessError::Timeout {
                    client,
                    waiting_for,
                    timeout_ms,
                    stderr,
                    ..
                }) => {
                    return Err(ProcessError::Timeout {
                        client,
                        waiting_for,
                        timeout_ms,
                        hint: "; a slower adapter needs a larger --step-timeout-ms",
                        stderr,
                    }
                    .into())
                }
                Err(e) => return Err(e.into()),
            };
            if line.trim().is_empty() {
                continue;
            }
            let answer = parse_answer(&line).map_err(|reason| DriverError::Garbage {
                client: client.clone(),
                op: op.to_string(),
                id,
                reason,
                line: line.clone(),
            })?;
            if answer.id != id {
                return Err(DriverError::Garbage {
                    client,
                    op: op.to_string(),
                    id,
                    reason: format!("it answers request {} instead", answer.id),
                    line,
                });
            }
            return Ok((id, answer));
        }
    }

    fn complete(&self, id: u64, op: &str, phase: Phase, data: serde_json::Value) {
        self.rec.op(&self.name(), id, phase, op, data);
    }

    fn complete_error(&self, id: u64, op: &str, answer: &Answer) {
        let phase = if answer.status == Some(Status::Unknown) {
            Phase::Info
        } else {
            Phase::Fail
        };
        let status = answer.status.map_or("error", status_name);
        let error = match &answer.error {
            Some(e) => format!("{status}: {e}"),
            None => status.to_string(),
        };
        self.complete(id, op, phase, to_data(&OpError { error }));
    }

    async fn acquire(&mut self) -> Result<Option<Grant>, DriverError> {
        loop {
            if self.until_passed() {
                return Ok(None);
            }
            let key = self.plan.turn.lock_key.clone();
            let ttl_ms = self.plan.turn.ttl_ms;
            let invoke = to_data(&AcquireInvoke {
                key: key.clone(),
                ttl_ms,
            });
            let (id, answer) = self
                .call(
                    Request::Acquire {
                        id: 0,
                        key: key.clone(),
                        ttl_ms,
                    },
                    invoke,
                )
                .await?;
            if answer.status == Some(Status::Ok) {
                let Some(value) = answer.value.as_ref().map(value_text) else {
                    return Err(DriverError::Garbage {
                        client: self.name(),
                        op: "acquire".into(),
                        id,
                        reason: "a granted acquire needs the grant's \"value\"".into(),
                        line: serde_json::to_string(&answer).unwrap_or_default(),
                    });
                };
                let grant = Grant {
                    key,
                    value,
                    fencing_token: answer.fencing_token,
                    validity_ms: answer.validity_ms.unwrap_or(ttl_ms),
                    // A live adapter does not report when it computed the validity.
                    validity_from_ms: None,
                };
                self.complete(id, names::ACQUIRE, Phase::Ok, to_data(&grant));
                return Ok(Some(grant));
            }
            self.complete_error(id, names::ACQUIRE, &answer);
            self.sleep_ms(self.plan.turn.acquire_retry_ms.max(1)).await;
        }
    }

    async fn critical_section(&mut self, grant: &Grant) -> Result<(), DriverError> {
        let key = self.plan.turn.resource_key.clone();
        let token = grant.fencing_token;
        let (id, answer) = self
            .call(
                Request::Read {
                    id: 0,
                    key: key.clone(),
                    fencing_token: token,
                },
                json!({ "key": key, "fencing_token": token }),
            )
            .await?;
        let current = if answer.status == Some(Status::Ok) {
            let value = answer.value.as_ref().and_then(serde_json::Value::as_i64);
            let version = answer.version.unwrap_or(0);
            self.complete(id, names::READ, Phase::Ok, to_data(&ReadOk { value, version }));
            value.unwrap_or(0)
        } else {
            // Without the current value there is nothing safe to write.
            self.complete_error(id, names::READ, &answer);
            return Ok(());
        };
        let work_ms = match self.plan.turn.work_ms {
            WorkMs::Fixed(ms) => ms,
            WorkMs::Range(min, max) => self.rng.random_range(min..=max.max(min)),
        };
        self.sleep_ms(work_ms).await;
        let write = WriteInvoke {
            key: key.clone(),
            value: current + 1,
            fencing_token: token,
        };
        let (id, answer) = self
            .call(
                Request::Write {
                    id: 0,
                    key,
                    value: write.value,
                    fencing_token: token,
                },
                to_data(&write),
            )
            .await?;
        match answer.status {
            Some(Status::Ok) => self.complete(id, names::WRITE, Phase::Ok, json!({ "version": answer.version })),
            _ => self.complete_error(id, names::WRITE, &answer),
        }
        Ok(())
    }

    async fn release(&mut self, grant: &Grant) -> Result<(), DriverError> {
        let gref = GrantRef::from(grant);
        let (id, answer) = self
            .call(
                Request::Release {
                    id: 0,
                    key: grant.key.clone(),
                    value: grant.value.clone(),
                },
                to_data(&gref),
            )
            .await?;
        match answer.status {
            Some(Status::Ok) => self.complete(
                id,
                names::RELEASE,
                Phase::Ok,
                json!({ "released": answer.released.unwrap_or(true) }),
            ),
            // The lock was already gone: nothing was deleted, as the simulated release says.
            Some(Status::Lost) => self.complete(id, names::RELEASE, Phase::Ok, json!({ "released": false })),
            _ => self.complete_error(id, names::RELEASE, &answer),
        }
        Ok(())
    }

    /// Runs the client's loop to the end of its plan, through crashes and restarts.
    pub async fn run(&mut self) -> Result<(), DriverError> {
        let start = self.plan.turn.start_ms;
        let now = self.now_ms();
        if start > now {
            self.sleep_ms(start - now).await;
        }
        let mut done = 0u64;
        loop {
            match self.iterations(&mut done).await {
                // Killed: wait for the restart (and again if it is killed while starting).
                Err(DriverError::Crashed) => loop {
                    match self.restart().await {
                        Ok(true) => break,
                        Ok(false) => return Ok(()),
                        Err(DriverError::Crashed) => continue,
                        Err(e) => return Err(e),
                    }
                },
                other => return other,
            }
        }
    }

    /// After a crash: waits for the next restart fault (`false`: none comes before the
    /// deadline), starts the command again and reads its hello.
    async fn restart(&mut self) -> Result<bool, DriverError> {
        let control = self.process.control();
        loop {
            if control.restarts_requested() > self.restarts_done {
                break;
            }
            if self.plan.restarts <= control.restarts_requested() {
                return Ok(false);
            }
            if self.now_ms() >= self.plan.deadline_ms {
                // A restart was still to come.
                self.ran_out_of_time = true;
                return Ok(false);
            }
            // Not `sleep_ms`, which returns at once while the process is down.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.restarts_done = control.restarts_requested();
        if let Some(clock) = &self.fake_clock {
            clock.process_started();
        }
        self.process.respawn()?;
        let line = match self
            .process
            .recv("its hello line after the restart", self.plan.start_timeout_ms)
            .await
        {
            Ok(line) => line,
            Err(_) if control.is_crashed() => return Err(DriverError::Crashed),
            Err(e) => return Err(e.into()),
        };
        let hello = super::protocol::parse_hello(&line).map_err(|reason| DriverError::Garbage {
            client: self.name(),
            op: "hello".into(),
            id: 0,
            reason,
            line: line.clone(),
        })?;
        self.rec.record(
            &self.name(),
            lockstep_sim::EventKind::Note {
                text: format!("process restarted: {}", hello.hello),
            },
        );
        Ok(true)
    }

    /// The workload's iterations, counting completed ones in `done`.
    async fn iterations(&mut self, done: &mut u64) -> Result<(), DriverError> {
        loop {
            let more = match self.plan.turn.iterations {
                Some(n) => *done < n,
                None => self.plan.turn.until_ms.is_some(),
            };
            if !more || self.until_passed() {
                return Ok(());
            }
            let Some(grant) = self.acquire().await? else {
                return Ok(());
            };
            self.critical_section(&grant).await?;
            self.release(&grant).await?;
            *done += 1;
            if self.plan.turn.think_ms > 0 {
                self.sleep_ms(self.plan.turn.think_ms).await;
            }
        }
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Busy => "busy",
        Status::Lost => "lost",
        Status::Rejected => "rejected",
        Status::Fail => "fail",
        Status::Unknown => "unknown",
    }
}

/// A grant value as text (a JSON string as is, anything else as its JSON).
fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn with_id(request: Request, new_id: u64) -> Request {
    match request {
        Request::Acquire { key, ttl_ms, .. } => Request::Acquire {
            id: new_id,
            key,
            ttl_ms,
        },
        Request::Extend { key, value, ttl_ms, .. } => Request::Extend {
            id: new_id,
            key,
            value,
            ttl_ms,
        },
        Request::Release { key, value, .. } => Request::Release { id: new_id, key, value },
        Request::Read { key, fencing_token, .. } => Request::Read {
            id: new_id,
            key,
            fencing_token,
        },
        Request::Write {
            key,
            value,
            fencing_token,
            ..
        } => Request::Write {
            id: new_id,
            key,
            value,
            fencing_token,
        },
        Request::Quit => Request::Quit,
    }
}
