// The workloads of examples/lab-app (src/workloads.rs) in Java, for the JVM peers: the
// same arithmetic and the same limits, so every peer answers with lab-app's bytes.
package lab.workloads;

import java.math.BigInteger;

/** The routes' work, free of any server: each returns the answer to send. */
public final class Workloads {
    private static final int MAX_ITERATIVE = 200_000;
    private static final int MAX_RECURSIVE = 40;
    private static final int DEFAULT_ITERATIONS = 1_250_000;
    private static final int MAX_ITERATIONS = 100_000_000;

    /** The `/plaintext` answer. */
    public static final Answer PLAINTEXT = Answer.text("Hello, World!");

    /**
     * The `/json` answer. A constant, as actix's and nginx's are: the peers compare
     * servers, and a JSON library would add a dependency for one fixed object.
     */
    public static final Answer JSON =
            new Answer(200, "application/json", "{\"message\":\"Hello, World!\"}");

    private Workloads() {}

    /**
     * Leda's dynamic page (`/dynamic?n=`): n iterations of 32-bit arithmetic (1,250,000
     * when the request names none), then a small page.
     */
    public static Answer dynamicPage(String n) {
        int count = n == null ? DEFAULT_ITERATIONS : parse(n);
        if (count < 0 || count > MAX_ITERATIONS) {
            return Answer.badRequest("n is at most 100000000");
        }
        int acc = 0;
        for (int i = 0; i < count; i++) {
            acc = acc * 31 + i;
        }
        // lab-app's accumulator is a u32; Java's int wraps the same, read unsigned.
        return new Answer(200, "text/html; charset=utf-8",
                "<!doctype html><title>dynamic</title><p>" + count + " iterations: "
                        + Integer.toUnsignedString(acc) + "</p>");
    }

    /** The n-th Fibonacci number, iteratively with big integers, in hex (`/fib-iter`). */
    public static Answer fibIterative(String n) {
        int count = parse(n);
        if (count < 0 || count > MAX_ITERATIVE) {
            return Answer.badRequest("n is at most 200000");
        }
        BigInteger a = BigInteger.ZERO;
        BigInteger b = BigInteger.ONE;
        for (int i = 0; i < count; i++) {
            BigInteger next = a.add(b);
            a = b;
            b = next;
        }
        return Answer.text(a.toString(16));
    }

    /** fib(n), recursively (`/fib`): Node.Scala's light and heavy requests. */
    public static Answer fibRecursive(String n) {
        int count = parse(n);
        if (count < 0 || count > MAX_RECURSIVE) {
            return Answer.badRequest("n is at most 40");
        }
        return Answer.text(Long.toString(fib(count)));
    }

    private static long fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    /** Reads `n`; -1 when it is missing or not a number, which the caller refuses. */
    private static int parse(String n) {
        try {
            return n == null ? -1 : Integer.parseInt(n);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
