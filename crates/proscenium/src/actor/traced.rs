//! Actor message spans (`[traces]`): each message an actor handles is a span under the
//! target [`ACTOR_SPANS`], named after the actor's kind, with `actor.kind`,
//! `actor.message` and `actor.send` (`tell` or `ask`). A message sent from inside a
//! span (a request's, say) carries that span's context in its envelope and is its
//! child where it is handled, on whatever thread that is.
//!
//! Made only where a subscriber asks for the target (the OTLP export): otherwise a send
//! pays one look at the target's interest, and the envelope is the plain one — no
//! context captured, no span made.

use std::any::Any;

use super::{Actor, Context, Envelope};
use crate::trace_context::Parent;

/// The target of actor message spans.
pub(crate) const ACTOR_SPANS: &str = "proscenium::actor";

/// How a message was sent: the span's `actor.send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending {
    Tell,
    Ask,
}

/// Returns `envelope` as it is when no subscriber wants actor spans, else sealed with
/// the current span's context, for its handling to be that span's child.
pub(crate) fn seal<A: Actor>(
    envelope: Box<dyn Envelope<A>>,
    sending: Sending,
) -> Box<dyn Envelope<A>> {
    if !tracing::enabled!(target: ACTOR_SPANS, tracing::Level::TRACE) {
        return envelope;
    }
    Box::new(Traced {
        envelope,
        parent: Parent::current(),
        sending,
    })
}

/// A message with the context of the span it was sent from.
struct Traced<A: Actor> {
    envelope: Box<dyn Envelope<A>>,
    parent: Parent,
    sending: Sending,
}

impl<A: Actor> Envelope<A> for Traced<A> {
    fn deliver(self: Box<Self>, actor: &mut A, ctx: &mut Context<A>) {
        let Self {
            envelope,
            parent,
            sending,
        } = *self;
        let kind = std::any::type_name::<A>();
        let span = tracing::trace_span!(
            target: ACTOR_SPANS,
            "actor message",
            otel.name = kind,
            actor.kind = kind,
            actor.message = envelope.type_name(),
            actor.send = match sending {
                Sending::Tell => "tell",
                Sending::Ask => "ask",
            },
        );
        parent.adopt(&span);
        span.in_scope(|| envelope.deliver(actor, ctx));
    }

    fn type_name(&self) -> &'static str {
        self.envelope.type_name()
    }

    // The message sealed inside: a sender handed the envelope back takes it out there.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self.envelope.into_any()
    }
}
