use std::io::Write;

use super::*;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn resolve_file(f: &tempfile::NamedTempFile) -> Result<Settings, ConfigError> {
    Settings::resolve(&Sources {
        file: Some(f.path().to_owned()),
        ..Sources::default()
    })
}

fn resolve_env(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    Settings::resolve(&Sources {
        env: env(pairs),
        ..Sources::default()
    })
}

fn resolve_flag(name: &str, key: &str, text: &str) -> Result<Settings, ConfigError> {
    Settings::resolve(&Sources {
        flags: vec![flag(name, key, text)],
        ..Sources::default()
    })
}

fn flag(name: &str, key: &str, text: &str) -> Flag {
    Flag {
        name: name.to_owned(),
        key: key.to_owned(),
        text: text.to_owned(),
    }
}

#[test]
fn defaults_then_app_then_file_then_env_then_flags() {
    let f = file("loops = 2\nworkers = 2\nblocking_threads = 3\n[limits]\nmax_body = 10\n");
    let mut sources = Sources {
        app_defaults: Some("loops = 1\nworkers = 1\nthreads = 7\n".into()),
        file: Some(f.path().to_owned()),
        env: env(&[
            ("PROSCENIUM_WORKERS", "3"),
            ("PROSCENIUM_BLOCKING_THREADS", "4"),
        ]),
        flags: vec![flag("--blocking-pool", "blocking_threads", "5")],
        ..Sources::default()
    };
    let s = Settings::resolve(&sources).unwrap();
    let c = &s.config;
    assert_eq!(
        (
            c.threads,
            c.loops,
            c.workers,
            c.blocking_threads,
            c.limits.max_body
        ),
        (Some(7), Some(2), Some(3), Some(5), 10)
    );
    assert_eq!(s.origin("threads"), &Origin::App);
    assert_eq!(
        s.origin("loops"),
        &Origin::File {
            path: f.path().to_owned(),
            line: 1
        }
    );
    assert_eq!(
        s.origin("limits.max_body"),
        &Origin::File {
            path: f.path().to_owned(),
            line: 5
        }
    );
    assert_eq!(
        s.origin("workers"),
        &Origin::Env("PROSCENIUM_WORKERS".into())
    );
    assert_eq!(
        s.origin("blocking_threads"),
        &Origin::Flag("--blocking-pool".into())
    );
    assert_eq!(s.origin("dispatch"), &Origin::Default);
    sources.flags.clear();
    assert_eq!(
        Settings::resolve(&sources).unwrap().config.blocking_threads,
        Some(4)
    );
}

#[test]
fn a_model_with_a_count_sets_the_count_from_the_same_source() {
    let sources = Sources {
        env: env(&[("PROSCENIUM_MODEL", "thread-pool:8")]),
        ..Sources::default()
    };
    let s = Settings::resolve(&sources).unwrap();
    assert_eq!(
        (s.config.model, s.config.threads),
        (super::super::Model::ThreadPool, Some(8))
    );
    assert_eq!(s.origin("threads"), &Origin::Env("PROSCENIUM_MODEL".into()));
    let f = file("model = \"prefork:3\"\n");
    let s = resolve_file(&f).unwrap();
    assert_eq!(s.config.workers, Some(3));
}

#[test]
fn bad_values_name_source_key_and_expectation() {
    let f = file("# a comment\n\nloops = \"two\"\n");
    let err = resolve_file(&f).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3: loops: expected a number from 1 to 1024, got \"two\"",
            f.path().display()
        )
    );
    let err = resolve_env(&[("PROSCENIUM_LIMITS_MAX_HEADERS", "0")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "PROSCENIUM_LIMITS_MAX_HEADERS: expected a number from 1 to 10000, got 0"
    );
    let err = resolve_flag("--bind", "bind", "3000").unwrap_err();
    assert!(
        err.to_string().starts_with("--bind: expected an address"),
        "{err}"
    );
    let err = resolve_flag("--model", "model", "fibers").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("--model: unknown model `fibers`"),
        "{err}"
    );
}

