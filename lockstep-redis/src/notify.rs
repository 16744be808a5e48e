//! Keyspace notifications (`notify-keyspace-events`, Redis's `notify.c`): after a command writes a
//! key, a `pmessage`/`message` on `__keyspace@DB__:KEY` (class `K`) with the event's name and on
//! `__keyevent@DB__:EVENT` (class `E`) with the key, for the event classes enabled (`g` generic,
//! `$` string, `l` list, `s` set, `h` hash, `z` sorted set, `t` stream; `A` all of them).
//!
//! The event is the command's name, as Redis names most of them, with Redis's own names where they
//! differ (`INCR` is `incrby`, `HMSET` `hset`, `ZINCRBY` `zincr`, `BITFIELD` `setbit`, `PFMERGE`
//! `pfadd`, `SETEX` `set` then `expire`, `GETDEL`/`UNLINK` `del`...), a `del` after a command
//! that emptied a collection, and `expired` (class `x`) when a key expires, lazily or actively;
//! `rename_from`/`rename_to`, `move_from`/`move_to` and `copy_to`; the stream group events (`xgroup-create`,
//! `xgroup-createconsumer` also for a consumer a read or claim creates...); `new` (class `n`)
//! first when a command adds a key. Left out: `evicted` (`e`: no eviction) and key-miss (`m`).

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

/// A `notify-keyspace-events` value as `CONFIG GET` shows it, observed on
/// redis-server 7.0.15: `A` for all the data classes, else each of `g$lshzxetd` then `n` in that
/// order; then `K`, `E`, `m`. (`n` is not in `A`, and Redis drops it from the text when `A` is
/// shown: `CONFIG SET ... KAn` reads back `AK`; the classes keep it, as the value set is kept.)
pub(crate) fn normalise(flags: &str) -> String {
    let bits = flags.chars().filter_map(class_of).fold(0, |acc, c| acc | c);
    let mut out = String::new();
    if bits & ALL == ALL {
        out.push('A');
    } else {
        for c in "g$lshzxetdn".chars() {
            if class_of(c).is_some_and(|b| bits & b != 0) {
                out.push(c);
            }
        }
    }
    for (c, b) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
        if bits & b != 0 {
            out.push(c);
        }
    }
    out
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
        Group::String | Group::Bitmap | Group::HyperLogLog => STRING,
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
        "bitfield" => vec![(STRING, "setbit")],
        "pfmerge" => vec![(STRING, "pfadd")],
        // `PFCOUNT` writing its cached count signals the key without an event.
        "pfcount" => Vec::new(),
        "getdel" | "unlink" | "del" => vec![(GENERIC, "del")],
        "sort" if exists_after => vec![(LIST, "sortstore")],
        "sort" => vec![(GENERIC, "del")],
        "expire" | "pexpire" | "expireat" | "pexpireat" if exists_after => vec![(GENERIC, "expire")],
        "expire" | "pexpire" | "expireat" | "pexpireat" => vec![(GENERIC, "del")],
        // The key left and the key arrived (database to database for `MOVE`).
        "rename" | "renamenx" if exists_after => vec![(GENERIC, "rename_to")],
        "rename" | "renamenx" => vec![(GENERIC, "rename_from")],
        "move" if exists_after => vec![(GENERIC, "move_to")],
        "move" => vec![(GENERIC, "move_from")],
        "copy" => vec![(GENERIC, "copy_to")],
        // Streams: `XGROUP`'s subcommands by their Redis names; the consumer events are raised by
        // the handlers (only when a consumer is created or deleted), and reading, claiming and
        // acknowledging raise none.
        "create" | "setid" | "destroy" if class == STREAM => {
            let event = match spec.name {
                "create" => "xgroup-create",
                "setid" => "xgroup-setid",
                _ => "xgroup-destroy",
            };
            vec![(STREAM, event)]
        }
        "createconsumer" | "delconsumer" | "xreadgroup" | "xclaim" | "xautoclaim" | "xack" if class == STREAM => {
            Vec::new()
        }
        name => vec![(class, name)],
    };
    // A collection emptied by the command is deleted: Redis says so too.
    let deleting = out.iter().any(|(_, e)| *e == "del");
    if !exists_after && !deleting && class != GENERIC && class != STRING {
        out.push((GENERIC, "del"));
    }
    out
}

