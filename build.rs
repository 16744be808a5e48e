//! Tells the tests whether libfaketime is installed, so that a test that needs it shows as
//! `ignored, libfaketime is not installed` where the test runner lists results, rather than `ok`
//! (libtest has no skip decided at run time). Sets `cfg(lockstep_no_faketime)` when it is
//! missing. Looked up again when `LOCKSTEP_LIBFAKETIME` changes; after installing faketime,
//! `touch build.rs` (or a clean build) looks again.

include!("src/live/faketime_paths.rs");

fn main() {
    println!("cargo:rustc-check-cfg=cfg(lockstep_no_faketime)");
    println!("cargo:rerun-if-env-changed=LOCKSTEP_LIBFAKETIME");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/live/faketime_paths.rs");
    let found = match std::env::var("LOCKSTEP_LIBFAKETIME") {
        Ok(path) => std::path::Path::new(&path).exists(),
        Err(_) => CANDIDATES.iter().any(|p| std::path::Path::new(p).exists()),
    };
    if !found {
        println!("cargo:rustc-cfg=lockstep_no_faketime");
    }
}
