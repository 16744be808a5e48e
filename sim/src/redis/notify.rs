//! Keyspace notifications (`notify-keyspace-events`, Redis's `notify.c`): after a command writes a
//! key, a `pmessage`/`message` on `__keyspace@DB__:KEY` (class `K`) with the event's name and on
//! `__keyevent@DB__:EVENT` (class `E`) with the key, for the event classes enabled (`g` generic,
//! `$` string, `l` list, `s` set, `h` hash, `z` sorted set, `t` stream; `A` all of them).
//!
//! The event is the command's name, as Redis names most of them, with Redis's own names where they
//! differ (`INCR` is `incrby`, `HMSET` `hset`, `ZINCRBY` `zincr`, `SETEX` `set` then `expire`,
//! `GETDEL`/`UNLINK` `del`...), a `del` after a command that emptied a collection, and `expired`
//! (class `x`) when a key expires, lazily or actively. Left out: `evicted` (`e`: no eviction),
//! `new` (`n`), key-miss (`m`), the stream
//! commands' consumer-group events, and `RENAME`'s `rename_from`/`rename_to` pair (it says
//! `rename` on the new key's name only).

use super::db::Db;
use super::spec::{CommandSpec, Group};
use bytes::Bytes;

const KEYSPACE: u32 = 1;
const KEYEVENT: u32 = 1 << 1;
const GENERIC: u32 = 1 << 2;
const STRING: u32 = 1 << 3;
const LIST: u32 = 1 << 4;
const SET: u32 = 1 << 5;
const HASH: u32 = 1 << 6;
const ZSET: u32 = 1 << 7;
const STREAM: u32 = 1 << 8;
const EXPIRED: u32 = 1 << 9;
const EVICTED: u32 = 1 << 10;
const KEY_MISS: u32 = 1 << 11;
const NEW: u32 = 1 << 12;
const MODULE: u32 = 1 << 13;
const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

fn class_of(c: char) -> Option<u32> {
    Some(match c {
        'K' => KEYSPACE,
        'E' => KEYEVENT,
        'g' => GENERIC,
        '$' => STRING,
        'l' => LIST,
        's' => SET,
        'h' => HASH,
        'z' => ZSET,
        't' => STREAM,
        'x' => EXPIRED,
        'e' => EVICTED,
        'm' => KEY_MISS,
        'n' => NEW,
        'd' => MODULE,
        'A' => ALL,
        _ => return None,
    })
}

/// Whether every character of a `notify-keyspace-events` value is a class.
pub(crate) fn valid(flags: &str) -> bool {
    flags.chars().all(|c| class_of(c).is_some())
}

/// The classes of a `notify-keyspace-events` value (0 when neither `K` nor `E` is in it: nothing
/// is sent then).
pub(crate) fn classes(flags: &str) -> u32 {
    let bits = flags.chars().filter_map(class_of).fold(0, |acc, c| acc | c);
    if bits & (KEYSPACE | KEYEVENT) == 0 {
        0
    } else {
        bits
    }
}

/// The events one successful command raised on each key it wrote, by its row.
fn events_of(spec: &CommandSpec, args: &[Bytes], exists_after: bool) -> Vec<(u32, &'static str)> {
    let class = match spec.group {
        Group::String | Group::Bitmap => STRING,
        Group::List => LIST,
        Group::Set => SET,
        Group::Hash => HASH,
        Group::SortedSet => ZSET,
        Group::Stream => STREAM,
        _ => GENERIC,
    };
    let has_expiry = |args: &[Bytes]| {
        args.iter().skip(3).any(|a| {
            ["ex", "px", "exat", "pxat"]
                .iter()
                .any(|o| a.eq_ignore_ascii_case(o.as_bytes()))
        })
    };
    let mut out: Vec<(u32, &'static str)> = match spec.name {
        "incr" | "decr" | "incrby" | "decrby" => vec![(STRING, "incrby")],
        "hmset" => vec![(HASH, "hset")],
        "zincrby" => vec![(ZSET, "zincr")],
        "setex" | "psetex" => vec![(STRING, "set"), (GENERIC, "expire")],
        "set" if has_expiry(args) => vec![(STRING, "set"), (GENERIC, "expire")],
        "getset" | "setnx" | "mset" | "msetnx" => vec![(STRING, "set")],
        "getdel" | "unlink" | "del" => vec![(GENERIC, "del")],
        "sort" if exists_after => vec![(LIST, "sortstore")],
        "sort" => vec![(GENERIC, "del")],
        "expire" | "pexpire" | "expireat" | "pexpireat" if exists_after => vec![(GENERIC, "expire")],
        "expire" | "pexpire" | "expireat" | "pexpireat" => vec![(GENERIC, "del")],
        name => vec![(class, name)],
    };
    // A collection emptied by the command is deleted: Redis says so too.
    let deleting = out.iter().any(|(_, e)| *e == "del");
    if !exists_after && !deleting && class != GENERIC && class != STRING {
        out.push((GENERIC, "del"));
    }
    out
}

