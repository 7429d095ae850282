// The JVM peers' command line, the same as lab-app's and the other peers':
// `--bind HOST:PORT [--upstream URL] [DIR]`.
package lab.workloads;

import java.net.URI;
import java.nio.file.Path;
import java.util.Optional;

/** Where a peer listens, what `/relay` fetches and where static files come from. */
public record Options(String host, int port, URI upstream, Optional<Path> root) {
    private static final String DEFAULT_UPSTREAM = "http://127.0.0.1:9090/page?ms=170&kb=44";

    /** Parses the arguments; exits with a usage line on anything else. */
    public static Options parse(String[] args) {
        String bind = "127.0.0.1:8080";
        String upstream = DEFAULT_UPSTREAM;
        Path root = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bind" -> bind = value(args, ++i);
                case "--upstream" -> upstream = value(args, ++i);
                default -> {
                    if (args[i].startsWith("--") || root != null) {
                        usage("unexpected argument " + args[i]);
                    }
                    root = Path.of(args[i]).toAbsolutePath();
                }
            }
        }
        int colon = bind.lastIndexOf(':');
        if (colon < 0) {
            usage("--bind takes HOST:PORT");
        }
        return new Options(bind.substring(0, colon), Integer.parseInt(bind.substring(colon + 1)),
                URI.create(upstream), Optional.ofNullable(root));
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            usage(args[i - 1] + " takes a value");
        }
        return args[i];
    }

    private static void usage(String why) {
        System.err.println(why + "\nusage: java -jar peer-NAME.jar --bind HOST:PORT [--upstream URL] [DIR]");
        System.exit(2);
    }
}
