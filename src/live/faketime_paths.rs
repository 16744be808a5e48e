// Where libfaketime usually is (`LOCKSTEP_LIBFAKETIME` overrides). Included by
// `src/live/fakeclock.rs` and by `build.rs` (which tells the tests whether it is there), so the
// list is written once.
const CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
];
