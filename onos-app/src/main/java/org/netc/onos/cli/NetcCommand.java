//! What the netc:* Karaf commands share: the app's service, netc's answer
//! printed as text (or as netc's JSON with `-j`), a refusal printed with its
//! code, hint and report — never a stack trace.
package org.netc.onos.cli;

import com.fasterxml.jackson.databind.JsonNode;
import org.netc.onos.NetcException;
import org.netc.onos.NetcService;
import org.netc.onos.NetcText;
import org.onosproject.cli.AbstractShellCommand;

import java.util.function.Function;

abstract class NetcCommand extends AbstractShellCommand {

    /** One call of the service. */
    interface Call {
        JsonNode run(NetcService s) throws NetcException;
    }

    /** The app's service (ONOS's service directory; a test gives its own). */
    protected NetcService service() {
        return get(NetcService.class);
    }

    protected void answer(Call call, Function<JsonNode, String> text) {
        try {
            JsonNode a = call.run(service());
            print("%s", outputJson() ? a.toPrettyString() : text.apply(a));
        } catch (NetcException e) {
            error("%s", outputJson() ? e.toJson().toPrettyString() : NetcText.error(e));
        }
    }
}