/// Whether `classes` asks for `expired` events (the keyspace then notes expirations).
pub(crate) fn wants_expired(classes: u32) -> bool {
    classes & EXPIRED != 0
}

/// Publishes an `expired` event for each key that expired (`(database, key)`).
pub(crate) fn expired_events(db: &mut Db, expired: &[(usize, Bytes)]) {
    let flags = db.notify;
    if flags & EXPIRED == 0 {
        return;
    }
    for (index, key) in expired {
        if flags & KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{index}__:").into_bytes();
            channel.extend_from_slice(key);
            publish(db, Bytes::from(channel), Bytes::from_static(b"expired"));
        }
        if flags & KEYEVENT != 0 {
            publish(db, Bytes::from(format!("__keyevent@{index}__:expired")), key.clone());
        }
    }
}

/// Publishes the keyspace events of a successful command that wrote `written` (`(database,
/// key)`s).
pub(crate) fn command_events(db: &mut Db, spec: &CommandSpec, args: &[Bytes], written: &[(usize, Bytes)]) {
    let flags = db.notify;
    // `SORT` writes only its `STORE` key (a pattern's key it reclaimed as expired is not its write).
    let sort_store = (spec.name == "sort").then(|| spec.key_positions(args).get(1).map(|&i| &args[i]));
    for (index, key) in written {
        if sort_store.is_some_and(|store| store != Some(key)) {
            continue;
        }
        let exists_after = db.ks.db(*index).and_then(|d| d.get(key)).is_some();
        for (class, event) in events_of(spec, args, exists_after) {
            if flags & class == 0 {
                continue;
            }
            if flags & KEYSPACE != 0 {
                let mut channel = format!("__keyspace@{index}__:").into_bytes();
                channel.extend_from_slice(key);
                publish(db, Bytes::from(channel), Bytes::from_static(event.as_bytes()));
            }
            if flags & KEYEVENT != 0 {
                let channel = Bytes::from(format!("__keyevent@{index}__:{event}"));
                publish(db, channel, key.clone());
            }
        }
    }
}

fn publish(db: &mut Db, channel: Bytes, message: Bytes) {
    let args = [Bytes::from_static(b"PUBLISH"), channel, message];
    super::t_pubsub::publish(db, &args, 0);
}

#[cfg(test)]
mod tests {
    use crate::redis::{ClientSession, EngineConfig, RedisEngine, Reply};
    use bytes::Bytes;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    fn messages(e: &mut RedisEngine) -> Vec<String> {
        e.take_pushes()
            .into_iter()
            .map(|(_, push)| match push {
                Reply::Array(Some(items)) => items
                    .iter()
                    .skip(2)
                    .map(|i| match i {
                        Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                        _ => String::new(),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            })
            .collect()
    }

    #[test]
    fn writes_raise_keyspace_and_keyevent_messages_by_class() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let mut sub = ClientSession::new(7);
        let mut client = ClientSession::new(8);
        e.execute_conn(&mut sub, &args(&["PSUBSCRIBE", "*"]), 0);
        e.execute_as(&mut client, &args(&["SET", "quiet", "v"]), 0);
        assert!(messages(&mut e).is_empty(), "off by default");
        assert_eq!(
            e.execute_as(
                &mut client,
                &args(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
                0
            ),
            Reply::ok()
        );
        e.execute_as(&mut client, &args(&["SET", "foo", "bar"]), 0);
        assert_eq!(messages(&mut e), ["__keyspace@0__:foo set", "__keyevent@0__:set foo"]);
        e.execute_as(
            &mut client,
            &args(&["CONFIG", "SET", "notify-keyspace-events", "Kl"]),
            0,
        );
        e.execute_as(&mut client, &args(&["SET", "foo", "baz"]), 0);
        e.execute_as(&mut client, &args(&["RPUSH", "l", "a"]), 0);
        e.execute_as(&mut client, &args(&["RPOP", "l"]), 0);
        assert_eq!(
            messages(&mut e),
            ["__keyspace@0__:l rpush", "__keyspace@0__:l rpop"],
            "only list events"
        );
        e.execute_as(
            &mut client,
            &args(&["CONFIG", "SET", "notify-keyspace-events", "Kg$"]),
            0,
        );
        e.execute_as(&mut client, &args(&["SELECT", "9"]), 0);
        e.execute_as(&mut client, &args(&["INCR", "n"]), 0);
        e.execute_as(&mut client, &args(&["EXPIRE", "n", "10"]), 0);
        e.execute_as(&mut client, &args(&["DEL", "n", "missing"]), 0);
        assert_eq!(
            messages(&mut e),
            [
                "__keyspace@9__:n incrby",
                "__keyspace@9__:n expire",
                "__keyspace@9__:n del"
            ]
        );
        assert!(matches!(
            e.execute_as(
                &mut client,
                &args(&["CONFIG", "SET", "notify-keyspace-events", "KQ"]),
                0
            ),
            Reply::Error(_)
        ));
    }
}
