//! `CLIENT KILL`, `CLIENT PAUSE`/`UNPAUSE` and `CLIENT HELP`: the arguments, parsed as Redis 7.0
//! parses them (<https://redis.io/commands/client-kill/>, <https://redis.io/commands/client-pause/>),
//! for the server loop ([`super::server`]), which knows the connections and runs them; and what
//! the engine answers when they run inside `MULTI`/`EXEC` (see the rows in `commands.rs`).

use super::keyspace::Keyspace;
use super::reply::Reply;
use super::syntax::{parse_ll, SYNTAX};
use bytes::Bytes;

/// Which connections a `CLIENT KILL` names; every field given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KillFilter {
    /// `ID client-id`.
    pub(crate) id: Option<i64>,
    /// `ADDR ip:port` (or the old form's single argument).
    pub(crate) addr: Option<Bytes>,
    /// `LADDR ip:port`.
    pub(crate) laddr: Option<Bytes>,
    /// `TYPE normal|master|replica|pubsub`.
    pub(crate) kind: Option<ClientKind>,
    /// `MAXAGE seconds`: connections older than this (Redis 7.4's option; 7.0 refuses it).
    pub(crate) max_age_s: Option<i64>,
    /// `SKIPME yes|no` (default yes; the old form kills the asking connection too).
    pub(crate) skip_me: bool,
    /// The old form `CLIENT KILL ip:port`: `OK` or `ERR No such client` instead of a count.
    pub(crate) old_form: bool,
}

/// A connection's type, as `CLIENT KILL TYPE` and `CLIENT LIST TYPE` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientKind {
    /// An ordinary connection.
    Normal,
    /// A master's link to this replica (lockstep's replication has none).
    Master,
    /// A replica's link (none).
    Replica,
    /// A RESP2 connection in subscribed mode.
    PubSub,
}

/// Parses `CLIENT KILL ...` (`args[0..2]` are `CLIENT KILL`; the arity is checked).
pub(crate) fn parse_kill(args: &[Bytes]) -> Result<KillFilter, Reply> {
    if args.len() == 3 {
        return Ok(KillFilter {
            addr: Some(args[2].clone()),
            old_form: true,
            ..KillFilter::default()
        });
    }
    if !args.len().is_multiple_of(2) {
        return Err(Reply::error(SYNTAX));
    }
    let mut filter = KillFilter {
        skip_me: true,
        ..KillFilter::default()
    };
    for pair in args[2..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        let is = |name: &str| option.eq_ignore_ascii_case(name.as_bytes());
        if is("id") {
            match parse_ll(value) {
                Some(id) if id > 0 => filter.id = Some(id),
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            }
        } else if is("type") {
            let kind = if value.eq_ignore_ascii_case(b"normal") {
                ClientKind::Normal
            } else if value.eq_ignore_ascii_case(b"master") {
                ClientKind::Master
            } else if value.eq_ignore_ascii_case(b"replica") || value.eq_ignore_ascii_case(b"slave") {
                ClientKind::Replica
            } else if value.eq_ignore_ascii_case(b"pubsub") {
                ClientKind::PubSub
            } else {
                return Err(Reply::Error(format!("ERR Unknown client type '{}'", printable(value))));
            };
            filter.kind = Some(kind);
        } else if is("addr") {
            filter.addr = Some(value.clone());
        } else if is("laddr") {
            filter.laddr = Some(value.clone());
        } else if is("user") {
            // lockstep's one user is `default`, which every connection is.
            if !value.eq_ignore_ascii_case(b"default") {
                return Err(Reply::Error(format!("ERR No such user '{}'", printable(value))));
            }
        } else if is("skipme") {
            if value.eq_ignore_ascii_case(b"yes") {
                filter.skip_me = true;
            } else if value.eq_ignore_ascii_case(b"no") {
                filter.skip_me = false;
            } else {
                return Err(Reply::error(SYNTAX));
            }
        } else if is("maxage") {
            match parse_ll(value) {
                Some(age) if age >= 0 => filter.max_age_s = Some(age),
                _ => return Err(Reply::error(SYNTAX)),
            }
        } else {
            return Err(Reply::error(SYNTAX));
        }
    }
    Ok(filter)
}

