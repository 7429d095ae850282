//! A stage as written: a name, a role, an optional per-instance `init`, a handler and
//! its output ports — Leda's `leda.stage{handler, init, autostart, stateful}`, typed.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use futures_util::future::LocalBoxFuture;

use super::context::Context;
use super::error::StageError;
use super::idempotent::{Repeats, repeats};
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

/// What a handler's run gives: its outcome, or (an async handler) the future of it,
/// which the thread's loop runs.
pub(crate) enum Handled<'a> {
    Now(Result<(), StageError>),
    Later(LocalBoxFuture<'a, Result<(), StageError>>),
}

/// One instance: its state and the handler that takes it.
pub(crate) trait Instance: Send {
    /// Handles one event (`None` for a source's one run).
    fn run<'a>(&'a mut self, event: Option<Payload>, ctx: &'a mut Context<'a>) -> Handled<'a>;
}

/// The handler of a stage with state `S`, taking erased events.
type ErasedHandler<S> =
    dyn Fn(&mut S, Option<Payload>, &mut Context<'_>) -> Result<(), StageError> + Send + Sync;

struct Instanced<S> {
    state: S,
    handler: Arc<ErasedHandler<S>>,
}

impl<S: Send> Instance for Instanced<S> {
    fn run<'a>(&'a mut self, event: Option<Payload>, ctx: &'a mut Context<'a>) -> Handled<'a> {
        Handled::Now((self.handler)(&mut self.state, event, ctx))
    }
}

/// An instance of an async stage: its state and its handler, whose future borrows
/// both until it completes.
struct AsyncInstanced<S, E, H> {
    stage: Arc<str>,
    state: S,
    handler: Arc<H>,
    event: PhantomData<fn(E)>,
}

impl<S, E, H> Instance for AsyncInstanced<S, E, H>
where
    S: Send + 'static,
    E: Send + 'static,
    H: AsyncFn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
{
    fn run<'a>(&'a mut self, event: Option<Payload>, ctx: &'a mut Context<'a>) -> Handled<'a> {
        Handled::Later(Box::pin(async move {
            let event = typed::<E>(&self.stage, event)?;
            (self.handler)(&mut self.state, event, ctx).await
        }))
    }
}

/// Returns `event` as the `E` the stage takes (a source's one run takes `()`).
fn typed<E: 'static>(stage: &str, event: Option<Payload>) -> Result<E, StageError> {
    let event: Payload = event.unwrap_or_else(|| Box::new(()));
    event.downcast::<E>().map(|event| *event).map_err(|_| {
        // The graph compared every port's type with this input when it was built,
        // so only a bug in the stage layer lands here.
        StageError::handler(format!(
            "stage `{stage}` was given an event that is not a {}",
            std::any::type_name::<E>()
        ))
    })
}

/// A stage of a graph, before the graph runs.
///
/// Its handler is sync, run on one of its cluster's threads until it returns, or async
/// ([`stateful_async`](Self::stateful_async) and its kin), run on a thread's loop:
/// while it awaits, the thread runs other instances. Either way an instance handles
/// one event at a time.
pub struct Stage {
    pub(crate) name: String,
    pub(crate) role: Role,
    pub(crate) asynchronous: bool,
    pub(crate) input: Option<EventType>,
    pub(crate) outputs: Vec<PortSpec>,
    pub(crate) instance: Arc<dyn Fn() -> Box<dyn Instance> + Send + Sync>,
    /// Idempotent: whether an event repeats one taken within the window.
    pub(crate) repeats: Option<Repeats>,
    /// A declaration that does not fit the stage, found when the graph starts.
    pub(crate) misdeclared: Option<String>,
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

