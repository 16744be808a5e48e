//! A redis-rs lock as a service under turmoil would write it, shared by the example and the
//! tests: `SET key token NX PX ttl` to take it, a token-checked Lua delete to give it up, each
//! logged through lockstep's [`OpRecorder`] so that the recorded history can be judged.

use lockstep_turmoil::{Grant, OpRecorder};

/// Deletes the key only while it still holds the caller's token (written for lockstep's examples).
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// One attempt at the lock `key` with `token` on the Redis host `redis`, logged as an `acquire`:
/// the grant, or `None` when the lock is held or Redis could not be reached.
#[allow(dead_code)]
pub async fn try_acquire(rec: &OpRecorder, key: &str, ttl_ms: u64, token: &str) -> Option<Grant> {
    try_acquire_on("redis", rec, key, ttl_ms, token).await
}

/// [`try_acquire`] on the Redis host `host`.
pub async fn try_acquire_on(host: &str, rec: &OpRecorder, key: &str, ttl_ms: u64, token: &str) -> Option<Grant> {
    let id = rec.acquire(key, ttl_ms);
    // The validity counts from before the request (the key may be set as soon as it is sent).
    let sent_ms = rec.monotonic_ms();
    let mut conn = match lockstep_turmoil::connect(host).await {
        Ok(conn) => conn,
        Err(e) => {
            rec.failed(id, "acquire", &e.to_string(), false);
            return None;
        }
    };
    let set: redis::RedisResult<Option<String>> = redis::cmd("SET")
        .arg(key)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query_async(&mut conn)
        .await;
    match set {
        Ok(Some(_)) => {
            let grant = Grant {
                key: key.to_string(),
                value: token.to_string(),
                fencing_token: None,
                validity_ms: ttl_ms,
                validity_from_ms: Some(sent_ms),
            };
            rec.acquired(id, &grant);
            Some(grant)
        }
        Ok(None) => {
            rec.failed(id, "acquire", "held by another client", false);
            None
        }
        Err(e) => {
            rec.failed(id, "acquire", &e.to_string(), true);
            None
        }
    }
}

/// The token-checked release on the Redis host `redis`, logged as a `release`: whether Redis
/// still held the token (`None` when Redis could not be reached).
#[allow(dead_code)]
pub async fn release(rec: &OpRecorder, grant: &Grant) -> Option<bool> {
    release_on("redis", rec, grant).await
}

/// [`release`] on the Redis host `host`.
pub async fn release_on(host: &str, rec: &OpRecorder, grant: &Grant) -> Option<bool> {
    let id = rec.release(grant);
    let result: redis::RedisResult<i64> = async {
        let mut conn = lockstep_turmoil::connect(host).await?;
        redis::Script::new(RELEASE)
            .key(&grant.key)
            .arg(&grant.value)
            .invoke_async(&mut conn)
            .await
    }
    .await;
    match result {
        Ok(deleted) => {
            rec.released(id, deleted == 1);
            Some(deleted == 1)
        }
        Err(e) => {
            rec.failed(id, "release", &e.to_string(), true);
            None
        }
    }
}
