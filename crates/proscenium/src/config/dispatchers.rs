//! Dispatchers as `proscenium.toml` names them (`[dispatchers.NAME]`): which kind runs
//! an actor and how many threads it has; [`System`](crate::actor::System) runs them.

/// How a dispatcher runs its actors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatcherKind {
    /// On the server loop that spawns the actor (the default).
    #[default]
    Loops,
    /// On a pool of `threads` threads.
    Pool,
    /// Each actor on a thread of its own.
    Pinned,
}

/// A dispatcher as `proscenium.toml` describes it (`[dispatchers.NAME]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSpec {
    /// How it runs actors.
    #[serde(default)]
    pub kind: DispatcherKind,
    /// Threads of a `pool` (default: one per core).
    #[serde(
        default,
        deserialize_with = "crate::config::value::some_count::<_, 1, 10_000>"
    )]
    pub threads: Option<usize>,
    /// Messages an actor handles in one turn before letting others on its thread run
    /// (default 5, as Akka's).
    #[serde(
        default,
        deserialize_with = "crate::config::value::some_count::<_, 1, 1_000_000>"
    )]
    pub throughput: Option<usize>,
}

impl DispatcherSpec {
    /// A pool of `threads` threads.
    pub fn pool(threads: usize) -> Self {
        Self {
            kind: DispatcherKind::Pool,
            threads: Some(threads),
            throughput: None,
        }
    }
}