/// What a `CLIENT KILL` knows of a connection to match it.
pub(crate) struct KillCandidate<'a> {
    pub(crate) id: i64,
    pub(crate) addr: &'a str,
    pub(crate) laddr: &'a str,
    pub(crate) kind: ClientKind,
    pub(crate) age_s: i64,
    pub(crate) is_me: bool,
}

impl KillFilter {
    /// Whether the filter names `c`.
    pub(crate) fn matches(&self, c: &KillCandidate<'_>) -> bool {
        self.id.is_none_or(|id| id == c.id)
            && self.addr.as_ref().is_none_or(|a| a.as_ref() == c.addr.as_bytes())
            && self.laddr.as_ref().is_none_or(|a| a.as_ref() == c.laddr.as_bytes())
            && self.kind.is_none_or(|k| k == c.kind)
            && self.max_age_s.is_none_or(|max| c.age_s > max)
            && !(self.skip_me && c.is_me)
    }

    /// The reply once `killed` connections matched.
    pub(crate) fn reply(&self, killed: usize) -> Reply {
        match (self.old_form, killed) {
            (true, 0) => Reply::error("ERR No such client"),
            (true, _) => Reply::ok(),
            (false, n) => Reply::Integer(n as i64),
        }
    }
}

/// How `CLIENT PAUSE` pauses: every command, or the ones that may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PauseKind {
    /// `WRITE`: commands that may write (`write` or `may-replicate`, scripts, `PUBLISH`,
    /// `PFCOUNT`, an `EXEC` of any of them) wait.
    Write,
    /// `ALL` (the default): every command waits.
    All,
}