    /// Returns this stage made idempotent by `key`: an event whose key is among the
    /// last `window` keys it took is a duplicate, dropped without running the handler
    /// (acknowledged, and counted in its `duplicates`). Between processes delivery is
    /// at-least-once — what a process that died had taken is delivered again — so a
    /// stage whose effect must happen once (a sum, a mail) names what makes an event
    /// the same event. The window is this process's, shared by the stage's instances
    /// here: map the stage to one process for duplicates from anywhere to meet it.
    ///
    /// `E` must be the stage's input type; a stage that takes another is refused when
    /// the graph starts.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::stage::Stage;
    ///
    /// let sum = Stage::stateful("sum", || 0u64, |sum, n: u64, _| {
    ///     *sum += n;
    ///     Ok(())
    /// })
    /// .idempotent_by(100_000, |n: &u64| *n);
    /// ```
    #[must_use]
    pub fn idempotent_by<E, K, F>(mut self, window: usize, key: F) -> Self
    where
        E: 'static,
        K: std::hash::Hash + Eq + Clone + Send + 'static,
        F: Fn(&E) -> K + Send + Sync + 'static,
    {
        if self
            .input
            .is_none_or(|input| input.id != EventType::of::<E>().id)
        {
            self.misdeclared = Some(format!(
                "stage `{}` is idempotent by a key of {} events but takes {}",
                self.name,
                std::any::type_name::<E>(),
                self.input.map_or("none (a source)", |input| input.name)
            ));
            return self;
        }
        self.repeats = Some(repeats(window, key));
        self
    }

    /// Returns this stage with the output port `port`.
    #[must_use]
    pub fn output<T>(mut self, port: &Out<T>) -> Self {
        self.outputs.push(port.spec);
        self
    }

    /// Returns a stateful stage whose handler is async: one instance, one event at a
    /// time (the next waits for the handler's future), but the thread runs other
    /// instances while it awaits.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::stage::{Context, Stage, StageError};
    ///
    /// let stage = Stage::stateful_async("log", || 0u64, async |count: &mut u64, line: String, _: &mut Context<'_>| {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     *count += line.len() as u64;
    ///     Ok::<_, StageError>(())
    /// });
    /// ```
    pub fn stateful_async<S, E, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: AsyncFn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        Self::awaiting(
            name,
            Role::Stateful,
            Some(EventType::of::<E>()),
            init,
            handler,
        )
    }

    /// Returns a stateless stage whose handler is async: its instances (from the
    /// cluster's configuration) each handle one event at a time, on a thread's loop.
    pub fn stateless_async<S, E, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: AsyncFn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        Self::awaiting(
            name,
            Role::Stateless,
            Some(EventType::of::<E>()),
            init,
            handler,
        )
    }

    /// Returns a source whose handler is async: each instance's run is a future on a
    /// thread's loop, which holds no thread while it awaits.
    pub fn source_async<S, I, H>(name: &str, init: I, handler: H) -> Self
    where
        S: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: AsyncFn(&mut S, (), &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        Self::awaiting(name, Role::Source, None, init, handler)
    }

    fn awaiting<S, E, I, H>(
        name: &str,
        role: Role,
        input: Option<EventType>,
        init: I,
        handler: H,
    ) -> Self
    where
        S: Send + 'static,
        E: Send + 'static,
        I: Fn() -> S + Send + Sync + 'static,
        H: AsyncFn(&mut S, E, &mut Context<'_>) -> Result<(), StageError> + Send + Sync + 'static,
    {
        let (stage, handler): (Arc<str>, _) = (name.into(), Arc::new(handler));
        Self {
            name: name.to_owned(),
            role,
            asynchronous: true,
            input,
            outputs: Vec::new(),
            repeats: None,
            misdeclared: None,
            instance: Arc::new(move || {
                Box::new(AsyncInstanced {
                    stage: Arc::clone(&stage),
                    state: init(),
                    handler: Arc::clone(&handler),
                    event: PhantomData,
                })
            }),
        }
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
            handler(state, typed::<E>(&stage, event)?, ctx)
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
            asynchronous: false,
            input,
            outputs: Vec::new(),
            repeats: None,
            misdeclared: None,
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
            .field("asynchronous", &self.asynchronous)
            .finish_non_exhaustive()
    }
}
