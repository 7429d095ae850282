// One event loop's share of the Vert.x peer: its router, its HTTP server (Vert.x spreads
// the shared port's connections over the instances) and its web client for /relay.
package lab.vertx;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.PoolOptions;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import io.vertx.ext.web.handler.FileSystemAccess;
import io.vertx.ext.web.handler.StaticHandler;
import lab.workloads.Answer;
import lab.workloads.Options;
import lab.workloads.Workloads;

/** Serves the lab's routes on this verticle's event loop; nothing here blocks it but the work. */
final class LabVerticle extends VerticleBase {
    /**
     * Connections each loop's client may open to the upstream: Vert.x's default of 5
     * would cap /relay at 5 / 0.17 s a loop; 200 over the loops matches the Jetty peer.
     */
    private static final int UPSTREAM_CONNECTIONS = 100;

    private final Options options;

    LabVerticle(Options options) {
        this.options = options;
    }

    @Override
    public Future<?> start() {
        WebClient client = WebClient.create(vertx, new WebClientOptions(),
                new PoolOptions().setHttp1MaxSize(UPSTREAM_CONNECTIONS));
        Router router = Router.router(vertx);
        router.get("/plaintext").handler(ctx -> send(ctx, Workloads.PLAINTEXT));
        router.get("/json").handler(ctx -> send(ctx, Workloads.JSON));
        router.get("/dynamic").handler(ctx -> send(ctx, Workloads.dynamicPage(ctx.request().getParam("n"))));
        // On the event loop, as Node runs them: a heavy fib stalls this loop's connections.
        router.get("/fib-iter").handler(ctx -> send(ctx, Workloads.fibIterative(ctx.request().getParam("n"))));
        router.get("/fib").handler(ctx -> send(ctx, Workloads.fibRecursive(ctx.request().getParam("n"))));
        router.get("/relay").handler(ctx -> relay(ctx, client));
        options.root().ifPresent(dir ->
                router.get().handler(StaticHandler.create(FileSystemAccess.ROOT, dir.toString())));
        return vertx.createHttpServer(new HttpServerOptions().setAcceptBacklog(4096))
                .requestHandler(router)
                .listen(options.port(), options.host());
    }

    /** Fetches the upstream without blocking the loop and relays its body. */
    private void relay(RoutingContext ctx, WebClient client) {
        client.getAbs(options.upstream().toString()).send()
                .onSuccess(up -> {
                    if (up.statusCode() != 200) {
                        send(ctx, Answer.badGateway("upstream: status " + up.statusCode()));
                        return;
                    }
                    ctx.response().putHeader("content-type", "application/octet-stream").end(up.body());
                })
                .onFailure(e -> send(ctx, Answer.badGateway("upstream: " + e)));
    }

    private static void send(RoutingContext ctx, Answer answer) {
        ctx.response()
                .setStatusCode(answer.status())
                .putHeader("content-type", answer.contentType())
                .end(answer.body());
    }
}
