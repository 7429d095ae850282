//! The registry of named actors in Redis: one key per name holding the id of the node
//! whose actor has it, set to expire after three heartbeats and renewed at each. A
//! name is taken and renewed by one script (only while free or already the node's),
//! and let go by another (only while still the node's), so two nodes never both hold
//! a name — one that lost it for a while finds it taken, and says so.

use std::time::Duration;

use crate::stream::Connection;

/// Sets `KEYS[1]` to `ARGV[1]` for `ARGV[2]` ms if it is unset or already that.
const TAKE: &str = "local v = redis.call('GET', KEYS[1]) \
    if v == false or v == ARGV[1] then \
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 \
    end return 0";

/// Deletes `KEYS[1]` if it is `ARGV[1]`.
const LET_GO: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
        return redis.call('DEL', KEYS[1]) \
    end return 0";

/// Takes (or renews) `key` for `node` for `ttl`; returns whether the node holds it.
pub(super) async fn take(
    redis: &mut Connection,
    key: &str,
    node: &str,
    ttl: Duration,
) -> redis::RedisResult<bool> {
    let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
    redis::cmd("EVAL")
        .arg(TAKE)
        .arg(1)
        .arg(key)
        .arg(node)
        .arg(millis)
        .query_async(redis)
        .await
}

/// Lets go of `key` if `node` holds it.
pub(super) async fn let_go(
    redis: &mut Connection,
    key: &str,
    node: &str,
) -> redis::RedisResult<()> {
    let _: u64 = redis::cmd("EVAL")
        .arg(LET_GO)
        .arg(1)
        .arg(key)
        .arg(node)
        .query_async(redis)
        .await?;
    Ok(())
}

/// The node holding each of `keys` now, if any.
pub(super) async fn holders(
    redis: &mut Connection,
    keys: &[String],
) -> redis::RedisResult<Vec<Option<String>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    redis::cmd("MGET").arg(keys).query_async(redis).await
}
