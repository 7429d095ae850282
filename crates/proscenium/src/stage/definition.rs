//! A stage as written: a name, a role, an optional per-instance `init`, a handler and
//! its output ports — Leda's `leda.stage{handler, init, autostart, stateful}`, typed.

use std::any::Any;
use std::sync::Arc;

use super::context::Context;
use super::error::StageError;
use super::port::{EventType, Out, PortSpec};

/// An event on its way through a queue, its type erased (the graph checked it).
pub(crate) type Payload = Box<dyn Any + Send>;

/// How a stage's instances are made and scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// One instance; events strictly one at a time; its state kept.
    Stateful,
    /// N instances (from the cluster's configuration) run in parallel.
    Stateless,
    /// No input: each instance's handler runs once at start (Leda's `autostart`).
    Source,
}

/// One instance: its state and the handler that takes it.
pub(crate) trait Instance: Send {
    /// Handles one event (`None` for a source's one run).
    fn run(&mut self, event: Option<Payload>, ctx: &mut Context<'_>) -> Result<(), StageError>;
}

/// The handler of a stage with state `S`, taking erased events.
type ErasedHandler<S> =
    dyn Fn(&mut S, Option<Payload>, &mut Context<'_>) -> Result<(), StageError> + Send + Sync;

struct Instanced<S> {
    state: S,
    handler: Arc<ErasedHandler<S>>,
}

impl<S: Send> Instance for Instanced<S> {
    fn run(&mut self, event: Option<Payload>, ctx: &mut Context<'_>) -> Result<(), StageError> {
        (self.handler)(&mut self.state, event, ctx)
    }
}

/// A stage of a graph, before the graph runs.
///
/// Its handler is sync and runs on its cluster's threads. (Async handlers, run on a
/// loop, are to be one more kind of instance behind the same scheduling; nothing
/// here assumes sync.)
pub struct Stage {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) input: Option<EventType>,
    pub(crate) outputs: Vec<PortSpec>,
    pub(crate) instance: Arc<dyn Fn() -> Box<dyn Instance> + Send + Sync>,
}

impl Stage {
    /// Returns a stateful stage: one instance made by `init`, handling events of type
    /// `E` strictly one at a time.
    pub fn stateful<S, E, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: Fn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        Self::taking(name, Role::Stateful, init, handler)
    }

    /// Returns a stateless stage: as many instances as its cluster's configuration
    /// says (default 1), each made by `init`, run in parallel.
    pub fn stateless<S, E, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: Fn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        Self::taking(name, Role::Stateless, init, handler)
    }

    /// Returns a source (Leda's `autostart`): no input; each instance, made by `init`,
    /// runs `handler` once when the graph starts. A long-running source returns when
    /// [`Context::is_stopping`] says so.
    pub fn source<S, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: Fn(&mut S, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        let erased =
            move |state: &mut S, _: Option<Payload>, ctx: &mut Context<'_>| handler(state, ctx);
        Self::erased(name, Role::Source, None, init, Arc::new(erased))
    }

    /// Returns this stage with the output port `port`.
    #[must_use]
    pub fn output<T>(mut self, port: &Out<T>) -> Self {
        self.outputs.push(port.spec);
        self
    }

    fn taking<S, E, I, H>(name: &str, role: Role, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: Fn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        let stage = name.to_owned();
        let erased = move |state: &mut S, event: Option<Payload>, ctx: &mut Context<'_>| {
            match event.map(|event| event.downcast::<E>()) {
                Some(Ok(event)) => handler(state, *event, ctx),
                // The graph compared every port's type with this input when it was
                // built, so only a bug in the stage layer lands here.
                _ => Err(StageError::handler(format!(
                    "stage `{stage}` was given an event that is not a {}",
                    std::any::type_name::<E>()
                ))),
            }
        };
        Self::erased(
            name,
            role,
            Some(EventType::of::<E>()),
            init,
            Arc::new(erased),
        )
    }

    fn erased<S, I>(
        name: &str,
        role: Role,
        input: Option<EventType>,
        init: I,
        handler: Arc<ErasedHandler<S>>,
    ) -> Self
    where
        S: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
    {
        Self {
            name: name.to_owned(),
            role,
            input,
            outputs: Vec::new(),
            instance: Arc::new(move || {
                Box::new(Instanced {
                    state: init(),
                    handler: handler.clone(),
                })
            }),
        }
    }
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage")
            .field("name", &self.name)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}
