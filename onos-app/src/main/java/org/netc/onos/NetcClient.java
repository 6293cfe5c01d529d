//! A client of `netc serve` (specs/serve.md): the bearer token on every
//! request, JSON in and out, one HTTP/1.1 request per connection as the
//! daemon speaks it. Guarantees: a refusal is a [`NetcException`] carrying
//! the daemon's stable error code, message, hint and detail (a violation's
//! verdict and report, a device failure) — never swallowed; a daemon that is
//! not reachable is a NetcException with code `unreachable`.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

public class NetcClient {

    /** One intent text of a request (`{"name", "text"}`). */
    public static final class IntentFile {
        public final String name;
        public final String text;

        public IntentFile(String name, String text) {
            this.name = name;
            this.text = text;
        }
    }

    private static final ObjectMapper MAPPER = new ObjectMapper();
    /** A plan or apply of a large intent verifies before it answers. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofMinutes(30);

    private final URI base;
    private final String token;
    private final HttpClient http;

    public NetcClient(String url, String token) {
        this.base = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        this.token = token.trim();
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
    }

    public String url() {
        return base.toString();
    }

    public JsonNode status() throws NetcException {
        return call("GET", "/v1/status", null, REQUEST_TIMEOUT);
    }

    public JsonNode plan(List<IntentFile> files, boolean verify) throws NetcException {
        return plan(files, verify, java.util.Set.of());
    }

    /**
     * Plans `files`; the devices in `wiped` (switches that lost their state
     * while down) get their whole state listed, not a change (specs/serve.md).
     */
    public JsonNode plan(List<IntentFile> files, boolean verify, java.util.Set<String> wiped) throws NetcException {
        ObjectNode body = intent(files);
        body.put("verify", verify);
        if (!wiped.isEmpty()) {
            ArrayNode w = body.putArray("wiped");
            new java.util.TreeSet<>(wiped).forEach(w::add);
        }
        return call("POST", "/v1/plan", body, REQUEST_TIMEOUT);
    }

    /** Applies `files` if the devices still hold generation `base` (else 409 `base_moved`). */
    public JsonNode apply(List<IntentFile> files, long base, boolean verify, boolean force, String note)
            throws NetcException {
        ObjectNode body = intent(files);
        body.put("verify", verify);
        body.put("force", force);
        body.put("base", base);
        body.put("actor", "onos");
        body.put("note", note);
        return call("POST", "/v1/apply", body, REQUEST_TIMEOUT);
    }

    public JsonNode verify() throws NetcException {
        return call("POST", "/v1/verify", MAPPER.createObjectNode(), REQUEST_TIMEOUT);
    }

    /** A long-poll of the delta stream (§2): every entry after `since`, waiting up to `waitSeconds`. */
    public JsonNode deltas(long since, int waitSeconds) throws NetcException {
        return call("GET", "/v1/deltas?since=" + since + "&wait=" + waitSeconds, null,
                Duration.ofSeconds(waitSeconds + 30L));
    }

    private static ObjectNode intent(List<IntentFile> files) {
        ObjectNode body = MAPPER.createObjectNode();
        ArrayNode fs = body.putArray("files");
        for (IntentFile f : files) {
            fs.addObject().put("name", f.name).put("text", f.text);
        }
        return body;
    }

    private JsonNode call(String method, String path, JsonNode body, Duration timeout) throws NetcException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout)
                .header("Authorization", "Bearer " + token)
                .header("Accept", "application/json");
        if (body == null) {
            b.GET();
        } else {
            b.header("Content-Type", "application/json")
                    .method(method, HttpRequest.BodyPublishers.ofString(body.toString()));
        }
        HttpResponse<String> r;
        try {
            r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new NetcException(0, "unreachable", "netc serve at " + base + " did not answer: " + e,
                    "is `netc serve` running, and is the app's netc URL right?", null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NetcException(0, "interrupted", "interrupted while waiting for netc serve", null, null);
        }
        JsonNode json;
        try {
            json = MAPPER.readTree(r.body());
        } catch (IOException e) {
            throw new NetcException(r.statusCode(), "not_netc", "the answer from " + base + " is not JSON",
                    "is this URL a `netc serve` daemon?", null);
        }
        if (r.statusCode() / 100 != 2) {
            JsonNode err = json.path("error");
            throw new NetcException(r.statusCode(), err.path("code").asText("unknown"),
                    err.path("message").asText(r.body()), err.path("hint").asText(null),
                    err.get("detail"));
        }
        return json;
    }
}
