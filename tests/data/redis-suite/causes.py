#!/usr/bin/env python3
"""Ranks what keeps Redis's own tests from passing on `lockstep serve`, from the expectation files
beside this script (tests/live/redis_suite.rs writes them): each `gap` line's reason is put in one
class (a missing command or subcommand, a CONFIG parameter refused, ...; a test that did not run
counts for the last thing that stopped its run), then the classes are printed with how many tests
they hold, most first. Usage: python3 tests/data/redis-suite/causes.py [--by-unit]"""
import collections, os, re, sys

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

def main():
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