/// Parses `CLIENT PAUSE timeout [WRITE|ALL]`: the timeout in ms and the kind.
pub(crate) fn parse_pause(args: &[Bytes]) -> Result<(i64, PauseKind), Reply> {
    if args.len() > 4 {
        // Redis names the subcommand as it was given.
        return Err(Reply::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            printable(&args[1])
        )));
    }
    let Some(timeout) = parse_ll(&args[2]) else {
        return Err(Reply::error("ERR timeout is not an integer or out of range"));
    };
    if timeout < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let kind = match args.get(3) {
        None => PauseKind::All,
        Some(a) if a.eq_ignore_ascii_case(b"all") => PauseKind::All,
        Some(a) if a.eq_ignore_ascii_case(b"write") => PauseKind::Write,
        Some(_) => return Err(Reply::error("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    Ok((timeout, kind))
}

/// Whether a `WRITE` pause holds the command `name` (full name, lower case) with row flags
/// `write` or `may-replicate` given as `writes` (Redis's list: write commands, scripts, `PUBLISH`,
/// `PFCOUNT`, `WAIT`).
pub(crate) fn paused_by_write_pause(name: &str, writes: bool) -> bool {
    writes
        || matches!(
            name,
            "eval" | "evalsha" | "fcall" | "publish" | "spublish" | "pfcount" | "wait"
        )
}

/// `CLIENT KILL` inside `MULTI`/`EXEC`: the engine sees no other connection, so it answers as
/// Redis does when none matches (after the same argument checks).
pub(crate) fn client_kill_queued(_ks: &mut Keyspace, args: &[Bytes], _now: i64) -> Reply {
    match parse_kill(args) {
        Ok(filter) => filter.reply(0),
        Err(e) => e,
    }
}

/// `CLIENT PAUSE` inside `EXEC`: checked here, applied by the server loop after the `EXEC`.
pub(crate) fn client_pause_queued(_ks: &mut Keyspace, args: &[Bytes], _now: i64) -> Reply {
    match parse_pause(args) {
        Ok(_) => Reply::ok(),
        Err(e) => e,
    }
}

/// `CLIENT UNPAUSE` inside `EXEC`: applied by the server loop after the `EXEC`.
pub(crate) fn client_unpause_queued(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    Reply::ok()
}

/// `CLIENT HELP`: Redis 7.0's text for the subcommands lockstep has.
pub(crate) fn client_help(_ks: &mut Keyspace, _args: &[Bytes], _now: i64) -> Reply {
    let lines = [
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "HELP",
        "    Prints this help.",
    ];
    Reply::Array(Some(lines.iter().map(|l| Reply::Status((*l).to_string())).collect()))
}

/// An argument for an error text (Redis's `sdscatrepr`-free form: control bytes as spaces).
fn printable(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Bytes> {
        s.split(' ').map(|a| Bytes::copy_from_slice(a.as_bytes())).collect()
    }

    #[test]
    fn kill_arguments_parse_as_redis_7_0() {
        let old = parse_kill(&args("CLIENT KILL 1.2.3.4:5")).unwrap();
        assert!(old.old_form && !old.skip_me);
        assert_eq!(old.reply(0), Reply::error("ERR No such client"));
        assert_eq!(old.reply(1), Reply::ok());
        let new = parse_kill(&args("CLIENT KILL id 7 TYPE pubsub skipme no")).unwrap();
        assert_eq!(new.id, Some(7));
        assert_eq!(new.kind, Some(ClientKind::PubSub));
        assert!(!new.skip_me);
        assert_eq!(new.reply(2), Reply::Integer(2));
        let err = |s: &str| parse_kill(&args(s)).unwrap_err();
        assert_eq!(
            err("CLIENT KILL id abc"),
            Reply::error("ERR client-id should be greater than 0")
        );
        assert_eq!(
            err("CLIENT KILL id 0"),
            Reply::error("ERR client-id should be greater than 0")
        );
        assert_eq!(
            err("CLIENT KILL type foo"),
            Reply::error("ERR Unknown client type 'foo'")
        );
        assert_eq!(err("CLIENT KILL skipme maybe"), Reply::error(SYNTAX));
        assert_eq!(err("CLIENT KILL id 1 addr"), Reply::error(SYNTAX));
        assert_eq!(
            err("CLIENT KILL user nobody"),
            Reply::error("ERR No such user 'nobody'")
        );
        assert_eq!(err("CLIENT KILL what 1"), Reply::error(SYNTAX));
        assert!(parse_kill(&args("CLIENT KILL user default maxage 10 laddr x:1")).is_ok());
    }

    #[test]
    fn kill_filters_match_every_given_field() {
        let filter = parse_kill(&args("CLIENT KILL addr a:1 type normal")).unwrap();
        let c = KillCandidate {
            id: 3,
            addr: "a:1",
            laddr: "l:2",
            kind: ClientKind::Normal,
            age_s: 0,
            is_me: false,
        };
        assert!(filter.matches(&c));
        assert!(!filter.matches(&KillCandidate { is_me: true, ..c }));
        assert!(!filter.matches(&KillCandidate {
            kind: ClientKind::PubSub,
            ..c
        }));
        let aged = parse_kill(&args("CLIENT KILL maxage 5")).unwrap();
        assert!(!aged.matches(&KillCandidate { age_s: 5, ..c }));
        assert!(aged.matches(&KillCandidate { age_s: 6, ..c }));
    }

    #[test]
    fn pause_arguments_parse_as_redis_7_0() {
        assert_eq!(parse_pause(&args("CLIENT PAUSE 10")), Ok((10, PauseKind::All)));
        assert_eq!(parse_pause(&args("CLIENT PAUSE 10 write")), Ok((10, PauseKind::Write)));
        assert_eq!(
            parse_pause(&args("CLIENT PAUSE abc")),
            Err(Reply::error("ERR timeout is not an integer or out of range"))
        );
        assert_eq!(
            parse_pause(&args("CLIENT PAUSE -1")),
            Err(Reply::error("ERR timeout is negative"))
        );
        assert_eq!(
            parse_pause(&args("CLIENT PAUSE 10 foo")),
            Err(Reply::error("ERR CLIENT PAUSE mode must be WRITE or ALL"))
        );
        assert!(parse_pause(&args("CLIENT PAUSE 10 write extra")).is_err());
        assert!(paused_by_write_pause("set", true));
        assert!(paused_by_write_pause("eval", false));
        assert!(!paused_by_write_pause("get", false));
    }
}
