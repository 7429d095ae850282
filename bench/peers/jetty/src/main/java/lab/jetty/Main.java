// The lab's Jetty peer: Jetty 12 running one blocking servlet on a QueuedThreadPool of
// 200 threads (Jetty's default size), the stand-in for the thesis's Spring MVC on Jetty:
// a request holds a pool thread from start to end, /relay included.
// Usage: java -jar peer-jetty.jar --bind HOST:PORT [--upstream URL] [DIR]
package lab.jetty;

import lab.workloads.Options;
import org.eclipse.jetty.ee10.servlet.DefaultServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/** Starts Jetty with the lab's routes and, given a directory, its files. */
public final class Main {
    /** Spring Boot's Jetty and Jetty itself both default to 200 threads. */
    private static final int THREADS = 200;

    private Main() {}

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        QueuedThreadPool pool = new QueuedThreadPool(THREADS);
        pool.setName("jetty");
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(options.host());
        connector.setPort(options.port());
        // As nginx's `backlog=4096`: the lab's steps open thousands of connections at once.
        connector.setAcceptQueueSize(4096);
        server.addConnector(connector);

        ServletContextHandler context = new ServletContextHandler("/");
        ServletHolder routes = new ServletHolder(new LabServlet(options.upstream()));
        for (String path : LabServlet.PATHS) {
            context.addServlet(routes, path);
        }
        options.root().ifPresent(root -> {
            context.setBaseResourceAsPath(root);
            context.addServlet(DefaultServlet.class, "/");
        });
        server.setHandler(context);
        server.start();
        System.err.println("jetty listening on " + options.host() + ":" + options.port());
        server.join();
    }
}
