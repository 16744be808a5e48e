//! lockstep live adapter in Rust: lockstep's built-in algorithms over real TCP, so the same
//! algorithm can be run live and simulated and the verdicts compared.
//!
//! ```sh
//! cargo build --release --bin lockstep-live-adapter
//! lockstep live scenarios/live/redlock-clock-jump.toml --client target/release/lockstep-live-adapter
//! ```
//!
//! The algorithm comes from `LOCKSTEP_ALGORITHM` (the scenario's `[lock] algorithm`): `naive`
//! (SET NX PX, release by DEL), `token-release` and `watchdog` (SET NX PX, release and extension
//! by lockstep's compare-and-delete / compare-and-PEXPIRE Lua scripts; live, lockstep does not
//! drive the watchdog's extensions), `redlock` (the same rounds, quorum, validity and drift rule,
//! unlock-on-failure and retries as `lockstep::lock::redlock`, with the scenario's retry settings).
//! `LOCKSTEP_FENCING=incr` takes a token with INCR on the fencing master after each grant, as
//! `lockstep::lock::fencing` does. Each master is one redis-rs multiplexed connection with the
//! scenario's request timeout, re-opened after any error (a timed-out request's outcome is
//! unknown), like the simulation's links. Speaks the JSON-lines protocol of `docs/live.md`.

use lockstep::lock::{EXTEND_SCRIPT, RELEASE_SCRIPT};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use redis::aio::MultiplexedConnection;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

/// Why a request did not succeed.
enum Failure {
    /// Certainly not applied.
    Fail(String),
    /// Maybe applied.
    Unknown(String),
}

/// A reconnecting connection to one server.
struct Link {
    url: String,
    conn: RefCell<Option<MultiplexedConnection>>,
    connect_timeout: Duration,
    request_timeout: Duration,
}

impl Link {
    fn new(addr: &str, connect_timeout: Duration, request_timeout: Duration) -> Self {
        Link {
            url: format!("redis://{addr}/"),
            conn: RefCell::new(None),
            connect_timeout,
            request_timeout,
        }
    }

    async fn connection(&self) -> Result<MultiplexedConnection, Failure> {
        if let Some(c) = self.conn.borrow().clone() {
            return Ok(c);
        }
        let client = redis::Client::open(self.url.as_str()).map_err(|e| Failure::Fail(e.to_string()))?;
        // redis-rs' own timeouts off (its default response timeout is 500 ms): this link times
        // each request itself, with the scenario's timeout.
        let config = redis::AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        let conn = tokio::time::timeout(
            self.connect_timeout,
            client.get_multiplexed_async_connection_with_config(&config),
        )
        .await
        .map_err(|_| Failure::Fail("connect timed out".into()))?
        .map_err(|e| Failure::Fail(format!("connect: {e}")))?;
        *self.conn.borrow_mut() = Some(conn.clone());
        Ok(conn)
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, Failure> {
        let mut conn = self.connection().await?;
        match tokio::time::timeout(self.request_timeout, cmd.query_async::<T>(&mut conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e))
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    || e.code().is_some() =>
            {
                Err(Failure::Fail(e.to_string()))
            }
            Ok(Err(e)) => {
                *self.conn.borrow_mut() = None;
                Err(Failure::Unknown(e.to_string()))
            }
            Err(_) => {
                *self.conn.borrow_mut() = None;
                Err(Failure::Unknown("request timed out".into()))
            }
        }
    }
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Adapter {
    algorithm: String,
    masters: Vec<Link>,
    resource: Link,
    fencing_master: usize,
    fencing: bool,
    retry_count: i64,
    retry_delay_ms: u64,
    retry_jitter_ms: u64,
    drift_factor: f64,
    rng: RefCell<ChaCha8Rng>,
}

fn set_nx(key: &str, value: &str, ttl_ms: u64) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(value).arg("NX").arg("PX").arg(ttl_ms);
    cmd
}

fn script(body: &str, key: &str, value: &str, ttl_ms: Option<u64>) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(body).arg(1).arg(key).arg(value);
    if let Some(ttl) = ttl_ms {
        cmd.arg(ttl);
    }
    cmd
}

fn failure(f: Failure) -> Value {
    match f {
        Failure::Fail(e) => json!({"status": "fail", "error": e}),
        Failure::Unknown(e) => json!({"status": "unknown", "error": e}),
    }
}

