//! A small OTLP/HTTP collector on a loopback port of its own: every export it is sent
//! (protobuf, as `[traces] otlp` sends) is decoded and its spans kept, for a test to
//! look at what a process exported.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

/// A span as the collector got it: its name, ids (in hex; the parent's empty for a
/// root), attributes as text, and its resource's `service.name`.
#[derive(Debug, Clone)]
pub struct ExportedSpan {
    /// The span's name.
    pub name: String,
    /// Its trace's id.
    pub trace_id: String,
    /// Its own id.
    pub span_id: String,
    /// Its parent's id; empty for a root.
    pub parent_span_id: String,
    /// Its attributes, their values as text.
    pub attributes: Vec<(String, String)>,
    /// Its resource's `service.name`.
    pub service: String,
}

impl ExportedSpan {
    /// Returns the attribute `key`'s value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A running collector; it serves until the test process ends.
#[derive(Debug, Clone)]
pub struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<ExportedSpan>>>,
}

impl Collector {
    /// Starts one on a port the kernel picks.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/v1/traces", listener.local_addr().expect("bound"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Self { url, spans }
    }

    /// Returns the URL of its traces endpoint, for `[traces] otlp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Writes `dir/proscenium.toml` exporting to this collector and returns its
    /// path, for an app's `--config`.
    ///
    /// # Panics
    ///
    /// If the file cannot be written.
    pub fn config_in(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let config = dir.join("proscenium.toml");
        std::fs::write(&config, format!("[traces]\notlp = \"{}\"\n", self.url))
            .expect("the configuration is written");
        config
    }

    /// Returns the spans received so far.
    ///
    /// # Panics
    ///
    /// If a thread serving an export panicked while keeping its spans.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        self.spans.lock().expect("the spans").clone()
    }
}

/// Answers each export on one connection with 200 and an empty answer; stops at the
/// first that is not a well-formed export (a test then sees spans missing).
fn serve(stream: TcpStream, kept: &Mutex<Vec<ExportedSpan>>) {
    let Ok(reading) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reading);
    let mut writer = stream;
    while let Some(body) = read_request(&mut reader) {
        let Ok(export) = ExportTraceServiceRequest::decode(&body[..]) else {
            return;
        };
        keep(export, kept);
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Reads one request's head and returns its body; `None` at the connection's end.
fn read_request(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut length = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

fn keep(export: ExportTraceServiceRequest, kept: &Mutex<Vec<ExportedSpan>>) {
    let Ok(mut kept) = kept.lock() else {
        return;
    };
    for resource in export.resource_spans {
        let attributes = text(&resource.resource.map(|r| r.attributes).unwrap_or_default());
        let service = attributes
            .iter()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        for span in resource.scope_spans.into_iter().flat_map(|s| s.spans) {
            kept.push(ExportedSpan {
                name: span.name,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent_span_id: hex(&span.parent_span_id),
                attributes: text(&span.attributes),
                service: service.clone(),
            });
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::StringValue(s)) => s.clone(),
                Some(Value::IntValue(n)) => n.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}
