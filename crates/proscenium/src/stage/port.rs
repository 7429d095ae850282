//! Output ports, connectors and admission policies: how an event leaves a stage.

use std::any::TypeId;
use std::marker::PhantomData;

use super::definition::Payload;
pub use crate::wire::Event;
use crate::wire::{self, WireError};

/// A typed handle on an output port, named as Leda names ports: a handler emits `T`
/// through it with [`Context::send`](super::Context::send), so sending the wrong type
/// is a compile error.
///
/// [`Out::new`] takes only [`Event`]s (serializable), so its port may be bound by any
/// connector; [`Out::local`] takes any `Send` type (a socket, a file) and its port only
/// by `cohort` or `local` connectors, which stay in one cluster.
pub struct Out<T> {
    pub(crate) spec: PortSpec,
    event: PhantomData<fn(T)>,
}

impl<T: Event> Out<T> {
    /// Returns the port `name`, whose events may go through any connector.
    pub fn new(name: &'static str) -> Self {
        Self::with(name, Some(Codec::of::<T>()))
    }
}

impl<T: Send + 'static> Out<T> {
    /// Returns the port `name`, whose events stay in their cluster (`cohort` or
    /// `local` connectors only).
    pub fn local(name: &'static str) -> Self {
        Self::with(name, None)
    }

    fn with(name: &'static str, codec: Option<Codec>) -> Self {
        Self {
            spec: PortSpec {
                name,
                event: EventType::of::<T>(),
                codec,
            },
            event: PhantomData,
        }
    }

    /// Returns the port's name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }
}

impl<T> Clone for Out<T> {
    fn clone(&self) -> Self {
        Self {
            spec: self.spec,
            event: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Out<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Out").field(&self.spec.name).finish()
    }
}

/// A port as the graph sees it: a name and the type of its events, erased.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortSpec {
    pub(crate) name: &'static str,
    pub(crate) event: EventType,
    /// How its events cross processes; `None` for a local port.
    pub(crate) codec: Option<Codec>,
}

/// How a port's events, type-erased in the graph, are written for another process
/// and read back there: the [`Event`]'s serde, monomorphised when the port was made.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(any(test, feature = "redis")),
    expect(dead_code, reason = "only crossings encode")
)]
pub(crate) struct Codec {
    pub(crate) encode: fn(&Payload) -> Result<Vec<u8>, WireError>,
    pub(crate) decode: fn(&[u8]) -> Result<Payload, WireError>,
}

impl Codec {
    fn of<T: Event>() -> Self {
        Self {
            encode: |payload| match payload.downcast_ref::<T>() {
                Some(event) => wire::encode(event),
                None => Err(WireError::Encode(format!(
                    "not a {}",
                    std::any::type_name::<T>()
                ))),
            },
            decode: |bytes| wire::decode::<T>(bytes).map(|event| Box::new(event) as Payload),
        }
    }
}

impl std::fmt::Debug for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Codec")
    }
}

/// An event type, compared by id and named by its Rust name in errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
}

impl EventType {
    pub(crate) fn of<T: 'static>() -> Self {
        Self {
            id: TypeId::of::<T>(),
            name: std::any::type_name::<T>(),
        }
    }
}

/// Leda's three connector kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectorKind {
    /// The consumer runs at once on the sender's thread: a call, no queue.
    Cohort,
    /// An in-memory bounded queue inside one cluster (events may be local-only).
    Local,
    /// A bounded queue that may cross clusters (and, later, processes and hosts over
    /// Redis Streams); its events are [`Event`]s.
    #[default]
    Decoupled,
}

/// What a full queue does with one more event. None drops it silently.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Admission {
    /// The sender waits for room (backpressure).
    #[default]
    Block,
    /// The sender gets an error ([`StageError::is_rejected`](super::StageError::is_rejected)).
    Reject,
    /// At most `burst` events at once and `rate` per second on average are admitted;
    /// the rest, and any that find the queue full, are rejected.
    TokenBucket {
        /// Events per second, on average.
        rate: f64,
        /// Events admitted at once after a quiet spell.
        burst: u32,
    },
}

/// How an output port is bound to its consumer: a kind and an admission policy.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Connector {
    pub(crate) kind: ConnectorKind,
    pub(crate) admission: Admission,
}

impl Connector {
    /// Returns a `cohort` connector: the consumer runs on the sender's thread, once
    /// one of its instances is idle (so a cycle of cohort connectors back to a busy
    /// stateful stage waits forever: close cycles with a queue).
    pub fn cohort() -> Self {
        Self::of(ConnectorKind::Cohort)
    }

    /// Returns a `local` connector: a bounded queue inside the cluster.
    pub fn local() -> Self {
        Self::of(ConnectorKind::Local)
    }

    /// Returns a `decoupled` connector (the default): a bounded queue that may cross
    /// clusters.
    pub fn decoupled() -> Self {
        Self::of(ConnectorKind::Decoupled)
    }

    /// Returns this connector with `admission` applied when its consumer's queue is
    /// full (a `cohort` connector has no queue; its sender waits for an instance).
    pub fn admission(self, admission: Admission) -> Self {
        Self { admission, ..self }
    }

    /// Returns the connector's kind.
    pub fn kind(&self) -> ConnectorKind {
        self.kind
    }

    fn of(kind: ConnectorKind) -> Self {
        Self {
            kind,
            admission: Admission::Block,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_ports_codec_carries_its_erased_events_across_and_a_local_port_has_none() {
        let port = Out::<(String, u16)>::new("entries");
        let codec = port.spec.codec.expect("an Event's port has a codec");
        let event: Payload = Box::new(("10.0.0.7".to_owned(), 404_u16));
        let bytes = (codec.encode)(&event).unwrap();
        let back = (codec.decode)(&bytes).unwrap();
        assert_eq!(
            back.downcast_ref::<(String, u16)>(),
            Some(&("10.0.0.7".to_owned(), 404))
        );
        let wrong: Payload = Box::new(7_u8);
        assert!(matches!((codec.encode)(&wrong), Err(WireError::Encode(_))));
        assert!(Out::<std::fs::File>::local("file").spec.codec.is_none());
    }
}
