//! `netc:status`: netc's generation and the app's: what it wrote, where the
//! delta stream is, the last device failure.
package org.netc.onos.cli;

import org.apache.karaf.shell.api.action.Command;
import org.apache.karaf.shell.api.action.lifecycle.Service;
import org.netc.onos.NetcText;

@Service
@Command(scope = "netc", name = "status", description = "netc's generation, the switches the app writes, the last failure")
public class NetcStatusCommand extends NetcCommand {
    @Override
    protected void doExecute() {
        answer(s -> s.status(), NetcText::status);
    }
}
