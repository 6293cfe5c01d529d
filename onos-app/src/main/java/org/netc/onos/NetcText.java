//! netc's answers as the CLI prints them: the verdict, each device's
//! entries added and removed, what the app wrote through ONOS, and netc's
//! own report text (every invariant with its counterexamples); a refusal
//! as netc's error code, message, hint and, for a violation, the report.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Iterator;
import java.util.Map;

public final class NetcText {

    private NetcText() {
    }

    /** A plan's or an apply's answer. */
    public static String change(JsonNode a) {
        StringBuilder s = new StringBuilder();
        if (a.has("generation")) {
            s.append(String.format("generation %d (%s, base %d)%n", a.path("generation").asLong(),
                    a.path("committed").asBoolean() ? "committed" : "nothing to commit", a.path("base").asLong()));
        } else {
            s.append(String.format("plan against generation %d%n", a.path("base").asLong()));
        }
        Iterator<Map.Entry<String, JsonNode>> it = a.path("devices").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> d = it.next();
            s.append(String.format("  %-16s +%d -%d%n", d.getKey(), d.getValue().path("added").asLong(),
                    d.getValue().path("removed").asLong()));
        }
        JsonNode onos = a.path("onos");
        if (onos.has("programmed")) {
            s.append("written through ONOS: ").append(join(onos.path("programmed"))).append('\n');
            if (onos.path("down").size() > 0) {
                s.append("down in ONOS (out of the facts, its rules dropped): ").append(join(onos.path("down")))
                        .append('\n');
            }
            if (onos.path("not_programmed").size() > 0) {
                s.append("not ONOS's to write: ").append(join(onos.path("not_programmed"))).append('\n');
            }
        }
        s.append("verdict: ").append(a.path("verdict").asText("not_run")).append('\n');
        if (a.hasNonNull("report_text")) {
            s.append(a.path("report_text").asText());
        }
        return s.toString();
    }

    /** `/v1/verify`'s report. */
    public static String verify(JsonNode a) {
        if (a.hasNonNull("report_text")) {
            return a.path("report_text").asText();
        }
        return a.toPrettyString();
    }

    /** `/v1/status` with the app's part. */
    public static String status(JsonNode a) {
        StringBuilder s = new StringBuilder();
        s.append(String.format("netc %s: generation %d, %d devices, deltas up to %d%n", a.path("version").asText(),
                a.path("generation").asLong(), a.path("devices").size(), a.path("deltas").path("last").asLong()));
        JsonNode onos = a.path("onos");
        s.append(String.format("ONOS app: written up to generation %d, stream at %d%n",
                onos.path("programmed_generation").asLong(), onos.path("stream_since").asLong()));
        Iterator<Map.Entry<String, JsonNode>> it = onos.path("devices").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> d = it.next();
            s.append(String.format("  %-16s %s%n", d.getKey(), d.getValue().asText()));
        }
        if (onos.hasNonNull("last_failure")) {
            s.append("last failure: ").append(error(onos.path("last_failure")));
        }
        return s.toString();
    }

    /** A refusal. */
    public static String error(NetcException e) {
        return error(e.toJson());
    }

    private static String error(JsonNode root) {
        JsonNode e = root.path("error");
        StringBuilder s = new StringBuilder();
        s.append("error[").append(e.path("code").asText()).append("]: ").append(e.path("message").asText())
                .append('\n');
        if (e.hasNonNull("hint")) {
            s.append("  hint: ").append(e.path("hint").asText()).append('\n');
        }
        JsonNode d = e.path("detail");
        if (d.hasNonNull("report_text")) {
            s.append(d.path("report_text").asText());
        }
        return s.toString();
    }

    private static String join(JsonNode arr) {
        StringBuilder s = new StringBuilder();
        for (JsonNode x : arr) {
            s.append(s.length() == 0 ? "" : ", ").append(x.asText());
        }
        return s.length() == 0 ? "(none)" : s.toString();
    }
}
