//! The process's own log and its traces: the `tracing` subscriber [`main`](super::main)
//! installs. The log goes to stderr (text or JSON, `log_format`); with `[traces] otlp`
//! the spans go to that collector as well (`otlp.rs`) — each request's (target
//! `proscenium::request`, made only then: with no collector the request path makes no
//! span), each stage event's (`proscenium::stage`), each actor message's
//! (`proscenium::actor`) and the app's own at `info` and up.

use std::io::IsTerminal;

use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use super::otlp::Export;
use crate::config::{ConfigError, LogFormat, Settings, TracesSpec};

/// What exports the spans, kept until the process ends so the last batch is sent.
#[must_use = "dropping it stops the export before the last spans are sent"]
pub(super) struct Traces(Option<Export>);

impl Traces {
    /// Sends what is batched and stops the export.
    pub(super) fn finish(self) {
        if let Some(export) = self.0 {
            export.finish();
        }
    }
}

/// Installs the subscriber: messages to stderr, `debug` and up with `debug`, else
/// `info` and up, `RUST_LOG` overriding; as text (colours only on a terminal: a file or
/// a journal gets plain lines) or one JSON object a line; and the spans to `traces`'
/// collector, named `service`. An app that set its own subscriber keeps it.
pub(super) fn init(debug: bool, format: LogFormat, traces: &TracesSpec, service: &str) -> Traces {
    let default = if debug { "debug" } else { "info" };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let log = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let log = match format {
        LogFormat::Text => log.with_ansi(std::io::stderr().is_terminal()).boxed(),
        LogFormat::Json => log.json().boxed(),
    };
    let export = match traces
        .otlp
        .as_deref()
        .map(|url| Export::start(url, traces, service))
    {
        Some(Ok(export)) => Some(export),
        Some(Err(e)) => {
            eprintln!("traces: {e}; no spans are exported");
            None
        }
        None => None,
    };
    let _ = Registry::default()
        .with(log.with_filter(filter))
        .with(export.as_ref().map(Export::layer))
        .try_init();
    Traces(export)
}

/// A collector's address must be an `http://` or `https://` URL with a host, and the
/// build must have the `traces` feature.
pub(super) fn check(settings: Settings) -> Result<Settings, ConfigError> {
    let Some(url) = &settings.config.traces.otlp else {
        return Ok(settings);
    };
    if !cfg!(feature = "traces") {
        return Err(ConfigError {
            origin: settings.origin("traces.otlp").clone(),
            key: Some("traces.otlp".to_owned()),
            message: "exports spans, which this build leaves out: build proscenium with its \
                      `traces` feature"
                .to_owned(),
        });
    }
    let uri: Result<http::Uri, _> = url.parse();
    let fine = uri.is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https")) && uri.authority().is_some()
    });
    if fine {
        return Ok(settings);
    }
    Err(ConfigError {
        origin: settings.origin("traces.otlp").clone(),
        key: Some("traces.otlp".to_owned()),
        message: format!("{url:?} is not an http:// or https:// URL of a collector"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sources;

    fn checked(otlp: &str) -> Result<Settings, ConfigError> {
        let env = vec![("PROSCENIUM_TRACES_OTLP".to_owned(), otlp.to_owned())];
        check(Settings::resolve(&Sources {
            env,
            ..Sources::default()
        })?)
    }

    #[test]
    fn a_collector_is_refused_by_name_when_not_a_url_or_not_built_in() {
        let refused = checked("http://127.0.0.1:4318").err();
        assert_eq!(refused.is_some(), !cfg!(feature = "traces"), "{refused:?}");
        if let Some(e) = refused {
            assert!(e.to_string().contains("`traces` feature"), "{e}");
        }
        let e = checked("ftp://collector").unwrap_err().to_string();
        assert!(e.contains("PROSCENIUM_TRACES_OTLP"), "{e}");
    }
}
