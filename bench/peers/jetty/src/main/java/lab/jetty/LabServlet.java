// The lab's routes as one blocking servlet, written as a Spring MVC controller would run:
// the work on the request thread, and /relay waiting for the upstream on it too.
package lab.jetty;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import lab.workloads.Answer;
import lab.workloads.Workloads;

/** Answers `/plaintext`, `/json`, `/dynamic`, `/fib-iter`, `/fib` and `/relay`. */
final class LabServlet extends HttpServlet {
    static final List<String> PATHS =
            List.of("/plaintext", "/json", "/dynamic", "/fib-iter", "/fib", "/relay");

    private final transient HttpClient client =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final transient HttpRequest upstream;

    LabServlet(URI upstream) {
        this.upstream = HttpRequest.newBuilder(upstream).GET().build();
    }

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws IOException {
        String n = request.getParameter("n");
        switch (request.getServletPath()) {
            case "/plaintext" -> write(response, Workloads.PLAINTEXT);
            case "/json" -> write(response, Workloads.JSON);
            case "/dynamic" -> write(response, Workloads.dynamicPage(n));
            case "/fib-iter" -> write(response, Workloads.fibIterative(n));
            case "/fib" -> write(response, Workloads.fibRecursive(n));
            case "/relay" -> relay(response);
            default -> response.sendError(HttpServletResponse.SC_NOT_FOUND);
        }
    }

    /** Fetches the upstream with a blocking send: the pool thread waits, as a servlet's would. */
    private void relay(HttpServletResponse response) throws IOException {
        HttpResponse<byte[]> up;
        try {
            up = client.send(upstream, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            write(response, Answer.badGateway("upstream: " + e));
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        if (up.statusCode() != 200) {
            write(response, Answer.badGateway("upstream: status " + up.statusCode()));
            return;
        }
        response.setContentType("application/octet-stream");
        response.setContentLength(up.body().length);
        response.getOutputStream().write(up.body());
    }

    private static void write(HttpServletResponse response, Answer answer) throws IOException {
        byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
        response.setStatus(answer.status());
        response.setContentType(answer.contentType());
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }
}
