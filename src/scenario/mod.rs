//! The scenario front end: one TOML file per scenario describes a whole run — the world (seed,
//! network, masters, clients, resource), the lock under test, the workload, the fault schedule
//! and the verdicts the checkers are expected to reach. This module turns such a file into the
//! plain data of [`crate::model`] (re-exported here) and writes that data back as TOML; it is
//! the only place that reads or writes scenario TOML.
//!
//! [`Scenario::from_file`] / [`Scenario::from_str`] parse and validate a file, resolving every
//! default; [`load_dir`] loads every `*.toml` of a directory; [`Scenario::to_toml`] writes a
//! scenario back as an explicit file. Every error — syntax, an unknown or mistyped field, a value
//! out of range, a name that does not resolve — is a [`ScenarioError`] naming the file, the line
//! and column of the offending key (or value), and the dotted field, e.g.
//!
//! ```text
//! scenarios/gc-pause.toml:14:1: field `lock.ttl_ms`: must be greater than 0
//! scenarios/gc-pause.toml:31:1: field `fault[1].node`: unknown node `client-9` (nodes: redis-1, resource, client-1, client-2)
//! ```
//!
//! Array-of-tables entries are numbered from 0 in field names: `fault[0]` is the first
//! `[[fault]]`.
//!
//! # Format reference
//!
//! A file is at most 1 MiB, and must be a regular file. Unknown keys are errors everywhere. Durations are whole milliseconds of *true* (simulated)
//! time unless said otherwise.
//!
//! What one file may ask for is bounded, so that a run's memory is too: at most 1,000 clients,
//! and 1,000 Redis servers (masters and replicas), `[[client]]` and `[[topology.master]]` tables
//! counted as `clients = N` and `masters = N` are; at most 10,000 client tasks × masters (every
//! client's tasks, each talking to every master); node names of at most 255 bytes; Redis keys
//! (`lock.key`, `workload.key`, a script lock's `wait_key` and script `keys`) of at most 4 KiB;
//! a script-lock step sends at most 64 KiB besides its script, in at most 1,024 words; scripts of
//! at most 64 KiB each and 1 MiB in all; at most 64 steps per operation. A run stops at its
//! history caps (`history_events_max`, `history_bytes_max`), and each simulated Redis server
//! refuses writes past 64 MiB as Redis does at `maxmemory` (see `docs/redis-differences.md`).
//!
//! ## Top level
//!
//! | key           | type    | default | meaning |
//! |---------------|---------|---------|---------|
//! | `name`        | string  | required | `[a-z0-9-]+`; the scenario's name in reports |
//! | `description` | string  | required | what the scenario shows (not blank) |
//! | `seed`        | integer | `0`     | the one seed of the run; a decimal string (`"18446744073709551615"`) is accepted for seeds above 2^63 − 1 |
//! | `duration_ms` | integer | `60000` | when the run stops if the clients have not finished; 1 ≤ value ≤ 86400000 (one day) |
//! | `tick_ms`     | integer | `1`     | the scheduler's step; 1 ≤ value ≤ 60000 and ≤ `duration_ms` |
//! | `history_events_max` | integer | `1000000` | the most events a run may record; 1 ≤ value ≤ 10000000. A run that would record more stops there with an error naming the file and the cap (exit 2 for `lockstep run`, the scenario's error under `ci`, the seed's error under `explore`): a long run whose clients retry every millisecond otherwise grows without bound. An event takes about 1 KB of memory: a million, about 1 GB. The largest shipped scenario records about 1,300 |
//! | `history_bytes_max` | integer | `268435456` | the most bytes of text a run's events may carry (node names, keys, values, command arguments, replies, error texts), 256 MiB; 1 ≤ value ≤ 8589934592 (8 GiB). A run whose events would carry more stops there with an error as `history_events_max` does: a run that sends large values on every attempt otherwise fills memory long before a million events. Replies and error texts longer than 4 KiB and arguments longer than 64 KiB are cut in the history (`… (N bytes)`). The largest shipped scenario's whole history is under 300 KB of JSON |
//! | `compare_with` | string | none    | another scenario's name: reports show both runs' timelines side by side |
//!
//! ## `[network]` (optional)
//!
//! | key              | type    | default | meaning |
//! |------------------|---------|---------|---------|
//! | `min_latency_ms` | integer | `1`     | smallest one-way message delay |
//! | `max_latency_ms` | integer | `5`     | largest one-way message delay; ≥ `min_latency_ms` |
//!
//! ## `[topology]` (optional)
//!
//! | key        | type    | default      | meaning |
//! |------------|---------|--------------|---------|
//! | `masters`  | integer | `1`          | N Redis masters named `redis-1` … `redis-N` with exact clocks; 1 ≤ N ≤ 1000, replicas included |
//! | `clients`  | integer | `2`          | N clients named `client-1` … `client-N`; 1 ≤ N ≤ 1000; ignored when `[[client]]` tables exist |
//! | `resource` | string  | `"unfenced"` | how the resource judges fencing tokens: `unfenced`, `fenced` (rejects lower tokens) or `strict` (rejects lower and equal tokens) |
//!
//! Instead of `masters = N` the masters may be listed, one `[[topology.master]]` table each (not
//! both; at most 1,000 tables, replicas included):
//!
//! | key         | type    | default  | meaning |
//! |-------------|---------|----------|---------|
//! | `name`      | string  | required | unique node name |
//! | `offset_ms` | integer | `0`      | wall-clock offset from true time (may be negative); at most 3155760000000 (100 years) either way |
//! | `drift_ppm` | integer | `0`      | clock rate error in parts per million; > −1000000 and ≤ 1000000000 |
//!
//! ### Deployment keys
//!
//! How each master is deployed (see [`lockstep_sim::deployment`]). Written on `[topology]` they
//! are the defaults of every master (also with `masters = N`); written on a
//! `[[topology.master]]` they override the default for that master.
//!
//! | key                   | type    | default       | meaning |
//! |-----------------------|---------|---------------|---------|
//! | `persistence`         | string  | `"none"`      | `none` (a stopped master comes back empty), `aof-everysec` (a power loss loses the writes since the last fsync, once a second), `aof-always` (nothing acknowledged is lost) |
//! | `restart_delay_ms`    | integer | `0`           | after a stop, a `restart` keeps the server down until this long after the stop |
//! | `restart_delay_clock` | string  | `"monotonic"` | the clock that times the delay, on the server itself: `monotonic` or `wall` (a wall-clock jump cuts it short) |
//! | `replicas`            | integer | `0`           | replicas named `<master>-replica-1` …; ≤ 16; masters and replicas together ≤ 1000 |
//! | `replica_offset_ms`   | integer | `0`           | the replicas' wall-clock offset (keys expire by each replica's own clock), at most 100 years either way as `offset_ms`; needs `replicas` |
//! | `replication_lag_ms`  | integer | `0`           | delay before a write applies on the replicas; needs `replicas` |
//! | `failover_after_ms`   | integer | none          | a Sentinel promotes a replica once the master has been unreachable (down or paused) this long; ≥ 1; needs `replicas` |
//!
//! "Needs `replicas`": written on a `[[topology.master]]`, that master must have replicas;
//! written on `[topology]`, at least one master must.
//!
//! Clients name a master by its (group) name and always reach the group's current master, as
//! Sentinel-aware clients do. Replicas share their master's persistence and restart settings.
//!
//! The resource node is always named `resource`. Node names are made of `A-Z a-z 0-9 - _ .`,
//! at most 255 bytes, and `resource`, `net` and `world` are reserved.
//!
//! ## `[lock]` (required)
//!
//! | key                      | type    | default        | meaning |
//! |--------------------------|---------|----------------|---------|
//! | `algorithm`              | string  | required       | `naive`, `token-release`, `watchdog`, `redlock` or `script` (see [The script lock](#the-script-lock)) |
//! | `key`                    | string  | `"lock"`       | the Redis key of the lock (not empty; at most 4096 bytes) |
//! | `ttl_ms`                 | integer | `10000`        | the lock's time to live; 1 ≤ value ≤ 86400000 (one day) |
//! | `fencing`                | string  | `"none"`       | `none`, or `incr`: take a fencing token with `INCR` on `fencing_master` |
//! | `fencing_master`         | string  | first master   | must name a master |
//! | `request_timeout_ms`     | integer | `50`           | per-request timeout of the client; 1 ≤ value ≤ 86400000 (one day) |
//! | `connect_timeout_ms`     | integer | `100`          | connection timeout of the client; 1 ≤ value ≤ 86400000 |
//! | `retry_count`            | integer | `10`           | redlock: acquisition attempts; `-1` = unlimited; ≥ −1 |
//! | `retry_delay_ms`         | integer | `200`          | redlock: delay between attempts; ≤ 86400000 |
//! | `retry_jitter_ms`        | integer | `100`          | redlock: random extra delay, up to this; ≤ 86400000 |
//! | `drift_factor`           | float   | `0.01`         | redlock: clock drift allowance, in [0, 1) |
//! | `clock`                  | string  | `"monotonic"`  | how the client times itself: `monotonic` or `wall` |
//! | `extend_every_ms`        | integer | `ttl_ms / 3`   | watchdog: extension period; when written, 0 < value < `ttl_ms` |
//! | `auto_extend`            | bool    | `false`        | redlock: extend automatically while the work runs (node-redlock's `using()`) |
//! | `extension_threshold_ms` | integer | `500`          | redlock auto-extension: extend when validity left < this; < `ttl_ms` when `auto_extend` |
//! | `rust_lock`              | string  | none           | written by `lockstep::harness` into counterexamples of a Rust lock: the lock's name (`[a-z0-9-]+`, not a built-in's); only a harness with that lock replays the file, `lockstep run` refuses it |
//! | `rust_tokens`            | string  | none           | written with `rust_lock`: the Rust lock issues its own fencing tokens, from a `counter` on `fencing_master` or a `durable` source (what the assumptions need: which faults make tokens repeat) |
//! | `rust_drift_factor`      | float   | none           | written with `rust_lock`: the drift factor the Rust lock's validity allows for, in [0, 1) (the assumptions use it in place of the algorithm's) |
//!
//! ## The script lock
//!
//! `algorithm = "script"` describes the lock in the file itself (see `docs/script-lock.md` for
//! the bug-class scenarios built with it). Its keys of `[lock]`, besides `key`, `ttl_ms`,
//! `fencing`, `fencing_master` and the timeouts (the redlock keys `retry_count`,
//! `retry_delay_ms`, `retry_jitter_ms`, `drift_factor`, `clock`, `extend_every_ms` and
//! `extension_threshold_ms` are read too, with the defaults below); they are errors under any
//! other algorithm:
//!
//! | key                   | default           | meaning |
//! |-----------------------|-------------------|---------|
//! | `masters`             | `1`               | use the first N masters of the topology (≤ the topology's masters) |
//! | `quorum`              | `masters / 2 + 1` | successes needed; 1 ≤ quorum ≤ `masters` |
//! | `value`               | `"random"`        | `random` (fresh per acquisition) or `per-client` (the client's name, every time) |
//! | `value_storage`       | `"grant"`         | `grant`, or `lock-object`: extension and release use the object's latest value |
//! | `validity`            | `"ttl-minus-drift"` | `none` (the grant claims the whole TTL) or `ttl-minus-drift` |
//! | `drift_factor`        | `0.01`            | drift = ttl × factor + 2 ms |
//! | `clock`               | `"monotonic"`     | the clock elapsed time is read from: `monotonic` or `wall` |
//! | `validity_recheck`    | `true`            | refuse a quorum whose validity is not positive (sets both re-checks below) |
//! | `acquire_recheck`     | `validity_recheck` | the acquisition's re-check alone (must agree with a written `validity_recheck`) |
//! | `extend_recheck`      | `validity_recheck` | the extension's re-check alone |
//! | `validity_from`       | `"this-attempt"`  | where a retried acquisition counts elapsed time from: `this-attempt` or `first-attempt` |
//! | `validity_arithmetic` | `"signed"`        | `signed` or `wrapping` (unsigned: a negative validity wraps to a huge one) |
//! | `retry_count`         | `0`               | retries of a failed acquisition inside one acquire; −1 forever |
//! | `retry_delay_ms`      | `200`             | delay between attempts |
//! | `retry_jitter_ms`     | `0`               | random extra delay below this |
//! | `renew`               | `"none"`          | `none`, `every` (period `extend_every_ms`, default ttl/3) or `before-expiry` (`extension_threshold_ms`, default 500) |
//! | `on_renew_failure`    | `"abort"`         | `abort` (raise the abort signal: the write is skipped), `keep-working` (renewal stops) or `keep-schedule` (renew on schedule, tell nobody) |
//! | `renewal_after_release` | `"cancelled"`   | a renewal armed at the release: `cancelled`, `runs-quietly` or `runs-and-reports` (its failure reported as a lost lock); needs `renew` |
//! | `renew_grants`        | `"all"`           | which grants the renewal is armed for: `all`, or `first-attempt` (a grant taken by a retry of the acquire call is never renewed); needs `renew` |
//! | `unlock_on_failure`   | `true`            | after a failed attempt, release where the acquire took or may have taken effect |
//! | `tasks`               | `1`               | concurrent tasks per client running the workload loop; 1..=16 |
//! | `share_lock_object`   | `true`            | with `tasks` > 1: all tasks use one lock object (else one each); refused beside `workload.tasks` or `[[client]] tasks`, whose sharing `workload.share_lock_object` sets |
//! | `wait`                | `"sleep"`         | between attempts: `sleep`, `blpop` (BLPOP `wait_key` on the first master: a push wakes the waiter) or `subscribe` (SUBSCRIBE `wait_key`: a message wakes it); at most `retry_delay_ms` + jitter |
//! | `wait_key`            | `"{key}:signal"` / `"{key}:channel"` | the list or channel waited on, a template (acquire placeholders) |
//!
//! `[lock.acquire]`, `[lock.extend]` and `[lock.release]` (each optional; the defaults are
//! `SET {key} {value} NX PX {ttl_ms}`, a compare-and-PEXPIRE script and a compare-and-delete
//! script) hold one step — exactly one of `command` (a template list), `lua` (inline source) or
//! `lua_file` (a path relative to the scenario file, no `..`, not absolute), with `keys` and
//! `args` for scripts (defaults `["{key}"]` and `["{value}", "{ttl_ms}"]`, release
//! `["{value}"]`) and `success` — or `steps = [{ ... }, ...]`, run in order, each one round
//! trip. `success` is `ok`, `non-nil`, `nil`, `one`, `positive`, `any` or `value` (a string
//! equal to the lock value); by default `ok` for an acquire command, `positive` for other
//! commands and `one` for scripts. `retries` and `retry_delay_ms` (default 0 and 100) retry the
//! whole operation after an unknown outcome. Placeholders: `{key}`, `{value}`, `{ttl_ms}`
//! (not in release), `{token}` (the fencing token; not in acquire), `{client}`, `{now_ms}` (the
//! client's wall clock as the step is sent, ms since the epoch); `{{` and `}}` are literal braces. Scripts are compiled at load time with the simulated Redis's Lua: a
//! syntax error names the file and line (the scenario file's line for an inline script).
//!
//! Every attempt sends a step whole, so steps are bounded: a script (inline, or the regular file
//! `lua_file` names, read as scenario files are) has at most 64 KiB, and a file's scripts at most
//! 1 MiB in all; a step's command words, or its script's `keys` and `args`, are at most 1,024
//! and send at most 64 KiB with every placeholder at its longest (`{key}` the lock key, `{value}`
//! and `{client}` 255 bytes, `{ttl_ms}`, `{token}` and `{now_ms}` 20); each script key and `wait_key` at most
//! 4 KiB so; an operation has at most 64 `steps`.
//!
//! ```toml
//! [lock]
//! algorithm = "script"
//! ttl_ms = 10000
//!
//! [lock.release]
//! steps = [
//!   { command = ["GET", "{key}"], success = "value" },
//!   { command = ["DEL", "{key}"], success = "positive" },
//! ]
//! ```
//!
//! ## `[workload]` (optional)
//!
//! Each client loops: acquire the lock (retrying), read the counter from the resource, work,
//! write it back incremented, release, think. The settings after `resource_timeout_ms` make the
//! workload use its grant; their defaults are the loop above (see `lockstep list`).
//!
//! | key                | type             | default | meaning |
//! |--------------------|------------------|---------|---------|
//! | `key`              | string           | `"counter"` | the resource key (not empty; at most 4096 bytes) |
//! | `iterations`       | integer          | unlimited if `until_ms` is set, else `1` | iterations per client |
//! | `until_ms`         | integer          | none    | stop starting new iterations after this true time |
//! | `work_ms`          | integer or pair  | `100`   | work inside the critical section: fixed, or `[min, max]` drawn uniformly (min ≤ max); not with `work = "until-validity"` |
//! | `acquire_retry_ms` | integer          | `100`   | delay between failed acquire attempts; ≥ 1 |
//! | `think_ms`         | integer          | `0`     | pause between iterations |
//! | `resource_timeout_ms` | integer       | `lock.request_timeout_ms` | per-request timeout of the client's connection to the resource (a long one lets a delayed write arrive late); ≥ 1 |
//! | `work`             | string           | `"fixed"` | `fixed` (`work_ms`) or `until-validity`: work until the grant's validity runs out less `validity_margin_ms`, by the holder's monotonic clock |
//! | `validity_margin_ms` | integer        | `0`     | with `until-validity` only; < `lock.ttl_ms` |
//! | `refuse_write_after_validity` | bool  | `false` | before each write the holder checks its own clock; once its validity (the latest renewal's) has run out it refuses the write itself — a `write` that fails "refused by the holder" — and writes no more that turn |
//! | `reads_per_turn`   | integer          | `1`     | reads of the counter at the start of a turn (the last one counts); 1..=100 |
//! | `writes_per_turn`  | integer          | `1`     | writes at the end of a turn, back to back: the value read plus 1, plus 2, …, each with the grant's fencing token; 0..=100 |
//! | `tasks`            | integer          | the lock's (`1`; the script lock's `tasks`) | concurrent tasks per client, each running the whole loop, for every algorithm; 1..=16; not with `lock.tasks` |
//! | `share_lock_object` | bool            | `true`  | with several tasks: they all use the client's one lock object (else each builds its own); not with `lock.share_lock_object` |
//!
//! With several tasks per client, every invoke in the history names its task (`"task": n`), and
//! the checkers judge holds per task: two tasks of one client inside the critical section at
//! once is a mutual-exclusion violation (`client-1 task 1 … and client-1 task 2 …`).
//!
//! ## `[[client]]` (optional, repeated)
//!
//! When present, these are the clients (and `topology.clients` is ignored).
//!
//! | key          | type            | default  | meaning |
//! |--------------|-----------------|----------|---------|
//! | `name`       | string          | required | unique; not a master's name nor `resource` |
//! | `start_ms`   | integer         | `0`      | when the client starts, true time |
//! | `offset_ms`  | integer         | `0`      | wall-clock offset; at most 3155760000000 (100 years) either way |
//! | `drift_ppm`  | integer         | `0`      | clock rate error, ppm; > −1000000 and ≤ 1000000000 |
//! | `iterations` | integer         | workload's | override of `workload.iterations` |
//! | `work_ms`    | integer or pair | workload's | override of `workload.work_ms` (not with `work = "until-validity"`) |
//! | `tasks`      | integer         | workload's | override of `workload.tasks` (sharing as `workload.share_lock_object` says); 1..=16; not with `lock.tasks` |
//!
//! ## `[[fault]]` (optional, repeated)
//!
//! Each table is one [`lockstep_sim::ScheduledFault`]: `at_ms` (true time, ≤ `duration_ms`),
//! `kind`, and the kind's own keys:
//!
//! | kind         | keys |
//! |--------------|------|
//! | `pause`      | `node`, `duration_ms` — freeze every task of the node |
//! | `clock-jump` | `node`, `delta_ms` (may be negative; at most 100 years either way) — step the node's wall clock |
//! | `drift`      | `node`, `drift_ppm` (> −1000000, ≤ 1000000000) — set the node's clock rate error |
//! | `partition`  | `a`, `b`, `oneway` (default `false`) — drop messages between two nodes |
//! | `heal`       | `a`, `b`, `oneway` (default `false`) — restore the link |
//! | `hold`       | `a`, `b` — hold every message on the link |
//! | `release`    | `a`, `b` — deliver the held messages, stop holding |
//! | `latency`    | `a`, `b`, `latency_ms` — fix the link's one-way delay; with `max_latency_ms` (≥ `latency_ms`) each message's delay is drawn from `latency_ms..=max_latency_ms` |
//! | `loss`       | `a`, `b`, `rate_ppm` (≤ 1000000) — per-message probability that a message is lost (its connection is then dead, as after a partition) |
//! | `crash`      | `node` — a master or replica: the process dies (memory lost; the AOF survives) |
//! | `power-loss` | `node` — a master or replica: its machine dies (`aof-everysec` also loses the writes since the last fsync) |
//! | `shutdown`   | `node` — a master or replica: clean stop (with AOF nothing is lost) |
//! | `restart`    | `node` — a master or replica: start it (after its `restart_delay_ms`); a running one restarts cleanly |
//! | `failover`   | `node` — a master with replicas, or a replica: promote the group's best replica now |
//!
//! Every node named must exist; a link needs two different nodes.
//!
//! ## `[expect]` (optional)
//!
//! The expected verdict of each checker, `valid`, `invalid` or `unknown`. Keys: the checkers of
//! [`CHECKERS`] (`mutual-exclusion`, `stale-write`, `lost-update`, `token-order`); all optional.
//! And `progress`: a run in which clients wanted the lock and nobody ever got it is a vacuous
//! run (every safety checker trivially holds); it fails unless the file says
//! `progress = "invalid"` (the default expectation is `valid`). `progress` is `valid` or
//! `invalid` only: its verdict is `unknown` only when nobody asked for the lock, which gates
//! nothing.
//!
//! ## `[explore]` (optional)
//!
//! `lockstep ci` explores the scenario over many seeds: the file is the template, its own
//! `[[fault]]`s are replaced by faults generated from each seed (see [`crate::explore`]).
//!
//! | key          | type             | default   | meaning |
//! |--------------|------------------|-----------|---------|
//! | `seeds`      | integer          | `100`     | seeds `0..seeds` are explored; 1 ≤ N ≤ 1000000 |
//! | `kinds`      | array of strings | all       | the fault kinds that may be generated: `pause`, `clock-jump`, `drift`, `partition`, `hold`, `latency`, `loss`, `crash`; not empty, no repeats |
//! | `faults_max` | integer          | `4`       | at most this many generated faults per seed; 1 ≤ N ≤ 64 |
//! | `lock_aware` | bool             | `false`   | aim faults where locks break (pauses around the TTL, clock jumps inside validity windows) |
//! | `strategy`   | string           | `random`  | fault placement: `random`, `anchored` or `mixed` (guided, with coverage feedback: what `lockstep explore` does without a block); shards with `lockstep ci --shard` either way |
//!
//! `[explore.expect]` gives, per checker, what the exploration must find:
//! `"some-invalid"` (at least one seed violates it) or `"none-invalid"` (no seed does). A seed
//! that cannot be judged (the world failed) always fails the gate.
//!
//! ```toml
//! [explore]
//! seeds = 200
//! kinds = ["pause"]
//! lock_aware = true
//!
//! [explore.expect]
//! mutual-exclusion = "some-invalid"
//! stale-write = "none-invalid"
//! ```
//!
//! # Example
//!
//! ```toml
//! name = "kleppmann-gc-pause"
//! description = """
//! A client pauses past its lease; the second client acquires and writes; the first wakes up and
//! writes too, unfenced."""
//! seed = 1
//! duration_ms = 40000
//!
//! [topology]
//! masters = 1
//! clients = 2
//! resource = "unfenced"
//!
//! [lock]
//! algorithm = "token-release"
//! ttl_ms = 10000
//!
//! [workload]
//! iterations = 1
//! work_ms = 1000
//!
//! [[fault]]
//! at_ms = 1000
//! kind = "pause"
//! node = "client-1"
//! duration_ms = 15000
//!
//! [expect]
//! mutual-exclusion = "invalid"
//! ```

