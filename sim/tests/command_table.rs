//! The guide's command list (docs/redis-commands.md) is the command table's: regenerated and
//! compared, so a row added without its page fails here (`LOCKSTEP_BLESS=1` rewrites the page).

#[test]
fn the_guides_command_list_is_generated_from_the_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/redis-commands.md");
    let want = lockstep_sim::redis::table::guide_markdown();
    if std::env::var_os("LOCKSTEP_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write docs/redis-commands.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/redis-commands.md is not the table's list: run `LOCKSTEP_BLESS=1 cargo test -p lockstep-sim --test command_table`"
    );
}
