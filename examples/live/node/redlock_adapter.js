#!/usr/bin/env node
// lockstep live adapter for node-redlock v5 over ioredis, unmodified.
//
// lockstep starts this once per client and speaks JSON lines with it (see docs/live.md): one
// request per stdin line, one answer per stdout line. Redlock runs over every master in
// LOCKSTEP_MASTERS (one master: a single-instance lock). Reads and writes of the resource are made
// from here, so a SIGSTOP of this process delays them as a GC pause would. Diagnostics go to stderr.
//
// Settings: driftFactor from the scenario; retryCount 0, so each acquire request is one Redlock
// attempt and lockstep retries every acquire_retry_ms (node-redlock's own default is 10 retries
// 200 ms apart). With LOCKSTEP_FENCING=incr a fencing token is taken after each grant with INCR on
// lockstep:fence:<key> on the fencing master (node-redlock has no tokens of its own).
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");
const Redis = require("ioredis");
const redlockModule = require("redlock");
const Redlock = redlockModule.default || redlockModule.Redlock;
const { ExecutionError, ResourceLockedError } = redlockModule;

const env = process.env;
const timeoutMs = Math.max(parseInt(env.LOCKSTEP_REQUEST_TIMEOUT_MS || "1000", 10), 1);

const resourceTimeoutMs = Math.max(parseInt(env.LOCKSTEP_RESOURCE_TIMEOUT_MS || "1000", 10), 1);

function client(addr, commandTimeout) {
  const i = addr.lastIndexOf(":");
  return new Redis({
    host: addr.slice(0, i),
    port: parseInt(addr.slice(i + 1), 10),
    commandTimeout,
    maxRetriesPerRequest: 1,
    lazyConnect: false,
  });
}

const masters = env.LOCKSTEP_MASTERS.split(",").map((a) => client(a, timeoutMs));
const fenceClient = masters[parseInt(env.LOCKSTEP_FENCING_MASTER || "0", 10)];
const fencing = env.LOCKSTEP_FENCING === "incr";
const resource = client(env.LOCKSTEP_RESOURCE, resourceTimeoutMs);
const redlock = new Redlock(masters, {
  driftFactor: parseFloat(env.LOCKSTEP_DRIFT_FACTOR || "0.01"),
  retryCount: 0,
});
// Redlock reports per-client errors as events; they are in the answers already.
redlock.on("error", () => {});

// Grants held by value.
const held = new Map();

function answer(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

// Why an ExecutionError happened: "busy" when every vote against is a locked resource.
async function classify(e) {
  if (!(e instanceof ExecutionError)) {
    return { status: /timed out|timeout/i.test(String(e && e.message)) ? "unknown" : "fail", error: String(e) };
  }
  const stats = await Promise.all(e.attempts || []).catch(() => []);
  const errors = [];
  for (const s of stats) {
    for (const err of s.votesAgainst.values()) errors.push(err);
  }
  if (errors.length > 0 && errors.every((err) => err instanceof ResourceLockedError)) {
    return { status: "busy", error: e.message };
  }
  const unknown = errors.some((err) => /timed out|timeout/i.test(String(err && err.message)));
  return { status: unknown ? "unknown" : "fail", error: errors.map(String).join("; ") || e.message };
}

const ops = {
  async acquire(req) {
    let lock;
    try {
      lock = await redlock.acquire([req.key], req.ttl_ms);
    } catch (e) {
      return classify(e);
    }
    let token = null;
    if (fencing) {
      try {
        token = await fenceClient.incr("lockstep:fence:" + req.key);
      } catch (e) {
        await lock.release().catch(() => {});
        return { status: "fail", error: "no fencing token: " + e };
      }
    }
    held.set(lock.value, lock);
    return {
      status: "ok",
      value: lock.value,
      fencing_token: token,
      validity_ms: Math.max(lock.expiration - Date.now(), 0),
    };
  },
  async extend(req) {
    const lock = held.get(req.value);
    if (!lock) return { status: "lost", error: "not a grant of this client" };
    try {
      const extended = await lock.extend(req.ttl_ms);
      held.set(req.value, extended);
      return { status: "ok", value: req.value, validity_ms: Math.max(extended.expiration - Date.now(), 0) };
    } catch (e) {
      const c = await classify(e);
      return c.status === "busy" ? { status: "lost", error: c.error } : c;
    }
  },
  async release(req) {
    const lock = held.get(req.value);
    held.delete(req.value);
    if (!lock) return { status: "lost", error: "not a grant of this client" };
    try {
      await lock.release();
      return { status: "ok", released: true };
    } catch (e) {
      // The compare-and-delete found another value or none on too many masters.
      const c = await classify(e);
      return c.status === "busy" ? { status: "lost", error: c.error } : c;
    }
  },
  async read(req) {
    const args = [req.key];
    if (req.fencing_token !== null && req.fencing_token !== undefined) args.push(req.fencing_token);
    try {
      const [value, version] = await resource.call("FREAD", ...args);
      return { status: "ok", value: value === null ? null : Number(value), version: Number(version) };
    } catch (e) {
      if (String(e.message).startsWith("FENCED")) return { status: "rejected", error: e.message };
      return { status: /timed out/i.test(e.message) ? "unknown" : "fail", error: e.message };
    }
  },
  async write(req) {
    const args = [req.key, req.value];
    if (req.fencing_token !== null && req.fencing_token !== undefined) args.push(req.fencing_token);
    try {
      const version = await resource.call("FWRITE", ...args);
      return { status: "ok", version: Number(version) };
    } catch (e) {
      if (String(e.message).startsWith("FENCED")) return { status: "rejected", error: e.message };
      return { status: /timed out/i.test(e.message) ? "unknown" : "fail", error: e.message };
    }
  },
};

async function main() {
  const pkg = (name) =>
    JSON.parse(fs.readFileSync(path.join(__dirname, "node_modules", name, "package.json"), "utf8")).version;
  const version = pkg("redlock");
  const ioVersion = pkg("ioredis");
  answer({ hello: `node-redlock ${version} over ioredis ${ioVersion}` });
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    if (req.op === "quit") break;
    let out;
    try {
      out = await ops[req.op](req);
    } catch (e) {
      out = { status: "fail", error: String(e) };
    }
    out.id = req.id;
    answer(out);
  }
  for (const c of [...masters, resource]) c.disconnect();
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack) + "\n");
  process.exit(1);
});
