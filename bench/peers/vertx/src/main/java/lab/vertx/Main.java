// The lab's Vert.x peer: Vert.x 5 web with one LabVerticle per core, each on an event
// loop of its own sharing the port, the JVM's counterpart of Node.Scala's loops.
// Usage: java -jar peer-vertx.jar --bind HOST:PORT [--upstream URL] [DIR]
package lab.vertx;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import lab.workloads.Options;

/** Deploys one verticle per core (the cores the JVM is pinned to). */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        Options options = Options.parse(args);
        int loops = Runtime.getRuntime().availableProcessors();
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(loops));
        vertx.deployVerticle(() -> new LabVerticle(options), new DeploymentOptions().setInstances(loops))
                .onSuccess(id -> System.err.println(
                        "vertx listening on " + options.host() + ":" + options.port() + ", " + loops + " loops"))
                .onFailure(e -> {
                    System.err.println("vertx: cannot start: " + e);
                    System.exit(1);
                });
    }
}
