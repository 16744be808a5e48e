//! Resolving `[workload]` (and the per-client workload overrides): defaults, bounds, and the
//! settings that use the grant — the work mode and its margin, the refusal of writes after the
//! validity, reads and writes per turn, and tasks per client (which the script lock may set
//! instead, under `[lock]`, but not both).

use super::super::locate::FieldPath;
use super::super::raw::{RawLock, RawWorkMode, RawWorkload};
use super::super::ScenarioError;
use super::{check_work, Ctx};
use crate::model::{ClientSpec, LockSpec, TasksSpec, WorkMode, WorkloadSpec};

/// The most tasks per client (as the script lock's `tasks`).
pub(super) const MAX_TASKS: u32 = 16;

/// The most reads or writes per turn.
pub(super) const MAX_OPS_PER_TURN: u32 = 100;

/// Which of the script lock's task keys the file wrote under `[lock]`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LockTasks {
    tasks: bool,
    share_lock_object: bool,
}

impl LockTasks {
    /// What `[lock]` wrote.
    pub fn of(raw: Option<&RawLock>) -> Self {
        raw.map_or_else(LockTasks::default, |raw| LockTasks {
            tasks: raw.tasks.is_some(),
            share_lock_object: raw.share_lock_object.is_some(),
        })
    }
}

fn check_tasks(tasks: u32) -> Result<u32, String> {
    if tasks == 0 || tasks > MAX_TASKS {
        Err(format!("{tasks}: must be between 1 and {MAX_TASKS}"))
    } else {
        Ok(tasks)
    }
}

/// The start of the error for `lock.share_lock_object` beside tasks the workload sets.
const SHARE_UNUSED: &str =
    "not used: it applies to the script lock's own tasks (`lock.tasks`), and the tasks here come from";

const BOTH_TASKS: &str = "also set by `lock.tasks` (the script lock's own); write it in one place";

