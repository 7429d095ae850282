// The lab's Pekko peer: Apache Pekko HTTP's Java DSL on Pekko's default dispatcher (one
// fork-join pool for the routes and the actors), the stand-in for the thesis's Play on
// Akka. /actor asks an actor for its answer, as a Play controller hands work to actors;
// /relay uses Pekko's own client, so no thread waits for the upstream.
// Usage: java -jar peer-pekko.jar --bind HOST:PORT [--upstream URL] [DIR]
package lab.pekko;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import lab.workloads.Answer;
import lab.workloads.Options;
import lab.workloads.Workloads;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.pattern.Patterns;
import org.apache.pekko.routing.RoundRobinPool;
import org.apache.pekko.stream.Materializer;

/** Binds the lab's routes and, given a directory, its files. */
public final class Main extends AllDirectives {
    /** How long /actor and /relay wait before answering 502 (lab-app has no limit). */
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final ActorSystem system;
    private final Materializer materializer;
    private final Options options;
    private final ActorRef fib;
    private final HttpRequest upstream;
    private final Map<String, ContentType> types = new ConcurrentHashMap<>();

    private Main(ActorSystem system, Options options) {
        this.system = system;
        this.materializer = Materializer.matFromSystem(system);
        this.options = options;
        // One actor per core behind a round-robin router: one would serialise every
        // /actor request through a single mailbox.
        int cores = Runtime.getRuntime().availableProcessors();
        this.fib = system.actorOf(new RoundRobinPool(cores).props(Props.create(FibActor.class)), "fib");
        this.upstream = HttpRequest.GET(options.upstream().toString());
    }

    public static void main(String[] args) {
        Options options = Options.parse(args);
        ActorSystem system = ActorSystem.create("peer");
        Main main = new Main(system, options);
        Http.get(system)
                .newServerAt(options.host(), options.port())
                .bind(main.routes())
                .whenComplete((binding, failure) -> {
                    if (failure != null) {
                        System.err.println("pekko: cannot bind: " + failure);
                        system.terminate();
                        System.exit(1);
                    }
                    System.err.println("pekko listening on " + binding.localAddress());
                });
    }

    private Route routes() {
        Route files = options.root().map(dir -> getFromDirectory(dir.toString())).orElseGet(this::reject);
        return get(() -> concat(
                path("plaintext", () -> complete(response(Workloads.PLAINTEXT))),
                path("json", () -> complete(response(Workloads.JSON))),
                path("dynamic", () -> parameterOptional("n",
                        n -> complete(response(Workloads.dynamicPage(n.orElse(null)))))),
                // The Fibonacci routes run on the dispatcher's threads, as Play's actions do.
                path("fib-iter", () -> parameterOptional("n",
                        n -> complete(response(Workloads.fibIterative(n.orElse(null)))))),
                path("fib", () -> parameterOptional("n",
                        n -> complete(response(Workloads.fibRecursive(n.orElse(null)))))),
                path("actor", () -> parameterOptional("n",
                        n -> completeWithFuture(ask(n.orElse(null))))),
                path("relay", () -> completeWithFuture(relay())),
                files));
    }

    /** Asks a FibActor for fib-iter(n) and answers with its reply. */
    private CompletionStage<HttpResponse> ask(String n) {
        return Patterns.ask(fib, new FibActor.Request(n), TIMEOUT)
                .thenApply(answer -> response((Answer) answer))
                .exceptionally(e -> response(Answer.badGateway("actor: " + e)));
    }

    /** Fetches the upstream with Pekko's client and relays its body. */
    private CompletionStage<HttpResponse> relay() {
        return Http.get(system).singleRequest(upstream).thenCompose(up -> {
            if (up.status().intValue() != 200) {
                up.discardEntityBytes(materializer);
                throw new IllegalStateException("status " + up.status().intValue());
            }
            return up.entity().toStrict(TIMEOUT.toMillis(), materializer);
        }).thenApply(body -> HttpResponse.create()
                .withEntity(ContentTypes.APPLICATION_OCTET_STREAM, body.getData()))
                .exceptionally(e -> response(Answer.badGateway("upstream: " + e)));
    }

    private HttpResponse response(Answer answer) {
        ContentType type = types.computeIfAbsent(answer.contentType(), ContentTypes::parse);
        return HttpResponse.create().withStatus(answer.status()).withEntity(type, answer.body().getBytes(StandardCharsets.UTF_8));
    }
}
