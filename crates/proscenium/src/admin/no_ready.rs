//! The stand-in for `/readyz`'s watch of Redis in a build without the `redis`
//! feature, where no Redis can be configured: there is none to watch.

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::Config;

/// The reach of a Redis, of which this build has none.
#[derive(Debug)]
pub(crate) enum RedisReach {}

impl RedisReach {
    pub(crate) fn is_reachable(&self) -> bool {
        match *self {}
    }
}

/// None: no Redis to watch.
pub(crate) fn watch_redis(
    _: &Config,
    _: watch::Receiver<bool>,
) -> std::io::Result<Option<(Arc<RedisReach>, JoinHandle<()>)>> {
    Ok(None)
}