impl Ctx<'_> {
    pub(super) fn workload(
        &self,
        raw: Option<RawWorkload>,
        lock: &LockSpec,
        lock_tasks: LockTasks,
    ) -> Result<WorkloadSpec, ScenarioError> {
        let raw = raw.unwrap_or_default();
        let path = |k: &str| FieldPath::keys(&["workload", k]);
        let key = raw.key.unwrap_or_else(|| "counter".into());
        if key.is_empty() {
            return Err(self.err(&path("key"), "must not be empty"));
        }
        super::check_key_len(&key).map_err(|m| self.err(&path("key"), m))?;
        let work_ms = raw.work_ms.unwrap_or_default();
        check_work(work_ms).map_err(|m| self.err(&path("work_ms"), m))?;
        let iterations = match (raw.iterations, raw.until_ms) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        };
        let acquire_retry_ms = raw.acquire_retry_ms.unwrap_or(100);
        if acquire_retry_ms == 0 {
            // A retry without a delay: attempts that fail without waiting (a refused connection)
            // would repeat with no simulated time passing, a livelock. The clients have always
            // slept at least 1 ms between attempts; refuse 0 rather than silently run it as 1.
            return Err(self.err(
                &path("acquire_retry_ms"),
                "must be at least 1: a retry with no delay would spin without simulated time passing",
            ));
        }
        let resource_timeout_ms = raw.resource_timeout_ms.unwrap_or(lock.request_timeout_ms);
        if resource_timeout_ms == 0 {
            return Err(self.err(&path("resource_timeout_ms"), "must be at least 1"));
        }

        let work = match raw.work.unwrap_or(RawWorkMode::Fixed) {
            RawWorkMode::Fixed => {
                if raw.validity_margin_ms.is_some() {
                    return Err(self.err(&path("validity_margin_ms"), "only used with work = \"until-validity\""));
                }
                WorkMode::Fixed
            }
            RawWorkMode::UntilValidity => {
                if raw.work_ms.is_some() {
                    return Err(self.err(
                        &path("work_ms"),
                        "not used with work = \"until-validity\" (the validity decides how long the work lasts)",
                    ));
                }
                let margin_ms = raw.validity_margin_ms.unwrap_or(0);
                if margin_ms >= lock.ttl_ms {
                    return Err(self.err(
                        &path("validity_margin_ms"),
                        format!("{margin_ms}: must be below lock.ttl_ms ({})", lock.ttl_ms),
                    ));
                }
                WorkMode::UntilValidity { margin_ms }
            }
        };

        let reads_per_turn = raw.reads_per_turn.unwrap_or(1);
        if reads_per_turn == 0 || reads_per_turn > MAX_OPS_PER_TURN {
            return Err(self.err(
                &path("reads_per_turn"),
                format!("{reads_per_turn}: must be between 1 and {MAX_OPS_PER_TURN}"),
            ));
        }
        let writes_per_turn = raw.writes_per_turn.unwrap_or(1);
        if writes_per_turn > MAX_OPS_PER_TURN {
            return Err(self.err(
                &path("writes_per_turn"),
                format!("{writes_per_turn}: must be between 0 and {MAX_OPS_PER_TURN}"),
            ));
        }

        if raw.tasks.is_some() && lock_tasks.tasks {
            return Err(self.err(&path("tasks"), BOTH_TASKS));
        }
        if raw.share_lock_object.is_some() && lock_tasks.share_lock_object {
            return Err(self.err(
                &path("share_lock_object"),
                "also set by `lock.share_lock_object` (the script lock's own); write it in one place",
            ));
        }
        if raw.share_lock_object.is_some() && raw.tasks.is_none() && lock_tasks.tasks {
            return Err(self.err(
                &path("share_lock_object"),
                "the tasks are the script lock's (`lock.tasks`): write `lock.share_lock_object` instead",
            ));
        }
        if raw.tasks.is_some() && lock_tasks.share_lock_object {
            return Err(self.err(
                &FieldPath::keys(&["lock", "share_lock_object"]),
                format!("{SHARE_UNUSED} `workload.tasks`; write `[workload] share_lock_object` instead"),
            ));
        }
        let tasks = match raw.tasks {
            Some(tasks) => Some(TasksSpec {
                tasks: check_tasks(tasks).map_err(|m| self.err(&path("tasks"), m))?,
                share_lock_object: raw.share_lock_object.unwrap_or(true),
            }),
            None => raw.share_lock_object.map(|share_lock_object| TasksSpec {
                tasks: 1,
                share_lock_object,
            }),
        };

        Ok(WorkloadSpec {
            key,
            iterations,
            until_ms: raw.until_ms,
            work_ms,
            acquire_retry_ms,
            think_ms: raw.think_ms.unwrap_or(0),
            resource_timeout_ms,
            work,
            refuse_write_after_validity: raw.refuse_write_after_validity.unwrap_or(false),
            reads_per_turn,
            writes_per_turn,
            tasks,
        })
    }

    /// Checks the workload keys of each `[[client]]` against the workload and the lock.
    pub(super) fn client_overrides(
        &self,
        clients: &[ClientSpec],
        workload: &WorkloadSpec,
        lock_tasks: LockTasks,
    ) -> Result<(), ScenarioError> {
        for (index, client) in clients.iter().enumerate() {
            let base = FieldPath::item("client", index);
            if client.work_ms.is_some() && workload.work != WorkMode::Fixed {
                return Err(self.err(
                    &base.key("work_ms"),
                    "not used with workload.work = \"until-validity\" (the validity decides how long the work lasts)",
                ));
            }
            if let Some(tasks) = client.tasks {
                if lock_tasks.tasks {
                    return Err(self.err(&base.key("tasks"), BOTH_TASKS));
                }
                // The tasks of `[[client]] tasks` share the client's lock object as
                // `[workload] share_lock_object` says (by default they do): the lock's own key
                // would be silently ignored.
                if lock_tasks.share_lock_object {
                    return Err(self.err(
                        &FieldPath::keys(&["lock", "share_lock_object"]),
                        format!(
                            "{SHARE_UNUSED} `client[{index}].tasks` (client {:?}); write `[workload] share_lock_object` \
                             instead",
                            client.name
                        ),
                    ));
                }
                check_tasks(tasks).map_err(|m| self.err(&base.key("tasks"), m))?;
            }
        }
        Ok(())
    }
}