#[test]
fn unknown_keys_and_variables_are_refused_with_a_suggestion() {
    let f = file("loops = 1\n[limits]\nmax_bdy = 5\n");
    let err = resolve_file(&f).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3: limits.max_bdy: no such setting, did you mean `max_body`?",
            f.path().display()
        )
    );
    let err = resolve_env(&[("PROSCENIUM_LOPS", "2"), ("PROSCENIUM_WORKER", "1")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "PROSCENIUM_LOPS: no such setting, did you mean `PROSCENIUM_LOOPS`?"
    );
    let f = file("[pools.images]\nthread = 2\n");
    let err = resolve_file(&f).unwrap_err();
    assert!(err.to_string().contains("threads"), "{err}");
}

#[test]
fn a_syntax_error_names_its_line_and_a_named_file_must_exist() {
    let f = file("loops = 1\nbind = \n");
    let err = resolve_file(&f).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}:2: ", f.path().display())),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'), "{err}");
    let err = resolve_env(&[("PROSCENIUM_CONFIG", "/no/such.toml")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "PROSCENIUM_CONFIG: /no/such.toml: no such file"
    );
}

#[test]
fn named_tables_come_from_files_and_entries_list_every_value() {
    let f =
        file("[pools.images]\nthreads = 2\n[dispatchers.mailer]\nkind = \"pool\"\nthreads = 2\n");
    let dir = f.path().parent().unwrap().to_owned();
    let s = Settings::resolve(&Sources {
        file: Some(f.path().to_owned()),
        search: vec![dir],
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.config.pools["images"], super::super::PoolSpec::threads(2));
    let entries = s.entries();
    let images = entries
        .iter()
        .find(|e| e.key == "pools.images.threads")
        .unwrap();
    assert_eq!(images.value.as_deref(), Some("2"));
    assert!(matches!(images.origin, Origin::File { line: 2, .. }));
    let bind = entries.iter().find(|e| e.key == "bind").unwrap();
    assert_eq!(
        (bind.value.as_deref(), &bind.origin),
        (Some("\"127.0.0.1:3000\""), &Origin::Default)
    );
    assert!(
        entries
            .iter()
            .any(|e| e.key == "loops" && e.value.is_none())
    );
}

#[test]
fn stage_clusters_come_from_files_and_a_misspelt_key_is_refused() {
    let f = file(
        "[clusters.extrusion]\nstages = [\"extrusion\"]\nthreads = 4\ninstances = { extrusion = 4 }\n",
    );
    let s = resolve_file(&f).unwrap();
    let extrusion = &s.config.clusters["extrusion"];
    assert_eq!(
        (extrusion.threads, extrusion.instances["extrusion"]),
        (Some(4), 4)
    );
    let f = file("[clusters.extrusion]\nthread = 4\n");
    let err = resolve_file(&f).unwrap_err();
    assert!(err.to_string().contains("thread"), "{err}");
}

#[test]
#[cfg(feature = "redis")]
fn redis_and_the_processes_come_from_a_file_or_the_environment() {
    let f = file(
        "[redis]\nurl = \"redis://127.0.0.1:6380\"\n\
         [processes.correlate]\nclusters = [\"correlate\"]\nhost = \"h2\"\n\
         [processes.main]\nclusters = [\"sources\", \"main\"]\n",
    );
    let s = resolve_file(&f).unwrap();
    assert_eq!(
        s.config.redis.url.as_deref(),
        Some("redis://127.0.0.1:6380")
    );
    let correlate = &s.config.processes["correlate"];
    assert_eq!(
        (correlate.clusters.as_slice(), correlate.host.as_str()),
        (&["correlate".to_owned()][..], "h2")
    );
    assert_eq!(s.config.processes["main"].host, "localhost");
    let s = resolve_env(&[("PROSCENIUM_REDIS_URL", "redis://10.0.0.9")]).unwrap();
    assert_eq!(s.config.redis.url.as_deref(), Some("redis://10.0.0.9"));
    assert!(
        Settings::resolve(&Sources::default())
            .unwrap()
            .config
            .redis
            .url
            .is_none()
    );
}

#[test]
fn a_redis_url_is_read_only_by_a_build_with_redis() {
    let resolved = resolve_env(&[("PROSCENIUM_REDIS_URL", "redis://10.0.0.9")]);
    let refused = resolved.err();
    assert_eq!(refused.is_some(), !cfg!(feature = "redis"), "{refused:?}");
    if let Some(e) = refused {
        let text = e.to_string();
        assert!(
            text.contains("PROSCENIUM_REDIS_URL") && text.contains("`redis` feature"),
            "{text}"
        );
    }
}

#[test]
#[cfg(feature = "redis")]
fn a_redis_url_that_is_not_one_and_a_misspelt_process_key_are_refused_by_name() {
    let err = resolve_env(&[("PROSCENIUM_REDIS_URL", "localhost:6379")]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("PROSCENIUM_REDIS_URL") && text.contains("redis://"),
        "{text}"
    );
    let f = file("[processes.correlate]\ncluster = [\"correlate\"]\n");
    let err = resolve_file(&f).unwrap_err();
    assert!(err.to_string().contains("cluster"), "{err}");
    let f = file("[redis]\nurls = \"redis://x\"\n");
    let err = resolve_file(&f).unwrap_err();
    assert!(err.to_string().contains("did you mean"), "{err}");
}

#[test]
#[cfg(all(feature = "redis", feature = "tls"))]
fn issue34_ca_files_are_read_relative_to_their_file_and_a_missing_one_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    crate::testing::TestCa::new().write(dir.path());
    let config = dir.path().join("proscenium.toml");
    std::fs::write(
        &config,
        "[client]\nca = \"ca.pem\"\n[redis]\nurl = \"rediss://127.0.0.1\"\nca = \"ca.pem\"\n\
         [feeds]\nredis = \"rediss://127.0.0.1\"\nca = \"ca.pem\"\n",
    )
    .unwrap();
    let s = Settings::resolve(&Sources {
        file: Some(config),
        ..Sources::default()
    })
    .unwrap();
    let cas = [&s.config.client.ca, &s.config.redis.ca, &s.config.feeds.ca];
    for ca in cas {
        assert_eq!(ca.as_ref().unwrap().path(), dir.path().join("ca.pem"));
    }
    let err = resolve_env(&[("PROSCENIUM_CLIENT_CA", "/nowhere/ca.pem")]).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("PROSCENIUM_CLIENT_CA") && text.contains("/nowhere/ca.pem"),
        "{text}"
    );
}

