//! The bench's floor: a world's traffic routed again by the bare network, with nothing behind it.
//!
//! A run of the standard Redlock world is recorded segment by segment
//! ([`lockstep_sim::World::record_wire`]); the floor is a world of the same nodes whose software
//! does nothing but replay those segments on the same connections: each connecting end opens its
//! connection when the recording did, writes each of its segments (as many zero bytes) no
//! earlier than the recording sent it and reads each of its peer's; each accepting end reads
//! and answers in the recorded order. The same scheduler, clocks, event clock and network carry
//! the same packets, with the same link delays (each direction of each link draws from its own
//! stream of the seed, and the replay sends on each direction in the recorded order); what is
//! left out is everything lockstep adds on top: the Redis model and its Lua, redis-rs, the lock
//! algorithms, the resource, the history and its checkers.
//!
//! What the floor leaves out of the traffic: closes and resets (a replay's connections stay
//! open until its world ends), and faults (the recorded world has none).

use lockstep_sim::{ClockSpec, FaultPlan, Node, SegmentWhat, SentSegment, World, WorldConfig};
use std::collections::BTreeMap;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One connection of a recording: who opened it, to which port of whom, when, and its segments
/// in the order sent.
#[derive(Debug, Clone, Default)]
struct Connection {
    client: String,
    server: String,
    port: u16,
    opened_us: u64,
    /// (sent by the connecting end, when, bytes).
    data: Vec<(bool, u64, usize)>,
}

/// The recording's connections, by connection number.
fn connections(record: &[SentSegment]) -> Vec<Connection> {
    let mut by_conn: BTreeMap<u64, Connection> = BTreeMap::new();
    for segment in record {
        let conn = by_conn.entry(segment.conn).or_insert_with(|| Connection {
            client: segment.client.clone(),
            server: segment.server.clone(),
            ..Connection::default()
        });
        match segment.what {
            SegmentWhat::Connect { port } => {
                conn.port = port;
                conn.opened_us = segment.sent_us;
            }
            SegmentWhat::Data { bytes } => conn.data.push((segment.from_client, segment.sent_us, bytes)),
            SegmentWhat::Close | SegmentWhat::Reset => {}
        }
    }
    // A connection that never sent its connect (recorded mid-way) cannot be replayed.
    by_conn.into_values().filter(|c| c.port != 0).collect()
}

/// Sleeps until true time `at_us` on `node` (no time when it has passed).
async fn until(node: &Node, at_us: u64) {
    let wait_us = at_us.saturating_sub(node.true_time_us());
    if wait_us > 0 {
        node.sleep_true_ms(wait_us.div_ceil(1_000)).await;
    }
}

/// One end of `conn`'s traffic: writes this end's segments (no earlier than recorded) and reads
/// the peer's, in the order sent. Stops at the first I/O error (the world ended under it).
async fn replay_end<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    node: &Node,
    stream: &mut S,
    conn: &Connection,
    connecting_end: bool,
) {
    let mut buffer = vec![0u8; conn.data.iter().map(|d| d.2).max().unwrap_or(0)];
    for &(from_client, sent_us, bytes) in &conn.data {
        let outcome = if from_client == connecting_end {
            until(node, sent_us).await;
            stream.write_all(&buffer[..bytes]).await
        } else {
            stream.read_exact(&mut buffer[..bytes]).await.map(|_| ())
        };
        if outcome.is_err() {
            return;
        }
    }
}

/// The floor world of `record`: its nodes, each replaying its ends of the recorded connections.
/// `config` is the recorded world's (its seed gives the links the same delays).
pub(crate) fn replay_world(config: WorldConfig, record: &[SentSegment]) -> anyhow::Result<World> {
    let connections = Rc::new(connections(record));
    let mut names: Vec<&str> = connections
        .iter()
        .flat_map(|c| [c.client.as_str(), c.server.as_str()])
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut world = World::new(config)?;
    for name in names {
        let connections = Rc::clone(&connections);
        world.add_client(name, ClockSpec::default(), move |node| async move {
            let mut tasks = Vec::new();
            // The accepting ends: one listener per port, connections served in the order their
            // connects were sent (a link delivers in order, so they are accepted in that order
            // per peer).
            let mut ports: BTreeMap<u16, BTreeMap<String, Vec<usize>>> = BTreeMap::new();
            for (i, conn) in connections.iter().enumerate().filter(|(_, c)| c.server == node.name()) {
                ports
                    .entry(conn.port)
                    .or_default()
                    .entry(conn.client.clone())
                    .or_default()
                    .push(i);
            }
            for (port, mut by_peer) in ports {
                let Ok(listener) = node.bind(port) else { continue };
                let expected: usize = by_peer.values().map(Vec::len).sum();
                for list in by_peer.values_mut() {
                    list.reverse();
                }
                let (server, connections) = (node.clone(), Rc::clone(&connections));
                tasks.push(node.spawn(async move {
                    let node = server;
                    let mut served = Vec::new();
                    for _ in 0..expected {
                        let Ok((mut stream, peer)) = listener.accept().await else {
                            break;
                        };
                        let Some(i) = by_peer.get_mut(&peer).and_then(Vec::pop) else {
                            continue;
                        };
                        let (end, connections) = (node.clone(), Rc::clone(&connections));
                        served.push(node.spawn(async move {
                            replay_end(&end, &mut stream, &connections[i], false).await;
                        }));
                    }
                    for task in served {
                        let _ = task.await;
                    }
                }));
            }
            // The connecting ends.
            for i in (0..connections.len()).filter(|&i| connections[i].client == node.name()) {
                let (client, connections) = (node.clone(), Rc::clone(&connections));
                tasks.push(node.spawn(async move {
                    let node = client;
                    let conn = &connections[i];
                    until(&node, conn.opened_us).await;
                    if let Ok(mut stream) = node.connect(&conn.server, conn.port).await {
                        replay_end(&node, &mut stream, conn, true).await;
                    }
                }));
            }
            for task in tasks {
                let _ = task.await;
            }
        })?;
    }
    Ok(world)
}

/// Runs the floor world of `record` once.
pub(crate) fn replay(config: WorldConfig, record: &[SentSegment]) -> anyhow::Result<()> {
    replay_world(config, record)?.run(&FaultPlan::default())?;
    Ok(())
}
