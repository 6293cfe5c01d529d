//! A refusal or failure of netc (the daemon's error object, specs/serve.md
//! §1 *Errors*) or of a device the app programmed for it.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

public class NetcException extends Exception {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final String hint;
    private final transient JsonNode detail;

    public NetcException(int status, String code, String message, String hint, JsonNode detail) {
        super(message);
        this.status = status;
        this.code = code;
        this.hint = hint;
        this.detail = detail;
    }

    public int status() {
        return status;
    }

    public String code() {
        return code;
    }

    public String hint() {
        return hint;
    }

    public JsonNode detail() {
        return detail;
    }

    /** The error as netc writes it: `{"error": {"code", "message", "hint"?, "detail"?}}`. */
    public ObjectNode toJson() {
        ObjectNode root = new ObjectMapper().createObjectNode();
        ObjectNode e = root.putObject("error");
        e.put("code", code);
        e.put("message", getMessage());
        if (hint != null) {
            e.put("hint", hint);
        }
        if (detail != null) {
            e.set("detail", detail);
        }
        return root;
    }
}
