#!/usr/bin/env python3
"""Ranks what keeps Redis's own tests from passing on `lockstep serve`, from the expectation files
beside this script (tests/live/redis_suite.rs writes them): each `gap` line's reason is put in one
class (a missing command or subcommand, a CONFIG parameter refused, ...; a test that did not run
counts for the last thing that stopped its run), then the classes are printed with how many tests
they hold, most first. Usage: python3 tests/data/redis-suite/causes.py [--by-unit]

With `--missing-commands SUITE_DIR PORT` it lists instead the commands the units' sources use that
the server on 127.0.0.1:PORT (a `lockstep serve`) answers `unknown command` to, each with how many
`test` blocks of which unit mention it: what comes next once a unit gets past its first cause. The
count is read from the source (`r CMD`, `$rd CMD`, `redis.call('CMD'`), so a test in a loop counts
once and a test the tags leave out counts too: an order of work, not an exact figure."""
import collections, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))

def cause(reason):
    r = reason
    if r.startswith("not run"):
        r = r.split("; then ")[-1]
        r = re.sub(r"^not run: ", "", r)
        r = re.sub(r"^(a block stopped at|the unit ended at) ", "", r)
        if r.startswith("the unit ended in a hang in"):
            return "a hang ends the unit: keyspace notifications (notify-keyspace-events) never arrive"
        if r == "not run":
            return "not run (nothing named)"
    if "lockstep serve died" in r:
        return "serve crashes: a script's unpack() with a huge range (Lua assertion, SIGABRT)"
    if r.startswith("hangs"):
        return "a hang ends the unit: keyspace notifications (notify-keyspace-events) never arrive"
    m = re.search(r"unknown subcommand '([^']+)'\. Try (\w+) HELP", r, re.I)
    if m:
        return f"subcommand {m.group(2).upper()} {m.group(1).upper()}"
    m = re.search(r"unknown command '([^']+)'", r, re.I)
    if m:
        return f"command {m.group(1).upper()}"
    m = re.search(r"CONFIG SET - '([^']+)'", r)
    if m:
        return f"CONFIG SET {m.group(1)} refused"
    if "Protocol error: expected '*'" in r:
        return "inline protocol (a command not sent as a RESP array)"
    if "WATCH inside MULTI" in r or "MULTI calls can not be nested" in r:
        return "cascade: an earlier failure left the suite's connection inside MULTI"
    if "couldn't open socket" in r or "I/O error reading reply" in r:
        return "serve crashes: a script's unpack() with a huge range (Lua assertion, SIGABRT)"
    if "Unknown Redis command called from script" in r:
        return "a command unknown to serve called from a script"
    if re.search(r"BUSY|instruction budget|SCRIPT KILL|FUNCTION LOAD timeout", r):
        return "no BUSY state: a long script runs to an instruction budget instead"
    if re.search(r"listpack|quicklist|hashtable|intset|ziplist|skiplist|encoding", r):
        return "OBJECT ENCODING answers differ"
    if "used_cpu_user" in r or "# Server" in r:
        return "INFO sections (INFO everything / default / all)"
    return "other: " + r[:70]

UNITS = ("type/incr type/string expire keyspace type/list type/hash type/set type/zset scripting functions "
         "multi pubsub info-command protocol").split()
# Methods of the suite's Tcl client, not commands.
CLIENT_METHODS = {"close", "read", "readraw", "write", "flush", "deferred", "reconnect", "readingraw", "debug"}

def missing_commands(suite, port):
    call = re.compile(r"(?:\[|^|\s)(?:r|\$rd\d*|\$r\d*|\$rr|\$rd_\w+)\s+(?:-?\d+\s+)?([a-zA-Z][a-zA-Z_]+)\b")
    in_script = re.compile(r"redis\.p?call\(\s*['\"]([a-zA-Z]+)['\"]")
    uses = collections.defaultdict(collections.Counter)
    for unit in UNITS:
        source = open(os.path.join(suite, "tests/unit", unit + ".tcl"), encoding="utf-8").read()
        for block in re.split(r"\n\s*test\s+[{\"]", source)[1:]:
            words = {m.group(1).lower() for m in call.finditer(block)}
            words |= {m.group(1).lower() for m in in_script.finditer(block)}
            for w in words - CLIENT_METHODS:
                uses[w][unit] += 1
    missing = []
    for word in sorted(uses):
        reply = subprocess.run(["redis-cli", "-p", str(port), word], capture_output=True, text=True, timeout=10)
        if "unknown command" in reply.stdout.lower():
            missing.append((sum(uses[word].values()), word.upper(), uses[word]))
    for n, word, where in sorted(missing, key=lambda m: (-m[0], m[1])):
        print(f"{n:5}  {word:18} " + ", ".join(f"{u} {k}" for u, k in where.most_common()))
    print(f"{len(missing):5}  commands unknown to the server")

def main():
    if "--missing-commands" in sys.argv:
        at = sys.argv.index("--missing-commands")
        return missing_commands(sys.argv[at + 1], sys.argv[at + 2])
    by_unit = "--by-unit" in sys.argv
    counts = collections.Counter()
    units = collections.defaultdict(collections.Counter)
    for name in sorted(os.listdir(HERE)):
        if not name.endswith(".txt"):
            continue
        for line in open(os.path.join(HERE, name), encoding="utf-8"):
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "gap":
                c = cause(fields[2])
                counts[c] += 1
                units[c][name[:-4].replace("_", "/", 1) if name.startswith("type_") else name[:-4]] += 1
    for c, n in counts.most_common():
        where = ", ".join(f"{u} {k}" for u, k in units[c].most_common()) if by_unit else ""
        print(f"{n:5}  {c}" + (f"  ({where})" if where else ""))
    print(f"{sum(counts.values()):5}  in all")

main()
