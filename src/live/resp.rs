//! The limits of a live run's connections (`lockstep live`, `lockstep serve`), on top of the
//! Redis framing limits of [`lockstep_sim::redis::CommandReader`] (Redis' own texts; the reader
//! is the one server loop's, [`lockstep_sim::redis::server`]). How much a connection may hold at once
//! (`QUERY_BUFFER_MAX`, `OUTPUT_BUFFER_MAX`, `RUN_BUFFER_MAX`, `MAX_CONNECTIONS`) is
//! enforced by [`super::link`] and [`super::buffers`], which read [`CommandReader::buffered`].

/// Redis' `string2ll`, as the simulated server reads integers (one rule for both servers).
pub use lockstep_sim::redis::parse_ll as string2ll;
pub use lockstep_sim::redis::CommandReader;

/// What a connection may hold of what its client sent and the server has not yet executed (the
/// query buffer, the arguments of a command still arriving, and the bytes in the link): 64 MiB,
/// Redis' `client-query-buffer-limit` with a lower value than its 1 GB default, so that a few
/// clients cannot make lockstep (one process that also holds the run's history) run out of memory.
/// A connection past it is closed without a reply, as Redis does.
pub(crate) const QUERY_BUFFER_MAX: usize = 64 * 1024 * 1024;

/// What a connection may hold of replies not yet written to its socket: 64 MiB (Redis' default for
/// normal clients is no limit; a lock client never comes near it). A connection past it is closed.
pub(crate) const OUTPUT_BUFFER_MAX: usize = 64 * 1024 * 1024;

/// What all the connections of one live run may hold together: 256 MiB. Past it, the connection
/// holding the most is closed (a flooding client, not the lock clients with a few bytes each).
pub(crate) const RUN_BUFFER_MAX: usize = 256 * 1024 * 1024;

/// The most connections one live run serves at once, over all its links (Redis' `maxclients` is
/// 10,000; a lock client opens a few). One more is answered `ERR max number of clients reached`
/// and closed, as Redis does.
pub(crate) const MAX_CONNECTIONS: usize = 1000;

/// Redis' reply to a connection past [`MAX_CONNECTIONS`], as written on the socket.
pub(crate) const MAX_CLIENTS_REPLY: &[u8] = b"-ERR max number of clients reached\r\n";
