//! `netc:apply`: plan, verify, write every changed switch through ONOS one at
//! a time, then commit in netc; a refusing switch puts the others back.
package org.netc.onos.cli;

import org.apache.karaf.shell.api.action.Command;
import org.apache.karaf.shell.api.action.Option;
import org.apache.karaf.shell.api.action.lifecycle.Service;
import org.netc.onos.NetcText;

@Service
@Command(scope = "netc", name = "apply", description = "Apply the intent with ONOS's topology: verify, write the switches, commit")
public class NetcApplyCommand extends NetcCommand {

    @Option(name = "--force", description = "Apply despite a violation (recorded as forced)")
    private boolean force = false;

    @Override
    protected void doExecute() {
        answer(s -> s.apply(force), NetcText::change);
    }
}
