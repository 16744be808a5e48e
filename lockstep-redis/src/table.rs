//! The command table, as data: one row per Redis command (and per subcommand of a container such
//! as `CONFIG` or `CLIENT`), modelled on Redis's own `src/commands/*.json`.
//!
//! A row says the command's name, its arity (Redis's convention: negative means "at least"), its
//! flags (write, read-only, may grow memory, not from scripts, blocking, pub/sub, admin, ...), where
//! its keys are, what it does to a key's *lease* (sets a value and maybe its TTL, deletes, sets or
//! clears an expiry, runs a script whose effect only the server knows), its group (as `COMMAND
//! DOCS` reports) and its handler. Everything that must know a command reads this table and
//! nothing else: the engine's dispatch, `COMMAND`/`COMMAND INFO`/`COMMAND DOCS`/`COMMAND COUNT`/
//! `COMMAND GETKEYS`, the history's lease reader and the grant recogniser of `live`/`serve`
//! (through [`command`] and [`LeaseEffect`]), the conformance generator and the guide's command
//! list (`lockstep redis-commands`).
//!
//! Left out: ACL categories and command tips (`COMMAND INFO` answers them empty), key-spec
//! details beyond Redis's legacy `(first, last, step)` triple and the movable-key forms the table
//! names ([`KeySpec`]), per-command documentation text beyond the group.

use super::commands::COMMANDS;
pub use super::spec::{
    row, CommandSpec, Flags, Group, Handler, KeySpec, KeysHandler, LeaseEffect, StoreCondition, TtlSource,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Every command of lockstep's Redis, in groups.
pub fn commands() -> &'static [CommandSpec] {
    COMMANDS
}

fn index() -> &'static BTreeMap<&'static str, &'static CommandSpec> {
    static INDEX: OnceLock<BTreeMap<&'static str, &'static CommandSpec>> = OnceLock::new();
    INDEX.get_or_init(|| commands().iter().map(|c| (c.name, c)).collect())
}

/// Commands added with [`register`].
fn registered() -> &'static std::sync::RwLock<BTreeMap<&'static str, &'static CommandSpec>> {
    static EXTRA: OnceLock<std::sync::RwLock<BTreeMap<&'static str, &'static CommandSpec>>> = OnceLock::new();
    EXTRA.get_or_init(Default::default)
}

/// Why [`register`] refused a row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A command of that name exists.
    #[error("command '{0}' exists already")]
    Exists(String),
    /// The name is not lower case, is empty or longer than 32 bytes.
    #[error("command name '{0}' must be 1 to 32 lower-case bytes")]
    BadName(String),
    /// The row runs on the engine or is a container: only keyspace commands can be added.
    #[error("command '{0}': only a plain command with a `Handler::Keys` handler can be added")]
    NotKeys(String),
}

/// Adds a command to lockstep's Redis, for every engine of the process from then on: dispatch,
/// `COMMAND INFO`, the history's lease reader and the grant recogniser read its row as they read
/// the built-in ones (a module's command, or a lock primitive a library adds server-side). Meant
/// for set-up before any run; a name already taken is refused.
pub fn register(spec: &'static CommandSpec) -> Result<(), RegisterError> {
    let bad = spec.name.is_empty() || spec.name.len() > 32 || spec.name != spec.name.to_ascii_lowercase();
    if bad {
        return Err(RegisterError::BadName(spec.name.to_string()));
    }
    if !matches!(spec.handler, Handler::Keys(_)) || !spec.subcommands.is_empty() {
        return Err(RegisterError::NotKeys(spec.name.to_string()));
    }
    let mut extra = registered().write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if index().contains_key(spec.name) || extra.contains_key(spec.name) {
        return Err(RegisterError::Exists(spec.name.to_string()));
    }
    extra.insert(spec.name, spec);
    Ok(())
}

/// The row of the command named `name` (any case), if lockstep's Redis has it. A container's row
/// lists its subcommands.
pub fn command(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut buf = [0u8; 32];
    if name.len() > buf.len() {
        return None;
    }
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let lower = std::str::from_utf8(lower).ok()?;
    if let Some(spec) = index().get(lower) {
        return Some(spec);
    }
    let extra = registered().read().unwrap_or_else(std::sync::PoisonError::into_inner);
    if extra.is_empty() {
        return None;
    }
    extra.get(lower).copied()
}

/// The row `args` run: a plain command's, or a container's subcommand's.
pub fn resolve(args: &[impl AsRef<[u8]>]) -> Option<&'static CommandSpec> {
    let spec = command(args.first()?.as_ref())?;
    if spec.subcommands.is_empty() {
        return Some(spec);
    }
    let sub = args.get(1)?.as_ref();
    spec.subcommands
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
}

/// What the command `args` (name first) can do to a key's lease, by the table; unknown commands
/// do nothing.
pub fn lease_effect(args: &[impl AsRef<[u8]>]) -> LeaseEffect {
    resolve(args).map_or(LeaseEffect::None, |s| s.lease)
}

