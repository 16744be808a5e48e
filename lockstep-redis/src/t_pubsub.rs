//! Publish/subscribe and connection commands a script may call (Redis's `pubsub.c`): `PUBLISH`,
//! `SPUBLISH`, `PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB|HELP`, and `PING`/`ECHO`. Subscribing is per connection, so it is the
//! engine's (`command.rs`); the messages go to [`Db`]'s outbox for the server to push.

use super::db::Db;
use super::keyspace::Keyspace;
use super::reply::Reply;
use super::syntax::{arity_error, glob_match};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// `PING [message]`.
pub(crate) fn ping(_ks: &mut Keyspace, args: &[Bytes], _now: i64) -> Reply {
    match args.len() {
        1 => Reply::Status("PONG".to_string()),
        2 => Reply::Bulk(Some(args[1].clone())),
        _ => arity_error("ping"),
    }
}

/// `ECHO message`.
pub(crate) fn echo(_ks: &mut Keyspace, args: &[Bytes], _now: i64) -> Reply {
    Reply::Bulk(Some(args[1].clone()))
}

/// `PUBLISH channel message`: how many subscribers (channel and pattern) it reached.
pub(crate) fn publish(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    let ids = db.channels.get(&args[1]).cloned().unwrap_or_default();
    for id in &ids {
        let message = Reply::Array(Some(vec![
            Reply::bulk("message"),
            Reply::Bulk(Some(args[1].clone())),
            Reply::Bulk(Some(args[2].clone())),
        ]));
        db.outbox.push((*id, message));
    }
    let mut receivers = ids.len();
    for (pattern, ids) in &db.patterns {
        if glob_match(pattern, &args[1]) {
            for id in ids {
                let message = Reply::Array(Some(vec![
                    Reply::bulk("pmessage"),
                    Reply::Bulk(Some(pattern.clone())),
                    Reply::Bulk(Some(args[1].clone())),
                    Reply::Bulk(Some(args[2].clone())),
                ]));
                db.outbox.push((*id, message));
                receivers += 1;
            }
        }
    }
    Reply::Integer(receivers as i64)
}

/// `PUBSUB CHANNELS [pattern]`: the channels with at least one subscriber.
pub(crate) fn pubsub_channels(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    if args.len() > 3 {
        return pubsub_subcommand_error(&args[1]);
    }
    active_channels(&db.channels, args.get(2))
}

/// The channels of `subscribers` with at least one subscriber matching `pattern` (all without).
fn active_channels(subscribers: &BTreeMap<Bytes, BTreeSet<i64>>, pattern: Option<&Bytes>) -> Reply {
    Reply::Array(Some(
        subscribers
            .iter()
            .filter(|(c, ids)| !ids.is_empty() && pattern.is_none_or(|p| glob_match(p, c)))
            .map(|(c, _)| Reply::Bulk(Some(c.clone())))
            .collect(),
    ))
}

/// What Redis answers `PUBSUB CHANNELS|SHARDCHANNELS` with too many arguments (`pubsubCommand`
/// falls through to its unknown-subcommand reply, naming the subcommand as given).
fn pubsub_subcommand_error(sub: &Bytes) -> Reply {
    Reply::Error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
        String::from_utf8_lossy(sub).replace(['\r', '\n'], " ")
    ))
}

/// `SPUBLISH shardchannel message` (<https://redis.io/commands/spublish/>): pushes an
/// `smessage` to the shard channel's subscribers (patterns never match shard channels); how
/// many it reached.
pub(crate) fn spublish(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    let ids = db.shard_channels.get(&args[1]).cloned().unwrap_or_default();
    for id in &ids {
        let message = Reply::Array(Some(vec![
            Reply::bulk("smessage"),
            Reply::Bulk(Some(args[1].clone())),
            Reply::Bulk(Some(args[2].clone())),
        ]));
        db.outbox.push((*id, message));
    }
    Reply::Integer(ids.len() as i64)
}

/// `PUBSUB SHARDCHANNELS [pattern]`: the shard channels with at least one subscriber.
pub(crate) fn pubsub_shardchannels(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    if args.len() > 3 {
        return pubsub_subcommand_error(&args[1]);
    }
    active_channels(&db.shard_channels, args.get(2))
}

/// `PUBSUB SHARDNUMSUB [shardchannel...]`: each shard channel and its subscriber count.
pub(crate) fn pubsub_shardnumsub(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    numsub(&db.shard_channels, &args[2..])
}

/// `PUBSUB HELP`: Redis 7.0's text.
pub(crate) fn pubsub_help(_db: &mut Db, _args: &[Bytes], _now: i64) -> Reply {
    Reply::Array(Some(
        [
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::Status((*l).to_string()))
        .collect(),
    ))
}

/// `PUBSUB NUMSUB [channel...]`: each channel and its subscriber count.
pub(crate) fn pubsub_numsub(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    numsub(&db.channels, &args[2..])
}

fn numsub(subscribers: &BTreeMap<Bytes, BTreeSet<i64>>, channels: &[Bytes]) -> Reply {
    Reply::Array(Some(
        channels
            .iter()
            .flat_map(|c| {
                let n = subscribers.get(c).map_or(0, BTreeSet::len);
                [Reply::Bulk(Some(c.clone())), Reply::Integer(n as i64)]
            })
            .collect(),
    ))
}

/// `PUBSUB NUMPAT`: how many patterns are subscribed to.
pub(crate) fn pubsub_numpat(db: &mut Db, _args: &[Bytes], _now: i64) -> Reply {
    Reply::Integer(db.patterns.values().filter(|ids| !ids.is_empty()).count() as i64)
}