mod locate;
pub mod mutants;
mod raw;
mod resolve;
pub use resolve::{name_with_suffix, SCENARIO_NAME_MAX};
mod script_keys;
pub mod standard;
mod workload_keys;
mod write;

pub use crate::model::scenario::{ClientSpec, NetworkSpec, NodeSpec, Scenario, WorkMs, WorkloadSpec, RESOURCE_NODE};
pub use crate::model::{
    Algorithm, AlgorithmSpec, ClockKind, ExploreExpect, ExploreSpec, Fencing, LockSpec, RedlockSpec, WatchdogSpec,
    CHECKERS, DEFAULT_EXPLORE_SEEDS, LIVENESS, MAX_EXPLORE_FAULTS, MAX_EXPLORE_SEEDS,
};
pub use script_keys::{script_lock_help, SCRIPT_LOCK_KEYS, SCRIPT_OP_KEYS};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use workload_keys::{workload_help, WORKLOAD_KEYS};

/// One `[[fault]]` table read by [`fault_tables`]: the fault as a scenario file's is read and
/// checked, and the keys the caller reads itself.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultTable {
    /// Its position among the `[[fault]]` tables (0-based; errors name it `fault[index]`).
    pub index: usize,
    /// The fault and its `at_ms` (0 when the table gave none but some of the caller's keys).
    pub scheduled: lockstep_sim::ScheduledFault,
    /// Whether the table wrote `at_ms`.
    pub at_ms_given: bool,
    /// The caller's keys the table wrote (taken out before the fault was read).
    pub extra: toml::Table,
}

