//! redis-rs over turmoil's simulated TCP.

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisConnectionInfo, RedisResult};

/// Opens a redis-rs [`MultiplexedConnection`] to the Redis host `host` (port 6379) over
/// `turmoil::net::TcpStream`, from inside a turmoil host or client, with redis-rs' default
/// settings (a reply not read within 500 ms of simulated time is an error: see
/// [`connect_with`] for a blocking command that waits longer). The connection's driver runs as
/// a local task of the calling host (turmoil's runtimes are single-threaded), so it ends with the
/// host.
pub async fn connect(host: &str) -> RedisResult<MultiplexedConnection> {
    connect_with(host, AsyncConnectionConfig::default()).await
}

/// [`connect`] with redis-rs settings of your own (response timeout, …).
pub async fn connect_with(host: &str, config: AsyncConnectionConfig) -> RedisResult<MultiplexedConnection> {
    let stream = turmoil::net::TcpStream::connect((host, lockstep_sim::REDIS_PORT)).await?;
    let info = RedisConnectionInfo::default();
    let (connection, driver) = MultiplexedConnection::new_with_config(&info, stream, config).await?;
    tokio::task::spawn_local(driver);
    Ok(connection)
}
