//! `netc:plan`: what applying the intent with ONOS's topology would change,
//! per device, and netc's verdict; writes nothing.
package org.netc.onos.cli;

import org.apache.karaf.shell.api.action.Command;
import org.apache.karaf.shell.api.action.lifecycle.Service;
import org.netc.onos.NetcText;

@Service
@Command(scope = "netc", name = "plan", description = "Plan the intent with ONOS's topology: per-device changes and netc's verdict")
public class NetcPlanCommand extends NetcCommand {
    @Override
    protected void doExecute() {
        answer(s -> s.plan(), NetcText::change);
    }
}