/// Reads the `[[fault]]` tables of `source` (a TOML text with nothing else) exactly as a
/// scenario file's `[[fault]]` tables are read — the same kinds, keys, ranges and error messages
/// (with line, column and the field `fault[i].key`) — checking every node they name against
/// `targets`. `extra_keys` are keys the caller gives its own meaning to (a trigger, say): they
/// are taken out of each table before it is read and handed back in [`FaultTable::extra`]; a
/// table that writes some of them may leave `at_ms` out (it reads as 0). `origin` names the text
/// in errors. For faults applied by something other than lockstep's world (`lockstep-turmoil`).
pub fn fault_tables(
    source: &str,
    origin: &str,
    targets: &dyn lockstep_sim::FaultTargets,
    extra_keys: &[&str],
) -> Result<Vec<FaultTable>, ScenarioError> {
    resolve::fault_tables(source, origin, targets, extra_keys)
}

/// The most clients a file may ask for (`topology.clients`, or `[[client]]` tables), and the
/// most Redis servers (`topology.masters` or `[[topology.master]]` tables, replicas included).
pub(crate) const MAX_GENERATED_NODES: u64 = 1000;

/// The most client tasks times masters a file may ask for (every client's tasks, each a loop
/// with connections to the masters, times the masters): 10,000, some 400 MB of simulation. A
/// thousand clients and a thousand masters would take tens of gigabytes.
pub(crate) const MAX_CLIENT_LINKS: u64 = 10_000;

