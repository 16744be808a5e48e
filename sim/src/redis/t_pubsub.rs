//! Publish/subscribe and connection commands a script may call (Redis's `pubsub.c`): `PUBLISH`,
//! `PUBSUB CHANNELS|NUMSUB|NUMPAT`, and `PING`/`ECHO`. Subscribing is per connection, so it is the
//! engine's (`command.rs`); the messages go to [`Db`]'s outbox for the server to push.

use super::db::Db;
use super::keyspace::Keyspace;
use super::reply::Reply;
use super::syntax::{arity_error, glob_match};
use bytes::Bytes;
use std::collections::BTreeSet;

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
        return arity_error("pubsub|channels");
    }
    Reply::Array(Some(
        db.channels
            .iter()
            .filter(|(c, ids)| !ids.is_empty() && args.get(2).is_none_or(|p| glob_match(p, c)))
            .map(|(c, _)| Reply::Bulk(Some(c.clone())))
            .collect(),
    ))
}

/// `PUBSUB NUMSUB [channel...]`: each channel and its subscriber count.
pub(crate) fn pubsub_numsub(db: &mut Db, args: &[Bytes], _now: i64) -> Reply {
    Reply::Array(Some(
        args[2..]
            .iter()
            .flat_map(|c| {
                let n = db.channels.get(c).map_or(0, BTreeSet::len);
                [Reply::Bulk(Some(c.clone())), Reply::Integer(n as i64)]
            })
            .collect(),
    ))
}

/// `PUBSUB NUMPAT`: how many patterns are subscribed to.
pub(crate) fn pubsub_numpat(db: &mut Db, _args: &[Bytes], _now: i64) -> Reply {
    Reply::Integer(db.patterns.values().filter(|ids| !ids.is_empty()).count() as i64)
}
