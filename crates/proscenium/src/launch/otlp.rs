//! The OTLP export of spans (`traces`): batched on the OpenTelemetry SDK's thread,
//! apart from the loops, sent to the collector over HTTP as protobuf, and flushed when
//! the process ends. `no_otlp.rs` stands in without the feature.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{ExporterBuildError, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

use crate::actor::ACTOR_SPANS;
use crate::config::TracesSpec;
use crate::http::REQUEST_SPANS;
use crate::stage::STAGE_SPANS;

/// The spans' way to a collector.
pub(super) struct Export(SdkTracerProvider);

impl Export {
    /// Starts the export to the collector at `url`, the spans' service named as
    /// `traces` says, else `service`.
    pub(super) fn start(
        url: &str,
        traces: &TracesSpec,
        service: &str,
    ) -> Result<Self, ExporterBuildError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .build()?;
        let name = traces.service.clone().unwrap_or_else(|| service.to_owned());
        Ok(Self(
            SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(Resource::builder().with_service_name(name).build())
                .build(),
        ))
    }

    /// The subscriber's layer that hands it the request, stage and actor spans and
    /// the app's own at `info` and up.
    pub(super) fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let wanted = Targets::new()
            .with_target(REQUEST_SPANS, LevelFilter::TRACE)
            .with_target(STAGE_SPANS, LevelFilter::TRACE)
            .with_target(ACTOR_SPANS, LevelFilter::TRACE)
            .with_default(LevelFilter::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(self.0.tracer("proscenium"))
            .with_location(false)
            .with_tracked_inactivity(false)
            .with_filter(wanted)
    }

    /// Sends what is batched and stops.
    pub(super) fn finish(self) {
        if let Err(e) = self.0.shutdown() {
            tracing::warn!("traces: the last spans were not all sent: {e}");
        }
    }
}