/// The longest node name, in bytes: every event of the history carries one, and a client's name
/// is its lock value under `value = "per-client"`.
pub(crate) const MAX_NODE_NAME_BYTES: usize = 255;

/// The longest Redis key a file may name (`lock.key`, `workload.key`, a script lock's `wait_key`
/// and script `keys`, placeholders expanded): 4 KiB. Every attempt sends it and the history
/// records it each time.
pub(crate) const MAX_KEY_BYTES: usize = 4096;

/// The most bytes one step of a script lock sends besides its script (a command's words, or a
/// script's `keys` and `args`, placeholders expanded at their longest): 64 KiB.
pub(crate) const MAX_STEP_BYTES: usize = 65_536;

/// The most words in one step of a script lock (a command's, or a script's keys and args).
pub(crate) const MAX_STEP_WORDS: usize = 1024;

/// The most steps in one script-lock operation (`steps = [...]`).
pub(crate) const MAX_STEPS: usize = 64;

/// The longest Lua script (`lua`, or the file `lua_file` names): 64 KiB. Every attempt sends
/// the whole script (EVAL).
pub(crate) const MAX_SCRIPT_BYTES: usize = 65_536;

/// The most bytes of Lua a scenario may hold in all, over every step of every operation (a
/// file may name the same `lua_file` many times): 1 MiB, a scenario file's own limit.
pub(crate) const MAX_SCRIPTS_TOTAL_BYTES: usize = 1 << 20;

