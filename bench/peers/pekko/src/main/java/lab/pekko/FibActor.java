// The actor behind the Pekko peer's /actor route: it computes fib-iter(n) and replies,
// so a request crosses a mailbox as work handed to an actor does in the Play source.
package lab.pekko;

import lab.workloads.Workloads;
import org.apache.pekko.actor.AbstractActor;

/** Replies to a Request with the Answer of `/fib-iter?n=N`. */
final class FibActor extends AbstractActor {
    /** A request for fib-iter(n); `n` as the query gave it, or null. */
    record Request(String n) {}

    @Override
    public Receive createReceive() {
        return receiveBuilder()
                .match(Request.class, r -> getSender().tell(Workloads.fibIterative(r.n()), getSelf()))
                .build();
    }
}
