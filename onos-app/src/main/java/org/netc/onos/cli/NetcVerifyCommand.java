//! `netc:verify`: netc's verifier on the current state, with counterexamples.
package org.netc.onos.cli;

import org.apache.karaf.shell.api.action.Command;
import org.apache.karaf.shell.api.action.lifecycle.Service;
import org.netc.onos.NetcText;

@Service
@Command(scope = "netc", name = "verify", description = "netc's verifier on the current state (every invariant, counterexamples)")
public class NetcVerifyCommand extends NetcCommand {
    @Override
    protected void doExecute() {
        answer(s -> s.verify(), NetcText::verify);
    }
}
