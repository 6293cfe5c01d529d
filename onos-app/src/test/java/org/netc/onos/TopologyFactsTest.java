//! ONOS's topology as netc facts, on ONOS's own service adapters: every
//! link once, a port or link that is down a `link_down` fact (and only
//! that), a device that is down a `switch_down` fact, hosts are netc's
//! servers only, defaults where annotations are missing, and the text does
//! not depend on the order ONOS lists things in.
package org.netc.onos;

import org.junit.Test;
import org.onlab.packet.ChassisId;
import org.onlab.packet.IpAddress;
import org.onlab.packet.MacAddress;
import org.onlab.packet.VlanId;
import org.onosproject.net.DefaultAnnotations;
import org.onosproject.net.DefaultDevice;
import org.onosproject.net.DefaultHost;
import org.onosproject.net.Device;
import org.onosproject.net.DeviceId;
import org.onosproject.net.HostId;
import org.onosproject.net.HostLocation;
import org.onosproject.net.Link;
import org.onosproject.net.PortNumber;

import java.util.Collections;
import java.util.Set;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

public class TopologyFactsTest {

    private static final String FACTS = String.join("\n",
            "switch(\"tor1\", \"tor\", 10.255.0.1, 16384, 4096, 512).",
            "switch(\"agg1\", \"agg\", 10.255.1.1, 100, 200, 300).",
            "switch(\"agg2\", \"agg\", 10.255.1.2, 16384, 4096, 512).",
            "link(\"tor1\", 49, \"agg1\", 1, 40000).",
            "link(\"tor1\", 50, \"agg2\", 1, 40000).",
            "host(\"h1\", 192.168.0.11, \"tor1\", 1).");

    @Test
    public void everyLinkOnceFromTheEndThatSortsFirst() {
        FakeNetwork n = FakeNetwork.fromFacts(FACTS);
        String text = n.topology().text();
        assertTrue(text, text.contains("link(\"agg1\", 1, \"tor1\", 49, 40000)."));
        assertTrue(text, text.contains("link(\"agg2\", 1, \"tor1\", 50, 40000)."));
        assertEquals(2, text.split("link\\(", -1).length - 1);
        assertTrue(text, text.contains("switch(\"agg1\", \"agg\", 10.255.1.1, 100, 200, 300)."));
        assertTrue(text, text.contains("host(\"h1\", 192.168.0.11, \"tor1\", 1)."));
        // ONOS's order means nothing
        Collections.reverse(n.links);
        assertEquals(text, n.topology().text());
    }

    @Test
    public void aPortDownIsALinkDownFactForThatPortOnly() {
        FakeNetwork n = FakeNetwork.fromFacts(FACTS);
        String up = n.topology().text();
        assertFalse(up, up.contains("_down("));
        n.portDown("agg1", 1);
        String text = n.topology().text();
        assertTrue("the link stays a fact", text.contains("link(\"agg1\", 1, \"tor1\", 49, 40000)."));
        assertTrue(text, text.contains("link_down(\"agg1\", 1)."));
        assertEquals(text, 1, text.split("_down\\(", -1).length - 1);
        assertTrue("the switch stays", text.contains("switch(\"agg1\""));
        n.portUp("agg1", 1);
        assertEquals(up, n.topology().text());
    }

    @Test
    public void aLinkDownInOneDirectionIsDown() {
        FakeNetwork n = FakeNetwork.fromFacts(FACTS);
        Link back = n.links.get(1); // agg1 -> tor1
        n.links.set(1, org.onosproject.net.DefaultLink.builder().providerId(FakeNetwork.PID).src(back.src())
                .dst(back.dst()).type(Link.Type.DIRECT).state(Link.State.INACTIVE)
                .annotations(back.annotations()).build());
        String text = n.topology().text();
        assertTrue(text, text.contains("link_down(\"agg1\", 1)."));
        assertFalse(text, text.contains("link_down(\"agg2\""));
    }

    @Test
    public void aSwitchDownIsASwitchDownFactAndKeepsItsFacts() {
        FakeNetwork n = FakeNetwork.fromFacts(FACTS);
        n.down.add(FakeNetwork.deviceId("tor1"));
        String text = n.topology().text();
        assertTrue(text, text.contains("switch_down(\"tor1\")."));
        assertFalse("its ends need no link_down of their own", text.contains("link_down("));
        assertTrue(text, text.contains("switch(\"tor1\""));
        assertTrue(text, text.contains("link(\"agg1\", 1, \"tor1\", 49, 40000)."));
        assertTrue("its hosts still name it", text.contains("host(\"h1\""));
        assertTrue(n.topology().isDown(FakeNetwork.deviceId("tor1")));
    }

    @Test
    public void onlyNetcDevicesAndServersAreFactsAndDefaultsFillTheRest() {
        FakeNetwork n = FakeNetwork.fromFacts(FACTS);
        DeviceId plain = DeviceId.deviceId("of:0000000000000001");
        n.devices.put(plain, new DefaultDevice(FakeNetwork.PID, plain, Device.Type.SWITCH, "x", "y", "z", "s",
                new ChassisId(9)));
        DeviceId bare = DeviceId.deviceId("device:spine/9");
        n.devices.put(bare, new DefaultDevice(FakeNetwork.PID, bare, Device.Type.SWITCH, "x", "y", "z", "s",
                new ChassisId(10), DefaultAnnotations.builder().set(TopologyFacts.ROLE, "core")
                .set(TopologyFacts.LOOPBACK, "10.255.9.9").build()));
        MacAddress mac = MacAddress.valueOf("02:00:00:00:00:99");
        n.hosts.add(new DefaultHost(FakeNetwork.PID, HostId.hostId(mac), mac, VlanId.NONE,
                new HostLocation(FakeNetwork.deviceId("tor1"), PortNumber.portNumber(7), 0),
                Set.of(IpAddress.valueOf("10.9.9.9"))));
        String text = n.topology().text();
        assertFalse("an OpenFlow switch without netc's annotations is not a netc switch", text.contains("of-"));
        assertTrue(text, text.contains("switch(\"device-spine-9\", \"core\", 10.255.9.9, 16384, 4096, 512)."));
        assertFalse("an end host is not a netc server", text.contains("10.9.9.9"));
    }
}
