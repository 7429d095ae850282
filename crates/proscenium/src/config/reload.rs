//! What a SIGHUP may change in a running server: the configuration read again is
//! split into what takes effect at once and what waits for a restart.
//!
//! In one process the protocol of the loops and threads is rebuilt (see
//! `Http1::reload`): the limits a connection obeys, its body and idle timeouts, the
//! access log, HTTP/2's settings (not whether it is offered), compression (not the
//! static files' precompressed ones), HSTS and request ids.
//! The rest — listeners, the model and its threads, the app's routes and static
//! files, pools, the admin listener — was built at start and stays as it is. Under
//! `prefork` the workers are replaced and read the whole configuration themselves; the
//! supervisor keeps what it holds: the socket, the worker count, the admin and
//! plain-HTTP listeners, the shutdown timeout.

use serde_json::Value as Json;

use super::TlsSpec;
use super::sources::leaves;
use super::{CompressionSpec, Config, Http2Spec, Limits, Timeouts};

/// A configuration read again, settled against the running one.
#[derive(Debug)]
pub(crate) struct Settled {
    /// The configuration to run with: the new values of what reloads live, the
    /// running ones of the rest.
    pub(crate) config: Config,
    /// The keys (dotted) whose new value waits for a restart.
    pub(crate) kept: Vec<String>,
}

/// Settles `read`, the configuration read again, against `running`.
pub(crate) fn settle(running: &Config, read: Config) -> Settled {
    let before = serde_json::to_value(&read).unwrap_or(Json::Null);
    let config = if running.supervised() {
        supervisors_part(running, read)
    } else {
        live_part(running, read)
    };
    let after = serde_json::to_value(&config).unwrap_or(Json::Null);
    let settled: std::collections::HashMap<_, _> = leaves(&after, "").into_iter().collect();
    let kept = leaves(&before, "")
        .into_iter()
        .filter(|(key, value)| settled.get(key) != Some(value))
        .map(|(key, _)| key)
        .collect();
    Settled { config, kept }
}

/// One process: `running`, with what its protocol reads taken from `read`.
fn live_part(running: &Config, read: Config) -> Config {
    let mut live = running.clone();
    live.limits = Limits {
        // The connection cap and the waiting room's head size are the runtime's,
        // the static file cache the app's.
        max_connections: running.limits.max_connections,
        max_head: running.limits.max_head,
        static_cache: running.limits.static_cache,
        static_cache_file: running.limits.static_cache_file,
        ..read.limits
    };
    live.timeouts = Timeouts {
        body: read.timeouts.body,
        idle: read.timeouts.idle,
        ..running.timeouts.clone()
    };
    // `debug` also sets the process's log level, at start.
    live.log = read.log;
    // Whether HTTP/2 is offered is in the TLS settings made at start (ALPN).
    live.http2 = Http2Spec {
        enabled: running.http2.enabled,
        ..read.http2
    };
    // The static files were set up at start to look for precompressed files or not.
    live.compression = CompressionSpec {
        precompressed: running.compression.precompressed,
        ..read.compression
    };
    live.tls.hsts = read.tls.hsts;
    live.tls.hsts_subdomains = read.tls.hsts_subdomains;
    live.request_id = read.request_id;
    live
}

/// A supervisor: `read`, but for what the supervisor itself holds. The workers' model
/// is theirs, taken by the workers that replace them — unless only `prefork` made
/// this process a supervisor.
fn supervisors_part(running: &Config, read: Config) -> Config {
    Config {
        bind: running.bind,
        model: match running.workers {
            Some(_) => read.model,
            None => running.model,
        },
        workers: running.workers,
        admin: running.admin.clone(),
        log_format: running.log_format,
        tls: TlsSpec {
            plain: running.tls.plain.clone(),
            ..read.tls
        },
        timeouts: Timeouts {
            shutdown: running.timeouts.shutdown,
            ..read.timeouts
        },
        file: running.file.clone(),
        ..read
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Model;

    fn config(toml: &str) -> Config {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn live_keys_take_their_new_values_and_the_rest_are_named_and_kept() {
        let running = config("bind = \"127.0.0.1:3000\"\n[limits]\nmax_uri = 1024");
        let read = config(
            "bind = \"127.0.0.1:4000\"\nloops = 3\n[limits]\nmax_uri = 100\nmax_connections = 9",
        );
        let settled = settle(&running, read);
        assert_eq!(settled.config.limits.max_uri, 100);
        assert_eq!(settled.config.bind, running.bind);
        assert_eq!(settled.config.loops, None);
        assert_eq!(
            settled.kept,
            ["bind", "limits.max_connections", "loops"],
            "in key order"
        );
    }

    #[test]
    fn the_same_configuration_keeps_nothing() {
        let running = config("model = \"thread-pool\"\nlog = \"/tmp/a.log\"");
        let read = config("model = \"thread-pool\"\nlog = \"/tmp/b.log\"");
        let settled = settle(&running, read);
        assert!(settled.kept.is_empty(), "{:?}", settled.kept);
        assert_eq!(settled.config.log.unwrap().to_str(), Some("/tmp/b.log"));
    }

    #[test]
    fn a_prefork_supervisor_keeps_only_what_it_holds() {
        let running = config("model = \"prefork\"");
        let read = config("model = \"loops\"\nworkers = 4\nloops = 3\nroot = \"/srv\"");
        let settled = settle(&running, read);
        assert_eq!(settled.kept, ["model", "workers"]);
        assert_eq!(settled.config.loops, Some(3), "the workers' own");
        assert_eq!(settled.config.model, Model::Prefork);
    }

    #[test]
    fn issue39_a_supervisors_workers_take_a_new_model() {
        let running = config("workers = 2");
        let read = config("model = \"thread-pool\"\nworkers = 4");
        let settled = settle(&running, read);
        assert_eq!(settled.kept, ["workers"]);
        assert_eq!(settled.config.model, Model::ThreadPool);
        assert!(settled.config.supervised());
    }
}