/// The largest scenario file read (1 MiB): a file is data, its size must not decide the memory
/// a run takes.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads the regular file at `path`, at most `limit` bytes. Anything else (a directory, a FIFO,
/// a device) is refused without reading it, so nothing can block on it.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read file: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read file: not a regular file".to_string());
    }
    if meta.len() > limit {
        return Err(format!(
            "file is {} bytes, larger than the limit of {limit} bytes",
            meta.len()
        ));
    }
    // Opened without blocking: if the path was swapped for a FIFO since, the open does not wait
    // for a writer, and the check below refuses it.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| format!("cannot read file: {e}"))?;
    if !file.metadata().map_err(|e| format!("cannot read file: {e}"))?.is_file() {
        return Err("cannot read file: not a regular file".to_string());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read file: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!("file is larger than the limit of {limit} bytes"));
    }
    Ok(bytes)
}

/// The text of the scenario file at `path`, read again to position an error found after parsing
/// (empty when it cannot be read as a scenario file: the error then has no position).
fn source_for_positions(path: &Path) -> String {
    read_limited(path, MAX_FILE_BYTES)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

/// Why a scenario file could not be loaded: where (file, line, column, dotted field) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ScenarioError {
    /// The file (or the origin given to [`Scenario::from_str`]).
    pub path: String,
    /// 1-based line of the offending key or value, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending key or value, when known.
    pub column: Option<usize>,
    /// The dotted field, e.g. `lock.ttl_ms` or `fault[2].node`, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ScenarioError {
    /// An error about `field` (dotted, with `[i]` indices: `topology.master[0].replicas`) of the
    /// scenario file at `path`, positioned at its key or its nearest written ancestor (no
    /// position when the file cannot be read). For checks made after parsing (`lockstep live`).
    pub fn at_field(path: &Path, field: &str, message: impl Into<String>) -> Self {
        let shown = path.display().to_string();
        resolve::error_at_path(&source_for_positions(path), &shown, field, message.into())
    }

    /// An error about a whole file (I/O, encoding), with no position.
    pub fn file(path: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            path: path.into(),
            line: None,
            column: None,
            field: None,
            message: message.into(),
        }
    }

    /// `path:line:column: field `f`: message`, leaving out what is unknown.
    fn render(&self) -> String {
        let mut out = self.path.clone();
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(column) = self.column {
                out.push_str(&format!(":{column}"));
            }
        }
        out.push_str(": ");
        if let Some(field) = &self.field {
            out.push_str(&format!("field `{field}`: "));
        }
        out.push_str(&self.message);
        out
    }
}