#[test]
fn issue37_port_binds_every_interface_where_no_other_source_names_the_address() {
    let port = |more: &[(&str, &str)]| {
        let mut vars = vec![("PORT", "8080")];
        vars.extend_from_slice(more);
        env(&vars)
    };
    let s = resolve_env(&[("PORT", "8080")]).unwrap();
    assert_eq!(s.config.bind.to_string(), "0.0.0.0:8080");
    assert_eq!(s.origin("bind"), &Origin::Env("PORT".into()));
    // Over the app's defaults, under everything else.
    let s = Settings::resolve(&Sources {
        app_defaults: Some("bind = \"127.0.0.1:4000\"\n".into()),
        env: port(&[]),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.config.bind.to_string(), "0.0.0.0:8080");
    let f = file("bind = \"127.0.0.1:4000\"\n");
    let s = Settings::resolve(&Sources {
        file: Some(f.path().to_owned()),
        env: port(&[]),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.config.bind.to_string(), "127.0.0.1:4000");
    let s = resolve_env(&[("PORT", "8080"), ("PROSCENIUM_BIND", "127.0.0.1:4001")]).unwrap();
    assert_eq!(s.config.bind.to_string(), "127.0.0.1:4001");
    let s = Settings::resolve(&Sources {
        env: port(&[]),
        flags: vec![flag("--set bind", "bind", "127.0.0.1:4002")],
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.config.bind.to_string(), "127.0.0.1:4002");
    // A malformed PORT stops the start where it would be used, not where it is not.
    for bad in ["http", "", "65536", "-1", "80.5"] {
        let err = resolve_env(&[("PORT", bad)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("PORT: expected a port from 0 to 65535, got {bad:?}")
        );
    }
    let s = Settings::resolve(&Sources {
        env: env(&[("PORT", "http")]),
        flags: vec![flag("--bind", "bind", "127.0.0.1:4003")],
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(s.config.bind.to_string(), "127.0.0.1:4003");
}

#[test]
fn issue37_set_flags_take_any_key_as_the_file_writes_it_and_name_a_bad_one() {
    let s = Settings::resolve(&Sources {
        env: env(&[("PROSCENIUM_TIMEOUTS_IDLE", "5")]),
        flags: vec![
            flag("--set timeouts.idle", "timeouts.idle", "90s"),
            flag("--set limits.max_body", "limits.max_body", "8MiB"),
            flag("--set dispatchers.d.threads", "dispatchers.d.threads", "2"),
            flag(
                "--set compression.types",
                "compression.types",
                "[\"text/*\"]",
            ),
            flag(
                "--set cgi.interpreters",
                "cgi.interpreters",
                "{ py = \"python3\" }",
            ),
            flag("--set model", "model", "loops:3"),
            flag("--set bind", "bind", "\"127.0.0.1:4005\""),
            flag("--set limits.spool_above", "limits.spool_above", "'1MiB'"),
        ],
        ..Sources::default()
    })
    .unwrap();
    let c = &s.config;
    assert_eq!(c.timeouts.idle, std::time::Duration::from_secs(90));
    assert_eq!(c.limits.max_body, 8 << 20);
    assert_eq!(c.dispatchers["d"].threads, Some(2));
    assert_eq!(c.compression.types, ["text/*"]);
    assert_eq!(c.cgi.interpreters["py"], "python3");
    assert_eq!(c.loops, Some(3));
    assert_eq!(c.bind.to_string(), "127.0.0.1:4005");
    assert_eq!(c.limits.spool_above, 1 << 20);
    assert_eq!(
        s.origin("timeouts.idle"),
        &Origin::Flag("--set timeouts.idle".into())
    );
    for (key, text, expected) in [
        (
            "limits.max_bdy",
            "1",
            "--set limits.max_bdy: no such setting, did you mean `max_body`?",
        ),
        (
            "limit.max_body",
            "1",
            "--set limit.max_body: no such setting, did you mean `limits`?",
        ),
        (
            "timeouts.idle",
            "soon",
            "--set timeouts.idle: expected seconds from 0.001 to 86400 (1ms to 1d) as a number, or a duration such as \"250ms\", \"10s\", \"1m30s\", \"2h\", got \"soon\"",
        ),
        (
            "limits.max_body",
            "8M",
            "--set limits.max_body: expected bytes from 0 to 1099511627776 (0B to 1TiB) as a number, or a size such as \"64KiB\", \"8MiB\", \"1GB\", got \"8M\"",
        ),
    ] {
        let err = resolve_flag(&format!("--set {key}"), key, text).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
}

/// Issue 37: `config` prints each value as TOML that reads back as the same value,
/// durations and sizes as text.
#[test]
fn issue37_what_config_prints_reads_back_as_the_same_configuration() {
    let s = Settings::resolve(&Sources {
        env: env(&[
            ("PROSCENIUM_TIMEOUTS_HEADER", "2.5"),
            ("PROSCENIUM_LIMITS_SPOOL_ABOVE", "1536"),
            ("PROSCENIUM_TLS_HSTS", "1d"),
        ]),
        ..Sources::default()
    })
    .unwrap();
    let printed: String = s
        .entries()
        .iter()
        .filter_map(|e| Some(format!("{} = {}\n", e.key, e.value.as_ref()?)))
        .collect();
    for line in [
        "timeouts.header = \"2.5s\"\n",
        "timeouts.stall = \"100ms\"\n",
        "limits.max_body = \"8MiB\"\n",
        "limits.spool_above = \"1536B\"\n",
        "tls.hsts = \"1d\"\n",
    ] {
        assert!(printed.contains(line), "{line} not in {printed}");
    }
    let again = resolve_file(&file(&printed)).unwrap();
    assert_eq!(
        serde_json::to_value(&again.config).unwrap(),
        serde_json::to_value(&s.config).unwrap()
    );
}
