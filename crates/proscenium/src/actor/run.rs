//! An actor's life: started; then orders (ahead of messages) and one message at a
//! time; on a panic, suspended until its supervisor (its parent, or the system for a
//! top-level actor) decides; stopping, stopped, its watchers and parent told.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::Duration;

use std::sync::Arc;

use super::addr::AnyCell;
use super::mailbox::{Control, Next};
use super::supervise::{Budget, Directive, Scope, Strategy};
use super::{Actor, Context, Failure, Reason};

/// Where a child reports to: its parent's orders, and its id there.
#[derive(Clone)]
pub(crate) struct Parent {
    pub(crate) orders: Arc<dyn AnyCell>,
    pub(crate) child: u64,
}

/// A parent's record of one child.
pub(crate) struct Child {
    pub(crate) id: u64,
    pub(crate) cell: Arc<dyn AnyCell>,
    pub(crate) budget: Budget,
    pub(crate) alive: bool,
}

pub(crate) async fn run<A: Actor>(
    factory: impl Fn() -> A + Send + Sync + 'static,
    mut ctx: Context<A>,
) {
    let mut actor = factory();
    actor.started(&mut ctx);
    // A top-level actor's own restarts, under the system's strategy.
    let mut own = Budget::default();
    let mut suspended = false;
    // The messages of the current turn, taken from the mailbox under one lock.
    let mut hand = VecDeque::new();
    'life: while let Some(next) = ctx.addr.cell.mailbox.recv(!suspended, &mut hand).await {
        match next {
            Next::Order(Control::Stop) => break,
            Next::Order(Control::Resume) => suspended = false,
            Next::Order(Control::Restart) => {
                ctx.stop_children();
                actor = factory();
                actor.started(&mut ctx);
                suspended = false;
            }
            Next::Order(Control::Failed { child, why }) => {
                if supervise(&actor.supervisor_strategy(), &mut ctx, child, &why) {
                    suspended = fail(&mut ctx, &mut own, why);
                }
            }
            Next::Order(Control::Stopped { child }) => {
                if let Some(c) = ctx.children.iter_mut().find(|c| c.id == child) {
                    c.alive = false;
                }
            }
            Next::Turn => {
                let full = hand.len() >= ctx.addr.cell.mailbox.turn();
                while let Some(envelope) = hand.pop_front() {
                    let message = envelope.type_name();
                    let handled = catch_unwind(AssertUnwindSafe(|| {
                        envelope.deliver(&mut actor, &mut ctx);
                    }));
                    if let Err(panic) = handled {
                        let why = Failure::new(panic);
                        tracing::error!(actor = ctx.name(), message, %why, "actor failed");
                        ctx.addr.shared.dead_letters.report(
                            ctx.name(),
                            message,
                            Reason::Failed(why.to_string()),
                        );
                        // What is left in hand waits, as in the mailbox, for the order.
                        suspended = fail(&mut ctx, &mut own, why);
                        break;
                    }
                    if ctx.stopping {
                        break 'life;
                    }
                    if ctx.addr.cell.mailbox.wants_attention() {
                        break;
                    }
                }
                if full {
                    give_turn().await;
                }
            }
        }
    }
    ctx.addr.cell.report_stopped(&ctx.addr.shared, hand);
    actor.stopping(&mut ctx);
    ctx.stop_children();
    ctx.addr.stop();
    actor.stopped();
    if let Some(parent) = &ctx.parent {
        parent.orders.order(Control::Stopped {
            child: parent.child,
        });
    }
    for watcher in ctx.addr.cell.stopped() {
        watcher(ctx.name());
    }
    ctx.addr.shared.forget(&ctx.addr.cell);
    ctx.addr.shared.live.fetch_sub(1, Ordering::SeqCst);
}

/// Reports a failure to the supervisor; returns whether the actor now waits for its
/// order. A top-level actor is its own supervisor under the default strategy: restart
/// after the backoff, or stop once the budget is spent.
fn fail<A: Actor>(ctx: &mut Context<A>, own: &mut Budget, why: Failure) -> bool {
    if let Some(parent) = &ctx.parent {
        parent.orders.order(Control::Failed {
            child: parent.child,
            why,
        });
        return true;
    }
    let strategy = Strategy::one_for_one();
    match own.spend(&strategy) {
        Some(attempt) => order_later(
            ctx.addr.cell.clone(),
            Control::Restart,
            strategy.backoff.delay(attempt),
        ),
        None => {
            tracing::error!(actor = ctx.name(), "restart budget spent; stopping");
            ctx.addr.cell.order(Control::Stop);
        }
    }
    true
}

/// Applies `strategy` to the failure of the child with id `child`; returns whether to
/// escalate.
fn supervise<A: Actor>(
    strategy: &Strategy,
    ctx: &mut Context<A>,
    child: u64,
    why: &Failure,
) -> bool {
    let Some(at) = ctx.children.iter().position(|c| c.id == child) else {
        return false;
    };
    let mut directive = strategy.decide(why);
    let mut attempt = 0;
    if directive == Directive::Restart {
        match ctx.children[at].budget.spend(strategy) {
            Some(n) => attempt = n,
            None => directive = Directive::Escalate,
        }
    }
    let targets = match strategy.scope {
        Scope::OneForOne => at..at + 1,
        Scope::AllForOne => 0..ctx.children.len(),
        Scope::RestForOne => at..ctx.children.len(),
    };
    let alive = ctx.children[targets].iter().filter(|c| c.alive);
    match directive {
        Directive::Escalate => return true,
        Directive::Resume => {
            ctx.children[at].cell.order(Control::Resume);
        }
        Directive::Restart => {
            let delay = strategy.backoff.delay(attempt);
            for c in alive {
                order_later(c.cell.clone(), Control::Restart, delay);
            }
        }
        Directive::Stop => {
            for c in alive {
                c.cell.stop(&ctx.addr.shared);
            }
        }
    }
    false
}

/// Lets the thread's other actors and tasks run before this one goes on. Not tokio's
/// `yield_now`: on a current-thread runtime that defers the task until the I/O driver
/// has been polled, an `epoll_wait` and a clock read every `throughput` messages —
/// telling an actor a million messages from its own thread took 210 ns a message with
/// it and 112 ns without (bench/actors.sh `tell-local`).
async fn give_turn() {
    let mut given = false;
    std::future::poll_fn(|cx| {
        if given {
            return std::task::Poll::Ready(());
        }
        given = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// Sends `order` after `delay`, from a task on this thread.
fn order_later(to: Arc<dyn AnyCell>, order: Control, delay: Duration) {
    tokio::task::spawn_local(async move {
        tokio::time::sleep(delay).await;
        to.order(order);
    });
}
