//! netc's P4Runtime text decoded with the official classes into ONOS PI
//! entities: names from the P4Info, replicas' P4Runtime 1.4 `port`, member
//! references; ONOS's own P4InfoParser reads netc's P4Info into the
//! pipeconf's model; and a device change's modified entries are replaced,
//! never removed after their replacement, with an inverse that restores them.
package org.netc.onos;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.Test;
import org.netc.onos.p4.NetcP4Info;
import org.netc.onos.p4.NetcPipeconf;
import org.netc.onos.p4.NetcInterpreter;
import org.netc.onos.p4.P4DecodeException;
import org.netc.onos.p4.P4Updates;
import org.onosproject.net.flow.criteria.Criterion;
import org.onosproject.net.pi.model.PiMatchType;
import org.onosproject.net.pi.model.PiPipeconf;
import org.onosproject.net.pi.model.PiTableId;
import org.onosproject.net.pi.runtime.PiMulticastGroupEntry;
import org.onosproject.net.pi.runtime.PiPreReplica;
import org.onosproject.net.pi.runtime.PiTableEntry;

import java.nio.file.Files;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class P4UpdatesTest {

    private static final String UNDERLAY_OLD = "p4/tor1.txtpb: updates { type: INSERT entity { table_entry { "
            + "table_id: 33554445 match { field_id: 1 lpm { value: \"\\300\\250\\000\\r\" prefix_len: 32 } } "
            + "action { action { action_id: 16777228 params { param_id: 1 value: \"1\" } } } } } }";
    private static final String UNDERLAY_NEW = UNDERLAY_OLD.replace("value: \"1\"", "value: \"2\"");
    private static final String MCAST = "p4/tor1.txtpb: updates { type: INSERT entity { "
            + "packet_replication_engine_entry { multicast_group_entry { multicast_group_id: 1 "
            + "replicas { instance: 1 port: \"\\001\" } replicas { instance: 50 port: \"2\" } } } } }";

    private static P4Updates decoder() throws Exception {
        return new P4Updates(NetcP4Info.parse(NetcPipeconf.p4InfoText()));
    }

    @Test
    public void tableEntriesAndReplicasDecodeByName() throws Exception {
        PiTableEntry e = (PiTableEntry) decoder().decodeEntry(UNDERLAY_OLD).get(0).entity;
        assertEquals(PiTableId.of("NetcIngress.underlay"), e.table());
        assertEquals("NetcIngress.forward(port=0x31)", e.action().toString());
        assertEquals(1, e.matchKey().fieldMatches().size());
        assertEquals(PiMatchType.LPM, e.matchKey().fieldMatches().iterator().next().type());

        PiMulticastGroupEntry g = (PiMulticastGroupEntry) decoder().decodeEntry(MCAST).get(0).entity;
        assertEquals(1, g.groupId());
        assertTrue(g.replicas().contains(new PiPreReplica(org.onosproject.net.PortNumber.portNumber(1), 1)));
        assertTrue("port \"2\" is the byte 0x32", g.replicas().contains(
                new PiPreReplica(org.onosproject.net.PortNumber.portNumber(0x32), 50)));
        assertNull("an OVS flow is not a P4 entry", decoder().decodeEntry("ovs/h1.flows: table=0,priority=1"));
    }

    @Test
    public void anIdTheP4InfoDoesNotDeclareIsAnError() throws Exception {
        try {
            decoder().decodeEntry(UNDERLAY_OLD.replace("33554445", "33554999"));
            fail("unknown table id");
        } catch (P4DecodeException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("33554999"));
        }
    }

    @Test
    public void aModifiedEntryIsReplacedNotRemovedAndTheInverseRestoresIt() throws Exception {
        ObjectMapper m = new ObjectMapper();
        ObjectNode entries = m.createObjectNode();
        entries.putArray("added").add(UNDERLAY_NEW).add(MCAST).add("ovs/h1.flows: x");
        entries.putArray("removed").add(UNDERLAY_OLD);
        DeviceChange c = DeviceChange.of(decoder(), entries);
        assertEquals(1, c.entriesAdded.size());
        assertTrue("the old entry's key is the new one's: not removed", c.entriesRemoved.isEmpty());
        assertEquals(1, c.groupsAdded.size());
        assertEquals(1, c.other);
        DeviceChange back = c.inverse();
        assertEquals(1, back.entriesAdded.size());
        assertEquals("NetcIngress.forward(port=0x31)", back.entriesAdded.get(0).action().toString());
        assertTrue(back.entriesRemoved.isEmpty());
        assertEquals(1, back.groupsRemoved.size());
    }

    @Test
    public void onosReadsNetcsP4InfoIntoThePipeconf() throws Exception {
        NetcP4Info info = NetcP4Info.parse(NetcPipeconf.p4InfoText());
        PiPipeconf pc = NetcPipeconf.build(info, Files.createTempDirectory("netc-pipeconf"), null);
        assertEquals(NetcPipeconf.ID, pc.id());
        assertTrue(pc.pipelineModel().table(PiTableId.of("NetcIngress.underlay")).isPresent());
        assertTrue(pc.pipelineModel().table(PiTableId.of("NetcIngress.vip")).isPresent());
        assertTrue(pc.extension(PiPipeconf.ExtensionType.P4_INFO_TEXT).isPresent());
        assertTrue(pc.hasBehaviour(org.onosproject.net.pi.model.PiPipelineInterpreter.class));
        assertEquals("ingress_port", new NetcInterpreter().mapCriterionType(Criterion.Type.IN_PORT).get().id());
        assertTrue(new NetcInterpreter().mapCriterionType(Criterion.Type.ETH_DST).isEmpty());
    }
}
