//! `/readyz` and the Redis a process needs: with `[redis] url` or `[feeds] redis`
//! set, the process is not ready while that Redis is unreachable.
//!
//! A thread of the admin listener's pings each such Redis every [`PING_EVERY`], on a
//! connection of its own made for the ping (so a Redis that came back is seen at the
//! next ping, whatever the app's connections are doing), and gives up on an answer
//! after [`PING_WITHIN`]. The process is ready once every one answered its last ping;
//! until the first pings come back it is not. Between pings, a round trip of the
//! process's own that found Redis unreachable makes it not ready until a later one
//! (or the next ping) succeeds (`round_trips`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::Config;
use crate::counters::User;
use crate::counters::round_trips;
use crate::stream::RedisTarget;

/// How often each Redis is pinged.
const PING_EVERY: Duration = Duration::from_secs(1);
/// How long a ping may take, connecting included.
const PING_WITHIN: Duration = Duration::from_millis(500);

/// Whether the Redis a process needs answered its last ping.
#[derive(Debug, Default)]
pub(crate) struct RedisReach {
    reachable: AtomicBool,
}

impl RedisReach {
    /// Returns whether every Redis answered its last ping, and no round trip since
    /// found one unreachable.
    pub(crate) fn is_reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed) && !round_trips::has_failed()
    }
}

/// Returns the Redis servers `config` names: `[redis] url`, `[feeds] redis`.
fn needed(config: &Config) -> Vec<RedisTarget> {
    let feeds = config.feeds.redis.as_deref();
    let feeds = feeds.map(|url| RedisTarget::new(url, config.feeds.ca.clone()));
    let targets = config.redis.target().into_iter().chain(feeds);
    targets.map(|t| t.for_user(User::Ready)).collect()
}

/// Starts pinging the Redis servers `config` names until `stop` says so; returns
/// their reach and the thread, or `None` when it names none.
pub(crate) fn watch_redis(
    config: &Config,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<Option<(Arc<RedisReach>, JoinHandle<()>)>> {
    let targets = needed(config);
    if targets.is_empty() {
        return Ok(None);
    }
    let reach = Arc::new(RedisReach::default());
    let writer = reach.clone();
    let thread =
        crate::rt::runtime::spawn_thread("proscenium-redis-ping".to_owned(), move |runtime| {
            runtime.block_on(async move {
                loop {
                    let mut all = true;
                    for target in &targets {
                        all &= answers(target).await;
                    }
                    writer.reachable.store(all, Ordering::Relaxed);
                    tokio::select! {
                        // Stopped, or the admin listener that would stop it is gone.
                        changed = stop.changed() => if changed.is_err() || *stop.borrow() {
                            break;
                        },
                        () = tokio::time::sleep(PING_EVERY) => {}
                    }
                }
            });
        })?;
    Ok(Some((reach, thread)))
}

/// Returns whether `target` answers a PING within [`PING_WITHIN`]: one round trip,
/// connecting included, counted as the readiness ping's.
async fn answers(target: &RedisTarget) -> bool {
    let Ok(client) = target.client() else {
        return false;
    };
    let ping = async {
        let mut connection = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
    };
    let within = async {
        let late = || std::io::Error::from(std::io::ErrorKind::TimedOut).into();
        tokio::time::timeout(PING_WITHIN, ping)
            .await
            .unwrap_or_else(|_| Err(late()))
    };
    round_trips::timed(target.user(), within).await.is_ok()
}
