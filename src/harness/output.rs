//! Where the harness writes a counterexample when no report directory was asked for: a file a
//! failure message names must exist (issue 42, item 11), so without [`super::Harness::report`]
//! or [`super::Harness::counterexamples`] it goes under the cargo target directory the test runs
//! from, else under the system's temporary directory. Written atomically (a temporary file
//! renamed into place: `crate::report::write_atomic`), and its path printed on stderr.
//!
//! Leaves out: cleaning old files (each is named after its template, lock, checker and seed:
//! a rerun replaces it).

use std::path::{Path, PathBuf};

/// The directory under which counterexamples of the lock `lock` go when neither a report
/// directory nor a counterexample directory was given:
/// `<target>/lockstep-counterexamples/<lock>/`, where `<target>` is `$CARGO_TARGET_DIR` when
/// set, else the cargo target directory holding the running test binary (the nearest ancestor
/// of it with cargo's `CACHEDIR.TAG` or `.rustc_info.json`), else the system's temporary
/// directory.
pub fn default_counterexample_dir(lock: &str) -> PathBuf {
    target_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("lockstep-counterexamples")
        // One path component whatever `lock` holds (a harness's own name is already
        // `[a-z0-9-]+`; this function is public and takes any text).
        .join(crate::report::slug(lock))
}

/// The cargo target directory of this process, if it can be told.
fn target_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        // Relative: to the directory cargo ran in, which a test does not know; the exe's is sure.
        if dir.is_absolute() {
            return Some(dir);
        }
    }
    // A test binary is `<target>/<profile>/deps/<name>-<hash>` (an example's,
    // `<target>/<profile>/examples/…`); cargo keeps `.rustc_info.json` and, in a target
    // directory it created, a `CACHEDIR.TAG` (so that backup tools skip it) at `<target>`.
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .skip(1)
        .take(4)
        .find(|dir| dir.join("CACHEDIR.TAG").is_file() || dir.join(".rustc_info.json").is_file())
        .map(Path::to_path_buf)
}

/// Writes a counterexample file atomically (creating its directory) and says where on stderr.
pub(super) fn write_counterexample(file: &Path, toml: &str) -> Result<(), String> {
    crate::report::write_atomic(file, toml.as_bytes())?;
    eprintln!("lockstep harness: counterexample written to {}", file.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_directory_is_named_after_the_lock() {
        let dir = default_counterexample_dir("my-lock");
        assert!(dir.ends_with("lockstep-counterexamples/my-lock"), "{}", dir.display());
        // Any text stays one component under the directory: no `..`, no root, no separator.
        for hostile in ["../../etc", "/tmp/x", "a/b", "", ".."] {
            let escaped = default_counterexample_dir(hostile);
            assert_eq!(escaped.parent(), dir.parent(), "{hostile:?} -> {}", escaped.display());
        }
        // A unit test runs from `<target>/debug/deps`: the target directory is found.
        if std::env::var_os("CARGO_TARGET_DIR").is_none() {
            let target = dir.parent().and_then(Path::parent).unwrap();
            assert!(
                target.join("CACHEDIR.TAG").is_file() || target.join(".rustc_info.json").is_file(),
                "{}",
                target.display()
            );
        }
    }
}
