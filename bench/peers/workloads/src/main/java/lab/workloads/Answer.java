// What a route answers, before a server writes it: each peer turns it into its own
// framework's response.
package lab.workloads;

/** A status, a content type and a body. */
public record Answer(int status, String contentType, String body) {
    /** A 200 with a plain-text body, as lab-app sends a `String`. */
    public static Answer text(String body) {
        return new Answer(200, "text/plain; charset=utf-8", body);
    }

    /** A refused request, as lab-app's rejections. */
    public static Answer badRequest(String why) {
        return new Answer(400, "text/plain; charset=utf-8", why);
    }

    /** An upstream (or actor) that failed, as lab-app's `/relay` answers it. */
    public static Answer badGateway(String why) {
        return new Answer(502, "text/plain; charset=utf-8", why);
    }
}
