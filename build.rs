//! Tells the tests which external tools are installed, so that a test whose tool is missing shows
//! as `ignored, <tool> is not installed` where the test runner lists results, rather than `ok`
//! (libtest has no skip decided at run time). For each missing tool it sets a cfg that the test
//! names in `#[cfg_attr(lockstep_no_X, ignore = "...")]`:
//!
//! | cfg | what is probed |
//! |---|---|
//! | `lockstep_no_faketime` | libfaketime (`LOCKSTEP_LIBFAKETIME` or the usual paths) |
//! | `lockstep_no_redis_server` | `redis-server --version` (`REDIS_SERVER` or on `PATH`) |
//! | `lockstep_no_redis_py` | `python3 -c 'import redis'` |
//! | `lockstep_no_node_redlock` | node, and redlock + ioredis in `examples/live/node/node_modules` |
//! | `lockstep_no_redis_py_suite` | redis-py's unpacked sdist (`LOCKSTEP_REDIS_PY_SUITE`), pytest and pytest-asyncio in the peers' Python |
//! | `lockstep_no_redis_lock_suite` | python-redis-lock's unpacked sdist (`LOCKSTEP_REDIS_LOCK_SUITE`) and its test packages |
//! | `lockstep_no_pottery_suite` | pottery's unpacked sdist (`LOCKSTEP_POTTERY_SUITE`), pytest-asyncio, mmh3 |
//! | `lockstep_no_node_redlock_suite` | npm redlock's unpacked tarball with its devDependencies (`LOCKSTEP_NODE_REDLOCK_SUITE`) |
//! | `lockstep_no_redis_suite` | Redis 7.0.15's unpacked source package (`LOCKSTEP_REDIS_SUITE`, default `target/redis-suite/redis-7.0.15`) and `tclsh` |
//!
//! The peers' Python is `LOCKSTEP_PEER_PYTHON`, else `target/peer-suites/venv/bin/python` when
//! `.ci/run` made it, else `python3`; the suites' default places are under `target/` (see
//! `tests/live/peers.rs`). Under `CI=true` no cfg is set: the tests run and a missing tool fails
//! them with a message naming it (`.ci/run` installs everything).
//!
//! Looked up again when one of those variables or `PATH` changes, and when a probed path changes:
//! each probed file that exists is watched, and for one that is missing its nearest existing
//! directory (never `target/` itself, whose contents change at every build), so installing a tool
//! or running `.ci/run` is seen by the next `cargo test`.

use std::path::{Path, PathBuf};
use std::process::Command;

include!("src/live/faketime_paths.rs");

const CFGS: &[&str] = &[
    "lockstep_no_faketime",
    "lockstep_no_redis_server",
    "lockstep_no_redis_py",
    "lockstep_no_node_redlock",
    "lockstep_no_redis_py_suite",
    "lockstep_no_redis_lock_suite",
    "lockstep_no_pottery_suite",
    "lockstep_no_node_redlock_suite",
    "lockstep_no_redis_suite",
];

const ENV_VARS: &[&str] = &[
    "CI",
    "PATH",
    "LOCKSTEP_LIBFAKETIME",
    "REDIS_SERVER",
    "LOCKSTEP_PEER_PYTHON",
    "LOCKSTEP_REDIS_PY_SUITE",
    "LOCKSTEP_REDIS_LOCK_SUITE",
    "LOCKSTEP_POTTERY_SUITE",
    "LOCKSTEP_NODE_REDLOCK_SUITE",
    "LOCKSTEP_REDIS_SUITE",
];

/// The paths the probes looked at, watched by cargo.
struct Watch {
    root: PathBuf,
    paths: Vec<PathBuf>,
}

impl Watch {
    /// Watches `path` if it exists, else its nearest existing ancestor — but never the
    /// repository's root or its build directory (their contents change at every build), nor a
    /// directory as wide as `/`, `/usr` or `/usr/lib` (fewer than three components).
    fn path(&mut self, path: &Path) {
        let target = self.root.join("target");
        let mut p = path.to_path_buf();
        while p != target && p != self.root && p.components().count() > 3 {
            if p.exists() {
                self.paths.push(p);
                return;
            }
            if !p.pop() {
                return;
            }
        }
    }
}

fn env_path(var: &str, default: &Path) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| default.to_path_buf())
}

/// Whether `program args` runs and exits 0.
fn runs(program: &Path, args: &[&str], dir: &Path) -> bool {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `program` resolved through `PATH` (or as given when it has a slash); every `PATH` directory
/// is watched, so that installing it is seen.
fn on_path(program: &str, watch: &mut Watch) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        watch.path(&p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut found = None;
    for dir in std::env::split_paths(&path) {
        if dir.as_os_str().is_empty() || !dir.is_absolute() {
            continue;
        }
        let candidate = dir.join(program);
        if found.is_none() && candidate.is_file() {
            found = Some(candidate.clone());
        }
        if found.as_ref() == Some(&candidate) {
            watch.path(&candidate);
        } else if found.is_none() && dir.is_dir() {
            watch.path(&dir);
        }
    }
    found
}

/// Whether `python` imports every module of `modules`; watches the modules' files when they are
/// found, else the interpreter's site-packages.
fn python_imports(python: &Path, modules: &[&str], watch: &mut Watch) -> bool {
    let script = format!(
        "import importlib, sysconfig\nprint(sysconfig.get_paths()['purelib'])\nfor m in {modules:?}:\n    \
         print(importlib.import_module(m).__file__)\n"
    );
    let out = Command::new(python).args(["-c", &script]).output();
    match out {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            let mut lines = text.lines();
            if let Some(site) = lines.next() {
                if o.status.success() {
                    for file in lines {
                        watch.path(Path::new(file));
                    }
                } else {
                    watch.path(Path::new(site));
                }
            }
            o.status.success()
        }
        Err(_) => false,
    }
}