impl Scenario {
    /// Reads and parses the scenario file at `path` (errors name the path as given).
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let shown = path.display().to_string();
        let bytes = read_limited(path, MAX_FILE_BYTES).map_err(|m| ScenarioError::file(&shown, m))?;
        let source = String::from_utf8(bytes)
            .map_err(|e| ScenarioError::file(&shown, format!("file is not valid UTF-8: {e}")))?;
        Scenario::from_str(&source, &shown)
    }

    /// Parses and validates a scenario from TOML text; `origin` (usually the file name) is the
    /// `path` of any error.
    pub fn from_str(source: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        resolve::parse(source, origin)
    }

    /// [`Scenario::from_file`] for `lockstep live`: its clients are real processes, so `crash`
    /// and `restart` may name a client (a simulation refuses that, naming the field).
    pub fn from_file_live(path: &Path) -> Result<Scenario, ScenarioError> {
        let shown = path.display().to_string();
        let bytes = read_limited(path, MAX_FILE_BYTES).map_err(|m| ScenarioError::file(&shown, m))?;
        let source = String::from_utf8(bytes)
            .map_err(|e| ScenarioError::file(&shown, format!("file is not valid UTF-8: {e}")))?;
        resolve::parse_for(&source, &shown, true)
    }

    /// [`Scenario::from_file_live`] for `lockstep serve`: `[[fault]]` entries with `after_test =
    /// "NAME"` are timed from that test's label (`at_ms` after it) and returned apart, with the
    /// test's name; the rest stay in the plan.
    pub fn from_file_serve(
        path: &Path,
    ) -> Result<(Scenario, Vec<(String, lockstep_sim::ScheduledFault)>), ScenarioError> {
        let shown = path.display().to_string();
        let bytes = read_limited(path, MAX_FILE_BYTES).map_err(|m| ScenarioError::file(&shown, m))?;
        let source = String::from_utf8(bytes)
            .map_err(|e| ScenarioError::file(&shown, format!("file is not valid UTF-8: {e}")))?;
        resolve::parse_for_serve(&source, &shown)
    }

    /// The scenario as an explicit TOML file: masters as `[[topology.master]]`, clients as
    /// `[[client]]`, every fault and expectation written out. It parses back to an equal
    /// scenario.
    pub fn to_toml(&self) -> String {
        write::to_toml(self)
    }
}