/// Whether `classes` asks for `new` events (the engine then notes which keys existed).
pub(crate) fn wants_new(classes: u32) -> bool {
    classes & NEW != 0
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
///
/// `absent_before` holds the written keys that did not exist before the command: each that exists
/// after it raises `new` (class `n`) first, as Redis raises it when the key is added.
pub(crate) fn command_events(
    db: &mut Db,
    spec: &CommandSpec,
    args: &[Bytes],
    written: &[(usize, Bytes)],
    absent_before: &[&(usize, Bytes)],
) {
    let flags = db.notify;
    let selected = db.selected;
    let raised = db.ks.db_mut(selected).take_raised();
    for (key, event) in raised {
        if flags & STREAM != 0 {
            publish_event(db, selected, &key, event);
        }
    }
    let mut written: Vec<(&(usize, Bytes), bool)> = written
        .iter()
        .map(|w| (w, db.ks.db(w.0).and_then(|d| d.get(&w.1)).is_some()))
        .collect();
    // The key a `RENAME` or `MOVE` left is told of before the one it arrived at.
    if matches!(spec.name, "rename" | "renamenx" | "move") {
        written.sort_by_key(|(_, exists_after)| *exists_after);
    }
    // `SORT` writes only its `STORE` key (a pattern's key it reclaimed as expired is not its write).
    let sort_store = (spec.name == "sort").then(|| spec.key_positions(args).get(1).map(|&i| &args[i]));
    for ((index, key), exists_after) in written {
        if sort_store.is_some_and(|store| store != Some(key)) {
            continue;
        }
        let created = exists_after && absent_before.iter().any(|(i, k)| i == index && k == key);
        let new = created.then_some((NEW, "new"));
        for (class, event) in new.into_iter().chain(events_of(spec, args, exists_after)) {
            if flags & class == 0 {
                continue;
            }
            publish_event(db, *index, key, event);
        }
    }
}

/// Publishes `event` on `key` of database `index` on the keyspace and keyevent channels asked for.
fn publish_event(db: &mut Db, index: usize, key: &Bytes, event: &'static str) {
    if db.notify & KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{index}__:").into_bytes();
        channel.extend_from_slice(key);
        publish(db, Bytes::from(channel), Bytes::from_static(event.as_bytes()));
    }
    if db.notify & KEYEVENT != 0 {
        let channel = Bytes::from(format!("__keyevent@{index}__:{event}"));
        publish(db, channel, key.clone());
    }
}

fn publish(db: &mut Db, channel: Bytes, message: Bytes) {
    let args = [Bytes::from_static(b"PUBLISH"), channel, message];
    super::t_pubsub::publish(db, &args, 0);
}

#[cfg(test)]
mod tests {
    use crate::{ClientSession, EngineConfig, RedisEngine, Reply};
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

    fn run_all(e: &mut RedisEngine, client: &mut ClientSession, commands: &[&[&str]]) {
        for c in commands {
            e.execute_as(client, &args(c), 0);
        }
    }

    #[test]
    fn new_keys_renames_moves_and_stream_groups_raise_redis_7_events_in_order() {
        let mut e = RedisEngine::new(EngineConfig::default());
        let (mut sub, mut client) = (ClientSession::new(7), ClientSession::new(8));
        e.execute_conn(&mut sub, &args(&["PSUBSCRIBE", "*"]), 0);
        run_all(
            &mut e,
            &mut client,
            &[
                &["CONFIG", "SET", "notify-keyspace-events", "En"],
                &["SET", "foo", "1"],
                &["SET", "foo", "2"],
                &["SET", "bar", "1"],
            ],
        );
        assert_eq!(
            messages(&mut e),
            ["__keyevent@0__:new foo", "__keyevent@0__:new bar"],
            "an overwrite is not new"
        );
        // `rename_from` before `rename_to` whatever the keys' order.
        run_all(
            &mut e,
            &mut client,
            &[
                &["CONFIG", "SET", "notify-keyspace-events", "Kg"],
                &["RENAME", "foo", "a"],
                &["MOVE", "a", "3"],
                &["COPY", "bar", "c"],
            ],
        );
        assert_eq!(
            messages(&mut e),
            [
                "__keyspace@0__:foo rename_from",
                "__keyspace@0__:a rename_to",
                "__keyspace@0__:a move_from",
                "__keyspace@3__:a move_to",
                "__keyspace@0__:c copy_to"
            ]
        );
        // The sequence of Redis 7.0's "stream events test": a consumer a read or a claim
        // creates is announced, deleting an absent consumer and claiming for an existing one
        // are not.
        run_all(
            &mut e,
            &mut client,
            &[
                &["CONFIG", "SET", "notify-keyspace-events", "Kt"],
                &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],
                &["XGROUP", "CREATECONSUMER", "s", "g", "Bob"],
                &["XADD", "s", "1", "f", "A"],
                &["XREADGROUP", "GROUP", "g", "Alice", "STREAMS", "s", ">"],
                &["XCLAIM", "s", "g", "Mike", "0", "1", "FORCE"],
                &["XGROUP", "DELCONSUMER", "s", "g", "Lee"],
                &["XAUTOCLAIM", "s", "g", "Bob", "0", "1"],
                &["XGROUP", "DELCONSUMER", "s", "g", "Bob"],
            ],
        );
        let events: Vec<String> = messages(&mut e)
            .into_iter()
            .map(|m| m.replace("__keyspace@0__:s ", ""))
            .collect();
        assert_eq!(
            events,
            [
                "xgroup-create",
                "xgroup-createconsumer",
                "xadd",
                "xgroup-createconsumer",
                "xgroup-createconsumer",
                "xgroup-delconsumer"
            ]
        );
    }

    #[test]
    fn config_get_shows_the_event_classes_as_redis_normalises_them() {
        for (set, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("Kn", "nK"),
            ("EKm", "KEm"),
            ("KAn", "AK"),
            ("", ""),
        ] {
            assert_eq!(super::normalise(set), shown, "{set}");
        }
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
