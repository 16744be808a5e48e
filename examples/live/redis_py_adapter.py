#!/usr/bin/env python3
"""lockstep live adapter for redis-py's Lock (redis.lock.Lock), unmodified.

lockstep starts this once per client and speaks JSON lines with it (see docs/live.md):
one request per stdin line, one answer per stdout line. The lock is taken from the first
master in LOCKSTEP_MASTERS; reads and writes of the resource are made from here, so a
SIGSTOP of this process delays them exactly as a GC pause would. Diagnostics go to stderr.

With LOCKSTEP_FENCING=incr the adapter takes a fencing token after each grant with INCR on
lockstep:fence:<key> (redis-py's Lock has no tokens of its own) and sends it with every read
and write, so the resource can reject a stale writer.
"""
import json
import os
import sys
import time

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError, LockNotOwnedError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


def hostport(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def client(addr, timeout_s):
    host, port = hostport(addr)
    # protocol=2: lockstep's Redis engine speaks RESP2 only (redis-py 8 asks for RESP3 by default).
    return redis.Redis(host=host, port=port, protocol=2, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)


TIMEOUT_S = max(int(os.environ.get("LOCKSTEP_REQUEST_TIMEOUT_MS", "1000")), 1) / 1000.0
MASTERS = [client(a, TIMEOUT_S) for a in os.environ["LOCKSTEP_MASTERS"].split(",")]
LOCK_REDIS = MASTERS[0]
FENCE_REDIS = MASTERS[int(os.environ.get("LOCKSTEP_FENCING_MASTER", "0"))]
FENCING = os.environ.get("LOCKSTEP_FENCING", "none") == "incr"
RESOURCE = client(os.environ["LOCKSTEP_RESOURCE"], max(int(os.environ.get("LOCKSTEP_RESOURCE_TIMEOUT_MS", "1000")), 1) / 1000.0)

# Grants held, by value (the lock's token): (Lock, monotonic time of the grant).
HELD = {}


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def acquire(req):
    ttl_s = req["ttl_ms"] / 1000.0
    lock = LOCK_REDIS.lock(req["key"], timeout=ttl_s, blocking=False)
    started = time.monotonic()
    if not lock.acquire(blocking=False):
        return {"status": "busy"}
    value = text(lock.local.token)
    token = None
    if FENCING:
        try:
            token = FENCE_REDIS.incr("lockstep:fence:" + req["key"])
        except (RedisConnectionError, RedisTimeoutError, ResponseError) as e:
            try:
                lock.release()
            except LockError:
                pass
            return {"status": "fail", "error": "no fencing token: %s" % e}
    HELD[value] = (lock, started)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return {"status": "ok", "value": value, "fencing_token": token,
            "validity_ms": max(req["ttl_ms"] - elapsed_ms, 0)}


def extend(req):
    lock, _ = HELD.get(req["value"], (None, None))
    if lock is None:
        return {"status": "lost", "error": "not a grant of this client"}
    try:
        lock.extend(req["ttl_ms"] / 1000.0, replace_ttl=True)
    except LockNotOwnedError as e:
        return {"status": "lost", "error": str(e)}
    return {"status": "ok", "value": req["value"], "validity_ms": req["ttl_ms"]}


def release(req):
    lock, _ = HELD.pop(req["value"], (None, None))
    if lock is None:
        return {"status": "lost", "error": "not a grant of this client"}
    try:
        lock.release()
    except LockNotOwnedError as e:
        return {"status": "lost", "error": str(e)}
    return {"status": "ok", "released": True}


def read(req):
    args = [req["key"]] + ([req["fencing_token"]] if req.get("fencing_token") is not None else [])
    try:
        value, version = RESOURCE.execute_command("FREAD", *args)
    except ResponseError as e:
        if str(e).startswith("FENCED"):
            return {"status": "rejected", "error": str(e)}
        return {"status": "fail", "error": str(e)}
    return {"status": "ok", "value": None if value is None else int(value), "version": int(version)}


def write(req):
    args = [req["key"], req["value"]]
    if req.get("fencing_token") is not None:
        args.append(req["fencing_token"])
    try:
        version = RESOURCE.execute_command("FWRITE", *args)
    except ResponseError as e:
        if str(e).startswith("FENCED"):
            return {"status": "rejected", "error": str(e)}
        return {"status": "fail", "error": str(e)}
    return {"status": "ok", "version": int(version)}


OPS = {"acquire": acquire, "extend": extend, "release": release, "read": read, "write": write}


def main():
    answer({"hello": "redis-py %s redis.lock.Lock" % redis.__version__})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req["op"] == "quit":
            break
        try:
            out = OPS[req["op"]](req)
        except (RedisConnectionError, RedisTimeoutError) as e:
            # The request may have reached the server: outcome unknown.
            out = {"status": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
        except Exception as e:  # noqa: BLE001 - anything else is reported, not fatal
            out = {"status": "fail", "error": "%s: %s" % (type(e).__name__, e)}
        out["id"] = req["id"]
        answer(out)


if __name__ == "__main__":
    main()
