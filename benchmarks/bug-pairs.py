#!/usr/bin/env python3
"""What `lockstep explore` finds with default flags in every shipped bug pair (issue 50's
acceptance): for each `scenarios/bug-*.toml` with a `-safe` twin, the distinct implementation bugs
of the buggy lock over SEEDS seeds (checker, fault kinds, operations, seeds, first seed) and the
implementation-bug seeds of its twin; then the implementation-bug seeds of every safe twin,
built-in lock (`scenarios/baseline-*.toml`) and library model (`scenarios/libraries/*.toml`) over
CLEAN_SEEDS seeds. Prints Markdown tables. A long measurement (minutes on two cores): it belongs
here, not in the tests.

    benchmarks/bug-pairs.py [path/to/lockstep] [--seeds 300] [--clean-seeds 1000] [--jobs 2]
"""

import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def explore(lockstep, path, seeds, jobs, shrink):
    """`lockstep explore PATH --seeds N --json`: the document (exit code 0 or 1 both fine)."""
    out = subprocess.run(
        [lockstep, "explore", path, "--seeds", str(seeds), "--jobs", str(jobs), "--json", "--shrink", str(shrink)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        sys.exit(f"{path}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def bug_seeds(doc):
    """Implementation-bug seeds of an exploration (0 when the lock failed without any fault is
    not the case: such a document has a summary too)."""
    summary = doc.get("summary") or {}
    classified = summary.get("classified") or {}
    return classified.get("seeds_bug", 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lockstep", nargs="?", default=os.path.join(ROOT, "target/release/lockstep"))
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--clean-seeds", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--shrink", type=int, default=8)
    args = parser.parse_args()
    pairs = sorted(
        p for p in glob.glob(os.path.join(ROOT, "scenarios/bug-*.toml")) if not p.endswith("-safe.toml")
    )
    print(f"## Shipped bug pairs, default flags, {args.seeds} seeds\n")
    print("| pair | distinct bugs (checker · faults · operations — seeds, first seed) | twin's bug seeds |")
    print("|---|---|---|")
    for bug in pairs:
        twin = bug[: -len(".toml")] + "-safe.toml"
        doc = explore(args.lockstep, bug, args.seeds, args.jobs, args.shrink)
        groups = (doc.get("distinct") or {}).get("groups") or []
        found = [
            f"{g['checker']} · {', '.join(g['fault_kinds']) or 'none'} · {', '.join(g['ops']) or '-'} — "
            f"{g['seeds']}, first {g['first_seed']}"
            for g in groups
            if g.get("shrunk") and (doc.get("distinct") or {}).get("implementation_bugs")
        ]
        twin_bugs = bug_seeds(explore(args.lockstep, twin, args.seeds, args.jobs, 0)) if os.path.exists(twin) else "-"
        name = os.path.basename(bug)[: -len(".toml")]
        print(f"| {name} | {'<br>'.join(found) or 'none'} | {twin_bugs} |")
    clean = sorted(glob.glob(os.path.join(ROOT, "scenarios/bug-*-safe.toml")))
    clean += sorted(glob.glob(os.path.join(ROOT, "scenarios/baseline-*.toml")))
    clean += sorted(glob.glob(os.path.join(ROOT, "scenarios/libraries/*.toml")))
    print(f"\n## Correct locks and library models, default flags, {args.clean_seeds} seeds\n")
    print("| file | implementation-bug seeds | classes |")
    print("|---|---|---|")
    for path in clean:
        doc = explore(args.lockstep, path, args.clean_seeds, args.jobs, 0)
        classes = ((doc.get("summary") or {}).get("bug_groups") or {}).get("classes") or []
        described = "; ".join(
            f"{c['class']['checker']} · {', '.join(c['class']['fault_kinds']) or 'none'} ({c['seeds']}, first {c['first']['seed']})"
            for c in classes
        )
        print(f"| {os.path.relpath(path, ROOT)} | {bug_seeds(doc)} | {described or '-'} |")


if __name__ == "__main__":
    main()