/// The guide's list of commands (docs/redis-commands.md), generated from the table: one section
/// per group, one row per command with its arity, flags and lease effect.
pub fn guide_markdown() -> String {
    let mut out = String::from(
        "# lockstep's Redis: the command table\n\n\
         <!-- Generated from lockstep-redis/src/commands.rs by `table::guide_markdown`; \
         `LOCKSTEP_BLESS=1 cargo test -p lockstep-sim --test command_table` rewrites it. -->\n\n\
         Every command lockstep's Redis answers, as its command table lists it: the same rows feed \
         dispatch, `COMMAND INFO`, the history's lease reader and the grant recogniser. Arity is \
         Redis's (negative: at least that many arguments, the name included). What is left out, \
         and every known difference from redis-server 7.0, is in \
         [Differences from Redis](redis-differences.md).\n",
    );
    let mut groups: BTreeMap<Group, Vec<(String, &CommandSpec)>> = BTreeMap::new();
    for c in commands() {
        if c.subcommands.is_empty() {
            groups.entry(c.group).or_default().push((c.name.to_uppercase(), c));
        } else {
            for s in c.subcommands {
                groups
                    .entry(c.group)
                    .or_default()
                    .push((format!("{} {}", c.name.to_uppercase(), s.name.to_uppercase()), s));
            }
        }
    }
    for (group, mut rows) in groups {
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        out.push_str(&format!("\n## {} ({})\n\n", group.name(), rows.len()));
        out.push_str("| command | arity | flags | lease effect |\n|---|---|---|---|\n");
        for (name, spec) in rows {
            let lease = match spec.lease {
                LeaseEffect::None => "—".to_string(),
                LeaseEffect::SetsValue {
                    when: StoreCondition::IfAbsent,
                    ..
                } => "stores a value if absent".to_string(),
                LeaseEffect::SetsValue {
                    ttl: TtlSource::Relative { .. },
                    ..
                } => "stores a value with a TTL".to_string(),
                LeaseEffect::SetsValue {
                    ttl: TtlSource::Clears, ..
                } => "stores a value, no TTL".to_string(),
                LeaseEffect::SetsValue { .. } => "stores a value (TTL by options)".to_string(),
                LeaseEffect::Deletes => "deletes".to_string(),
                LeaseEffect::SetsExpiry { absolute: true, .. } => "sets an absolute expiry".to_string(),
                LeaseEffect::SetsExpiry { .. } => "sets a relative expiry".to_string(),
                LeaseEffect::GetEx => "may set or clear the expiry".to_string(),
                LeaseEffect::Persists => "clears the expiry".to_string(),
                LeaseEffect::WritesField => "writes a hash field".to_string(),
                LeaseEffect::DeletesField => "deletes hash fields".to_string(),
                LeaseEffect::Moves => "moves or copies keys".to_string(),
                LeaseEffect::RunsScript => "runs a script (its recorded effects)".to_string(),
            };
            out.push_str(&format!(
                "| `{name}` | {} | {} | {lease} |\n",
                spec.arity,
                spec.flags.names().join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_lower_case_and_unique_and_every_arity_counts_the_name() {
        let mut seen = std::collections::BTreeSet::new();
        for c in commands() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(seen.insert(c.name), "{} twice", c.name);
            assert!(c.arity != 0 && c.arity.abs() >= 1, "{}", c.name);
            for s in c.subcommands {
                assert!(s.arity.abs() >= 2, "{}|{}", c.name, s.name);
            }
            assert!(
                !(c.flags.has(Flags::WRITE) && c.flags.has(Flags::READONLY)),
                "{} both write and readonly",
                c.name
            );
        }
    }

    #[test]
    fn the_sorted_set_rows_have_redis_arity_and_flags() {
        for (name, arity, flags) in super::super::zset::ZSET_COMMANDS {
            let spec = command(name.as_bytes()).unwrap_or_else(|| panic!("{name} has no row"));
            assert_eq!(spec.arity, *arity, "{name}");
            let mut have = spec.flags.names();
            have.sort_unstable();
            let mut want: Vec<&str> = flags.split(' ').collect();
            want.sort_unstable();
            assert_eq!(have, want, "{name}");
        }
    }

    #[test]
    fn key_positions_follow_the_spec() {
        let a = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            command(b"DEL").unwrap().key_positions(&a(&["del", "a", "b"])),
            vec![1, 2]
        );
        assert_eq!(
            command(b"mset")
                .unwrap()
                .key_positions(&a(&["mset", "a", "1", "b", "2"])),
            vec![1, 3]
        );
        assert_eq!(
            command(b"blpop").unwrap().key_positions(&a(&["blpop", "a", "b", "0"])),
            vec![1, 2]
        );
        assert_eq!(
            command(b"eval")
                .unwrap()
                .key_positions(&a(&["eval", "s", "2", "k1", "k2", "v"])),
            vec![3, 4]
        );
        assert_eq!(
            command(b"eval").unwrap().key_positions(&a(&["eval", "s", "9", "k1"])),
            vec![3]
        );
        assert!(command(b"nosuchcommand").is_none());
        assert!(command(&[b'x'; 100]).is_none());
    }

    #[test]
    fn the_lease_effects_of_the_lock_commands() {
        let a = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert!(matches!(
            lease_effect(&a(&["SETNX", "k", "v"])),
            LeaseEffect::SetsValue {
                when: StoreCondition::IfAbsent,
                ..
            }
        ));
        assert_eq!(
            lease_effect(&a(&["pexpireat", "k", "1"])),
            LeaseEffect::SetsExpiry {
                unit_ms: 1,
                absolute: true
            }
        );
        assert_eq!(lease_effect(&a(&["EVALSHA", "x", "1", "k"])), LeaseEffect::RunsScript);
        assert_eq!(lease_effect(&a(&["config", "set", "x", "y"])), LeaseEffect::None);
    }
}