/// Loads every `*.toml` file directly in `dir` (not in subdirectories), sorted by path. Fails on
/// the first file that does not load (one that is not a regular file included), or when two
/// files use the same scenario `name`.
pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, Scenario)>, ScenarioError> {
    let shown = dir.display().to_string();
    let entries =
        std::fs::read_dir(dir).map_err(|e| ScenarioError::file(&shown, format!("cannot read directory: {e}")))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ScenarioError::file(&shown, format!("cannot read directory: {e}")))?;
        let path = entry.path();
        // Every `*.toml` that is not a directory: a FIFO, a device or a dangling link is an
        // error naming it (by `from_file`), not a scenario silently left out of the gate.
        if path.extension().is_some_and(|ext| ext == "toml") && !path.is_dir() {
            paths.push(path);
        }
    }
    paths.sort();
    let mut loaded: Vec<(PathBuf, Scenario)> = Vec::with_capacity(paths.len());
    let mut names: BTreeMap<String, PathBuf> = BTreeMap::new();
    for path in paths {
        let scenario = Scenario::from_file(&path)?;
        if let Some(first) = names.get(&scenario.name) {
            let source = source_for_positions(&path);
            let mut err = resolve::error_at_key(
                &source,
                &path.display().to_string(),
                "name",
                format!("scenario name `{}` is also used by {}", scenario.name, first.display()),
            );
            err.field = Some("name".into());
            return Err(err);
        }
        names.insert(scenario.name.clone(), path.clone());
        loaded.push((path, scenario));
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod workload_tests;
