//! The process's own log and its traces: the `tracing` subscriber [`main`](super::main)
//! installs. The log goes to stderr (text or JSON, `log_format`); with `[traces] otlp`
//! the spans go to that collector as well — each request's (target
//! `proscenium::request`, made only then: with no collector the request path makes no
//! span), each stage event's (`proscenium::stage`), each actor message's
//! (`proscenium::actor`) and the app's own at `info` and up —
//! batched on the OpenTelemetry SDK's thread,
//! apart from the loops, and flushed when the process ends.

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
#[cfg(feature = "traces")]
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
#[cfg(feature = "traces")]
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::actor::ACTOR_SPANS;
use crate::config::{ConfigError, LogFormat, Settings, TracesSpec};
use crate::http::REQUEST_SPANS;
use crate::stage::STAGE_SPANS;

/// What exports the spans, kept until the process ends so the last batch is sent.
#[must_use = "dropping it stops the export before the last spans are sent"]
pub(super) struct Traces(Option<SdkTracerProvider>);

impl Traces {
    /// Sends what is batched and stops the export.
    pub(super) fn finish(self) {
        if let Some(provider) = self.0
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!("traces: the last spans were not all sent: {e}");
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
    let (provider, spans) = match traces
        .otlp
        .as_deref()
        .map(|url| exporter(url, traces, service))
    {
        Some(Ok(provider)) => {
            let tracer = provider.tracer("proscenium");
            let wanted = Targets::new()
                .with_target(REQUEST_SPANS, LevelFilter::TRACE)
                .with_target(STAGE_SPANS, LevelFilter::TRACE)
                .with_target(ACTOR_SPANS, LevelFilter::TRACE)
                .with_default(LevelFilter::INFO);
            let layer = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_location(false)
                .with_tracked_inactivity(false)
                .with_filter(wanted);
            (Some(provider), Some(layer))
        }
        Some(Err(e)) => {
            eprintln!("traces: {e}; no spans are exported");
            (None, None)
        }
        None => (None, None),
    };
    let _ = Registry::default()
        .with(log.with_filter(filter))
        .with(spans)
        .try_init();
    Traces(provider)
}

#[cfg(feature = "traces")]
fn exporter(
    url: &str,
    traces: &TracesSpec,
    service: &str,
) -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()?;
    let name = traces.service.clone().unwrap_or_else(|| service.to_owned());
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(name).build())
        .build())
}

/// The stand-in without the `traces` feature, where `check` refuses `[traces] otlp`.
#[cfg(not(feature = "traces"))]
fn exporter(_: &str, _: &TracesSpec, _: &str) -> Result<SdkTracerProvider, &'static str> {
    Err("this build leaves out the `traces` feature")
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
