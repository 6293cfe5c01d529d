//! The PiPipelineInterpreter of netc.p4. netc writes every entry itself as
//! PI entities (tables, actions and parameters by their P4Info names), so
//! ONOS has little to interpret: the one standard criterion netc.p4 keys on
//! is the ingress port (`port_role`, `port_tenant`); no FlowRule table
//! number maps to a netc.p4 table; ONOS treatments are not translated (an
//! app that writes OpenFlow-style treatments to a netc.p4 switch is told so);
//! netc.p4 has no controller port, so there are no packet-in/out to map.
package org.netc.onos.p4;

import org.onosproject.net.DeviceId;
import org.onosproject.net.driver.AbstractHandlerBehaviour;
import org.onosproject.net.flow.TrafficTreatment;
import org.onosproject.net.flow.criteria.Criterion;
import org.onosproject.net.packet.InboundPacket;
import org.onosproject.net.packet.OutboundPacket;
import org.onosproject.net.pi.model.PiMatchFieldId;
import org.onosproject.net.pi.model.PiPipelineInterpreter;
import org.onosproject.net.pi.model.PiTableId;
import org.onosproject.net.pi.runtime.PiAction;
import org.onosproject.net.pi.runtime.PiPacketOperation;

import java.util.Collection;
import java.util.Optional;

public final class NetcInterpreter extends AbstractHandlerBehaviour implements PiPipelineInterpreter {

    static final PiMatchFieldId INGRESS_PORT = PiMatchFieldId.of("ingress_port");

    @Override
    public Optional<PiMatchFieldId> mapCriterionType(Criterion.Type type) {
        return type == Criterion.Type.IN_PORT ? Optional.of(INGRESS_PORT) : Optional.empty();
    }

    @Override
    public Optional<PiTableId> mapFlowRuleTableId(int flowRuleTableId) {
        return Optional.empty();
    }

    @Override
    public PiAction mapTreatment(TrafficTreatment treatment, PiTableId table) throws PiInterpreterException {
        throw new PiInterpreterException("netc.p4's " + table + " takes only netc's own PiActions "
                + "(written by the netc app); an ONOS treatment is not translated");
    }

    @Override
    public Collection<PiPacketOperation> mapOutboundPacket(OutboundPacket packet) throws PiInterpreterException {
        throw new PiInterpreterException("netc.p4 has no controller port: no packet-out");
    }

    @Override
    public InboundPacket mapInboundPacket(PiPacketOperation packet, DeviceId device) throws PiInterpreterException {
        throw new PiInterpreterException("netc.p4 has no controller port: no packet-in");
    }
}