impl Adapter {
    fn random_value(&self) -> String {
        let mut bytes = [0u8; 20];
        self.rng.borrow_mut().fill_bytes(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn quorum(&self) -> usize {
        self.masters.len() / 2 + 1
    }

    fn validity_ms(&self, ttl_ms: u64, elapsed_ms: i64) -> i64 {
        let drift_ms = (ttl_ms as f64 * self.drift_factor).floor() as i64 + 2;
        ttl_ms as i64 - elapsed_ms - drift_ms
    }

    async fn grant_single(&self, key: &str, ttl_ms: u64) -> Value {
        let value = self.random_value();
        let start = Instant::now();
        match self.masters[0]
            .query::<Option<String>>(&set_nx(key, &value, ttl_ms))
            .await
        {
            Ok(Some(_)) => {
                let validity = ttl_ms as i64 - start.elapsed().as_millis() as i64;
                json!({"status": "ok", "value": value, "validity_ms": validity.max(0)})
            }
            Ok(None) => json!({"status": "busy"}),
            Err(f) => failure(f),
        }
    }

    async fn unlock_all(&self, key: &str, value: &str) -> (usize, bool) {
        let cmd = script(RELEASE_SCRIPT, key, value, None);
        let replies = futures_util::future::join_all(self.masters.iter().map(|m| m.query::<i64>(&cmd))).await;
        let released = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        let unknown = replies.iter().any(|r| matches!(r, Err(Failure::Unknown(_))));
        (released, unknown)
    }

    async fn grant_redlock(&self, key: &str, ttl_ms: u64) -> Value {
        let mut attempt: i64 = 0;
        loop {
            let value = self.random_value();
            let start = Instant::now();
            let cmd = set_nx(key, &value, ttl_ms);
            let replies =
                futures_util::future::join_all(self.masters.iter().map(|m| m.query::<Option<String>>(&cmd))).await;
            let successes = replies.iter().filter(|r| matches!(r, Ok(Some(_)))).count();
            let unknown = replies.iter().filter(|r| matches!(r, Err(Failure::Unknown(_)))).count();
            let validity = self.validity_ms(ttl_ms, start.elapsed().as_millis() as i64);
            if successes >= self.quorum() && validity > 0 {
                return json!({"status": "ok", "value": value, "validity_ms": validity});
            }
            let (_, unlock_unknown) = self.unlock_all(key, &value).await;
            if !(self.retry_count < 0 || attempt < self.retry_count) {
                let n = self.masters.len();
                return if unknown > 0 && unlock_unknown {
                    json!({"status": "unknown", "error": format!("{successes} of {n} masters locked, {unknown} unknown")})
                } else if successes == 0 && unknown == 0 {
                    json!({"status": "busy"})
                } else {
                    json!({"status": "fail", "error": format!("{successes} of {n} masters locked (quorum {}), validity {validity} ms", self.quorum())})
                };
            }
            attempt += 1;
            let jitter = if self.retry_jitter_ms == 0 {
                0
            } else {
                self.rng.borrow_mut().random_range(0..self.retry_jitter_ms)
            };
            tokio::time::sleep(Duration::from_millis(self.retry_delay_ms + jitter)).await;
        }
    }

    async fn acquire(&self, key: &str, ttl_ms: u64) -> Value {
        let mut answer = if self.algorithm == "redlock" {
            self.grant_redlock(key, ttl_ms).await
        } else {
            self.grant_single(key, ttl_ms).await
        };
        if self.fencing && answer["status"] == "ok" {
            let mut incr = redis::cmd("INCR");
            incr.arg(format!("lockstep:fence:{key}"));
            match self.masters[self.fencing_master].query::<u64>(&incr).await {
                Ok(token) => answer["fencing_token"] = json!(token),
                Err(f) => {
                    let value = answer["value"].as_str().unwrap_or_default().to_string();
                    self.release(key, &value).await;
                    let reason = match f {
                        Failure::Fail(e) | Failure::Unknown(e) => e,
                    };
                    return json!({"status": "fail", "error": format!("no fencing token: {reason}")});
                }
            }
        }
        answer
    }

    async fn extend(&self, key: &str, value: &str, ttl_ms: u64) -> Value {
        let cmd = script(EXTEND_SCRIPT, key, value, Some(ttl_ms));
        let start = Instant::now();
        let masters: &[Link] = if self.algorithm == "redlock" {
            &self.masters
        } else {
            &self.masters[..1]
        };
        let replies = futures_util::future::join_all(masters.iter().map(|m| m.query::<i64>(&cmd))).await;
        let successes = replies.iter().filter(|r| matches!(r, Ok(1))).count();
        let need = if self.algorithm == "redlock" { self.quorum() } else { 1 };
        let validity = self.validity_ms(ttl_ms, start.elapsed().as_millis() as i64);
        if successes >= need && validity > 0 {
            json!({"status": "ok", "value": value, "validity_ms": validity})
        } else {
            json!({"status": "lost", "error": format!("extension confirmed by {successes} of {}", masters.len())})
        }
    }

    async fn release(&self, key: &str, value: &str) -> Value {
        match self.algorithm.as_str() {
            "redlock" => {
                let (released, _) = self.unlock_all(key, value).await;
                json!({"status": "ok", "released": released > 0})
            }
            "naive" => match self.masters[0].query::<i64>(redis::cmd("DEL").arg(key)).await {
                Ok(n) => json!({"status": "ok", "released": n > 0}),
                Err(f) => failure(f),
            },
            _ => match self.masters[0]
                .query::<i64>(&script(RELEASE_SCRIPT, key, value, None))
                .await
            {
                Ok(n) => json!({"status": "ok", "released": n > 0}),
                Err(f) => failure(f),
            },
        }
    }

    async fn read(&self, key: &str, token: Option<u64>) -> Value {
        let mut cmd = redis::cmd("FREAD");
        cmd.arg(key);
        if let Some(t) = token {
            cmd.arg(t);
        }
        match self.resource.query::<(Option<i64>, u64)>(&cmd).await {
            Ok((value, version)) => json!({"status": "ok", "value": value, "version": version}),
            Err(Failure::Fail(e)) if e.contains("FENCED") => json!({"status": "rejected", "error": e}),
            Err(f) => failure(f),
        }
    }

    async fn write(&self, key: &str, value: i64, token: Option<u64>) -> Value {
        let mut cmd = redis::cmd("FWRITE");
        cmd.arg(key).arg(value);
        if let Some(t) = token {
            cmd.arg(t);
        }
        match self.resource.query::<u64>(&cmd).await {
            Ok(version) => json!({"status": "ok", "version": version}),
            Err(Failure::Fail(e)) if e.contains("FENCED") => json!({"status": "rejected", "error": e}),
            Err(f) => failure(f),
        }
    }

    async fn handle(&self, req: &Value) -> Value {
        let s = |k: &str| req[k].as_str().unwrap_or_default().to_string();
        let n = |k: &str| req[k].as_u64().unwrap_or_default();
        let token = req["fencing_token"].as_u64();
        match req["op"].as_str().unwrap_or_default() {
            "acquire" => self.acquire(&s("key"), n("ttl_ms")).await,
            "extend" => self.extend(&s("key"), &s("value"), n("ttl_ms")).await,
            "release" => self.release(&s("key"), &s("value")).await,
            "read" => self.read(&s("key"), token).await,
            "write" => {
                self.write(&s("key"), req["value"].as_i64().unwrap_or_default(), token)
                    .await
            }
            other => json!({"status": "fail", "error": format!("unknown op {other:?}")}),
        }
    }
}

fn main() {
    let request_timeout = Duration::from_millis(env_num("LOCKSTEP_REQUEST_TIMEOUT_MS", 1000u64).max(1));
    let connect_timeout = Duration::from_millis(env_num("LOCKSTEP_CONNECT_TIMEOUT_MS", 1000u64).max(1));
    let resource_timeout = Duration::from_millis(env_num("LOCKSTEP_RESOURCE_TIMEOUT_MS", 1000u64).max(1));
    let adapter = Adapter {
        algorithm: env("LOCKSTEP_ALGORITHM", "token-release"),
        masters: env("LOCKSTEP_MASTERS", "")
            .split(',')
            .map(|a| Link::new(a, connect_timeout, request_timeout))
            .collect(),
        resource: Link::new(&env("LOCKSTEP_RESOURCE", ""), connect_timeout, resource_timeout),
        fencing_master: env_num("LOCKSTEP_FENCING_MASTER", 0usize),
        fencing: env("LOCKSTEP_FENCING", "none") == "incr",
        retry_count: env_num("LOCKSTEP_RETRY_COUNT", 10i64),
        retry_delay_ms: env_num("LOCKSTEP_RETRY_DELAY_MS", 200u64),
        retry_jitter_ms: env_num("LOCKSTEP_RETRY_JITTER_MS", 100u64),
        drift_factor: env_num("LOCKSTEP_DRIFT_FACTOR", 0.01f64),
        rng: RefCell::new(ChaCha8Rng::seed_from_u64(env_num("LOCKSTEP_SEED", 0u64))),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lockstep-live-adapter: cannot build a runtime: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout();
    let hello = json!({"hello": format!("lockstep built-in {} over redis-rs (Rust adapter)", adapter.algorithm)});
    let _ = writeln!(out, "{hello}");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let req: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("lockstep-live-adapter: not a request: {e}");
                break;
            }
        };
        if req["op"] == "quit" {
            break;
        }
        let mut answer = runtime.block_on(adapter.handle(&req));
        answer["id"] = req["id"].clone();
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
}