fn main() {
    for cfg in CFGS {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
    }
    for var in ENV_VARS {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/live/faketime_paths.rs");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut watch = Watch {
        root: root.clone(),
        paths: Vec::new(),
    };
    let peers = root.join("target/peer-suites");
    // The suites' parent exists, so that it (not `target/`) is what is watched while they are
    // missing.
    let _ = std::fs::create_dir_all(&peers);
    let mut missing = Vec::new();

    let faketime = match std::env::var("LOCKSTEP_LIBFAKETIME") {
        Ok(path) => {
            watch.path(Path::new(&path));
            Path::new(&path).exists()
        }
        Err(_) => CANDIDATES.iter().any(|p| {
            watch.path(Path::new(p));
            Path::new(p).exists()
        }),
    };
    if !faketime {
        missing.push("lockstep_no_faketime");
    }

    let redis_server = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string());
    if !on_path(&redis_server, &mut watch).is_some_and(|p| runs(&p, &["--version"], &root)) {
        missing.push("lockstep_no_redis_server");
    }

    let python3 = on_path("python3", &mut watch);
    if !python3
        .as_ref()
        .is_some_and(|p| python_imports(p, &["redis"], &mut watch))
    {
        missing.push("lockstep_no_redis_py");
    }

    let node = on_path("node", &mut watch);
    let adapter_modules = root.join("examples/live/node/node_modules");
    let adapter_ok = ["redlock", "ioredis"].iter().all(|m| {
        let file = adapter_modules.join(m).join("package.json");
        watch.path(&file);
        file.is_file()
    });
    if node.is_none() || !adapter_ok {
        missing.push("lockstep_no_node_redlock");
    }

    let venv_python = peers.join("venv/bin/python");
    let peer_python = match std::env::var_os("LOCKSTEP_PEER_PYTHON") {
        Some(p) => on_path(&p.to_string_lossy(), &mut watch),
        None => {
            watch.path(&venv_python);
            match venv_python.is_file() {
                true => Some(venv_python),
                false => python3.clone(),
            }
        }
    };
    let suite = |var: &str, default: &str, marker: &str, watch: &mut Watch| -> bool {
        let file = env_path(var, &root.join(default)).join(marker);
        watch.path(&file);
        file.is_file()
    };

    let redis_py_suite = suite(
        "LOCKSTEP_REDIS_PY_SUITE",
        "target/peer-suites/redis-8.1.0",
        "tests/test_lock.py",
        &mut watch,
    ) && peer_python
        .as_ref()
        .is_some_and(|p| python_imports(p, &["pytest", "pytest_asyncio"], &mut watch));
    if !redis_py_suite {
        missing.push("lockstep_no_redis_py_suite");
    }

    let redis_lock_suite = suite(
        "LOCKSTEP_REDIS_LOCK_SUITE",
        "target/peer-suites/python_redis_lock-4.0.1",
        "tests/test_redis_lock.py",
        &mut watch,
    ) && peer_python.as_ref().is_some_and(|p| {
        python_imports(
            p,
            &[
                "pytest",
                "redis",
                "process_tests",
                "gevent",
                "eventlet",
                "django",
                "django_redis",
            ],
            &mut watch,
        )
    });
    if !redis_lock_suite {
        missing.push("lockstep_no_redis_lock_suite");
    }

    let pottery_suite = suite(
        "LOCKSTEP_POTTERY_SUITE",
        "target/peer-suites/pottery-3.0.1",
        "tests/test_redlock.py",
        &mut watch,
    ) && peer_python
        .as_ref()
        .is_some_and(|p| python_imports(p, &["pytest", "pytest_asyncio", "redis", "mmh3"], &mut watch));
    if !pottery_suite {
        missing.push("lockstep_no_pottery_suite");
    }

    let node_redlock_suite = node.is_some()
        && suite(
            "LOCKSTEP_NODE_REDLOCK_SUITE",
            "target/peer-suites/redlock-4.1.0",
            "test.js",
            &mut watch,
        )
        && suite(
            "LOCKSTEP_NODE_REDLOCK_SUITE",
            "target/peer-suites/redlock-4.1.0",
            "node_modules/mocha/package.json",
            &mut watch,
        );
    if !node_redlock_suite {
        missing.push("lockstep_no_node_redlock_suite");
    }

    let _ = std::fs::create_dir_all(root.join("target/redis-suite"));
    let redis_suite = suite(
        "LOCKSTEP_REDIS_SUITE",
        "target/redis-suite/redis-7.0.15",
        "tests/test_helper.tcl",
        &mut watch,
    ) && on_path("tclsh", &mut watch).is_some();
    if !redis_suite {
        missing.push("lockstep_no_redis_suite");
    }

    watch.paths.sort();
    watch.paths.dedup();
    for path in &watch.paths {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    // Under CI a missing tool fails its test instead (the test checks again when it runs).
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if !in_ci {
        for cfg in missing {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
