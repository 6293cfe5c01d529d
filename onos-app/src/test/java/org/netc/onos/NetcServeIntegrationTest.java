//! The app against the real `netc serve` (loopback, `--no-push`) and ONOS's
//! own service adapters: ONOS's topology goes to netc as facts, netc's
//! answer comes back as the FlowRules and groups the app writes, and what
//! each switch then holds equals, entry for entry, what `netc compile`
//! writes for the same intent — after the first apply, after a link goes
//! down (a fact change: the warm engine answers with the deltas only), and
//! after a change another client applied (programmed from the delta
//! stream). A switch that refuses its change leaves netc's generation
//! uncommitted and every switch as it was; one that refuses a streamed
//! change (committed by another client) is reported, as committed in netc.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.After;
import org.junit.Before;
import org.junit.BeforeClass;
import org.junit.Test;
import org.netc.onos.p4.NetcP4Info;
import org.netc.onos.p4.P4Updates;
import org.onosproject.TestApplicationId;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class NetcServeIntegrationTest {

    private static Path tmp;
    private static NetcServe serve;
    private static NetcP4Info info;
    private static String baseIntent;
    private static String topologyFacts;

    /** Each test has a daemon of its own: its devices start empty, as its generations do. */
    @Before
    public void startDaemon() throws Exception {
        tmp = Files.createTempDirectory("netc-onos-it");
        serve = NetcServe.start(tmp.resolve("state"));
    }

    @After
    public void stopDaemon() throws Exception {
        if (serve != null) {
            serve.close();
            serve = null;
        }
    }

    @BeforeClass
    public static void readFixtures() throws Exception {
        info = NetcP4Info.parse(Files.readString(NetcServe.repo().resolve("p4/netc.p4info.txtpb")));
        String quickstart = Files.readString(NetcServe.repo().resolve("examples/quickstart/intent.ndl"));
        // the topology is ONOS's to tell; the rest of the intent is the operator's
        baseIntent = quickstart.lines().filter(l -> !isTopology(l)).collect(Collectors.joining("\n")) + "\n";
        topologyFacts = quickstart.lines().filter(NetcServeIntegrationTest::isTopology)
                .collect(Collectors.joining("\n")) + "\n";
    }

    private static boolean isTopology(String l) {
        return l.startsWith("switch(") || l.startsWith("link(") || l.startsWith("host(");
    }

    private static final class Rig {
        final FakeNetwork net = FakeNetwork.fromFacts(topologyFacts);
        final NetcClient client = serve.client();
        final NetcBridge bridge;
        String base = baseIntent;

        Rig() {
            OnosDeviceWriter writer = new OnosDeviceWriter(new TestApplicationId("org.netc.onos"),
                    net.flowService, net.groupService, 10_000);
            bridge = new NetcBridge(client, net.topology(), writer, new P4Updates(info),
                    () -> List.of(new NetcClient.IntentFile("intent.ndl", base)));
        }

        /** Every switch's state as the app wrote it. */
        Map<String, SwitchState> written(Iterable<String> switches) {
            Map<String, SwitchState> out = new HashMap<>();
            for (String sw : switches) {
                out.put(sw, SwitchState.written(net, FakeNetwork.deviceId(sw), info));
            }
            return out;
        }
    }

    /** `netc compile` of the intent the bridge would send, per switch. */
    private static Map<String, SwitchState> compiled(String label, List<NetcClient.IntentFile> files)
            throws Exception {
        Path out = NetcServe.compile(tmp.resolve(label), files);
        Map<String, SwitchState> m = new HashMap<>();
        for (String sw : SwitchState.switches(out)) {
            m.put(sw, SwitchState.compiled(out, sw, info));
        }
        return m;
    }

    private static void assertSameState(Map<String, SwitchState> expected, Map<String, SwitchState> got) {
        assertEquals(expected.keySet(), got.keySet());
        for (String sw : expected.keySet()) {
            SwitchState e = expected.get(sw);
            SwitchState g = got.get(sw);
            assertFalse(sw + " has entries", e.entries.isEmpty());
            assertEquals(sw + ": table entries", e.entries, g.entries);
            assertEquals(sw + ": action-profile members", e.members, g.members);
            assertEquals(sw + ": multicast groups", e.mcast, g.mcast);
        }
    }

    /** Facts as a set, each link from the end whose name sorts first (a link is listed once). */
    private static java.util.Set<String> facts(String text) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        java.util.regex.Pattern link = java.util.regex.Pattern.compile(
                "link\\((\"[^\"]+\"), (\\d+), (\"[^\"]+\"), (\\d+), (\\d+)\\)\\.");
        for (String l : text.split("\n")) {
            java.util.regex.Matcher m = link.matcher(l.trim());
            if (m.matches() && m.group(1).compareTo(m.group(3)) > 0) {
                out.add(String.format("link(%s, %s, %s, %s, %s).", m.group(3), m.group(4), m.group(1),
                        m.group(2), m.group(5)));
            } else if (!l.isBlank() && !l.startsWith("//")) {
                out.add(l.trim());
            }
        }
        return out;
    }

    @Test
    public void topologyAndDeltasMatchNetcCompileEntryForEntry() throws Exception {
        Rig rig = new Rig();
        long gen0 = rig.client.status().path("generation").asLong();

        // ONOS's topology as facts: the same switch/link/host facts the example writes by hand
        assertEquals(facts(topologyFacts), facts(rig.net.topology().text()));

        JsonNode applied = rig.bridge.topologyChanged();
        assertNotNull(applied);
        assertEquals(gen0 + 1, applied.path("generation").asLong());
        assertTrue(applied.path("committed").asBoolean());
        assertEquals("proven", applied.path("verdict").asText());
        Map<String, SwitchState> expected = compiled("first", rig.bridge.intent());
        assertEquals(java.util.Set.of("agg1", "agg2", "tor1", "tor2"), expected.keySet());
        Map<String, SwitchState> before = rig.written(expected.keySet());
        assertSameState(expected, before);
        // an unchanged topology posts nothing
        assertEquals(null, rig.bridge.topologyChanged());

        // a link goes down: ONOS reports tor1's port 49 down; netc recompiles warm
        rig.net.portDown("tor1", 49);
        String downFacts = rig.net.topology().text();
        assertTrue(downFacts, downFacts.contains("link_down(\"tor1\", 49)."));
        applied = rig.bridge.topologyChanged();
        assertEquals(gen0 + 2, applied.path("generation").asLong());
        assertFalse("a link-down is a warm change", applied.path("change").path("full_evaluation").asBoolean());
        List<String> touched = new ArrayList<>();
        applied.path("change").path("devices").forEach(d -> touched.add(d.path("device").asText()));
        assertTrue(touched.contains("tor1"));
        assertTrue("only the deltas: not every device changed", touched.size() < 9);
        Map<String, SwitchState> afterDown = compiled("link-down", rig.bridge.intent());
        Map<String, SwitchState> gotDown = rig.written(afterDown.keySet());
        assertSameState(afterDown, gotDown);
        assertNotEquals("the failover changed tor1's entries", before.get("tor1"), gotDown.get("tor1"));

        // a change another client applies arrives on the delta stream and is programmed from it
        rig.bridge.pollOnce(0); // the app's own generations are skipped, not written twice
        int batches = rig.net.flowBatches;
        JsonNode status = rig.client.status();
        List<NetcClient.IntentFile> moved = new ArrayList<>();
        for (NetcClient.IntentFile f : rig.bridge.intent()) {
            moved.add(new NetcClient.IntentFile(f.name, f.text.replace(
                    "vip(\"acme\", 203.0.113.10, 6, 80, \"public\").",
                    "vip(\"acme\", 203.0.113.10, 6, 80, \"public\").\nvip(\"acme\", 203.0.113.11, 6, 443, \"public\").\n"
                            + "dip_pool(203.0.113.11, 6, 443, \"acme\", \"web2\", 8443, 1).")));
        }
        JsonNode other = rig.client.apply(moved, status.path("generation").asLong(), true, false, "another client");
        assertEquals(gen0 + 3, other.path("generation").asLong());
        assertEquals(batches, rig.net.flowBatches);
        int written = rig.bridge.pollOnce(5);
        assertTrue("the stream's changes were written", written > 0);
        assertEquals(gen0 + 3, rig.bridge.programmedGeneration());
        Map<String, SwitchState> afterOther = compiled("other-client", moved);
        assertSameState(afterOther, rig.written(afterOther.keySet()));
    }

    @Test
    public void aSwitchThatGoesDownIsRoutedAroundAndGetsItsStateBack() throws Exception {
        Rig rig = new Rig();
        rig.bridge.topologyChanged();
        Map<String, SwitchState> all = compiled("agg-up", rig.bridge.intent());
        assertSameState(all, rig.written(all.keySet()));

        // agg1 becomes unavailable: a switch_down fact, the fabric's routes avoid it
        rig.net.down.add(FakeNetwork.deviceId("agg1"));
        assertTrue(rig.net.topology().text().contains("switch_down(\"agg1\")."));
        JsonNode applied = rig.bridge.topologyChanged();
        assertEquals("proven", applied.path("verdict").asText());
        assertEquals("agg1", applied.path("onos").path("down").path(0).asText());
        Map<String, SwitchState> without = compiled("agg-down", rig.bridge.intent());
        without.remove("agg1"); // down: not written now, its whole state when it is back
        assertEquals(java.util.Set.of("agg2", "tor1", "tor2"), without.keySet());
        assertSameState(without, rig.written(without.keySet()));
        assertTrue("what the app wrote to agg1 is dropped", !rig.net.tables.containsKey(FakeNetwork.deviceId("agg1")));
        assertNotEquals("tor1 now routes via agg2 only", all.get("tor1"), without.get("tor1"));

        // agg1 is back: it gets its whole state, the rest their routes back
        rig.net.down.clear();
        rig.bridge.topologyChanged();
        assertSameState(all, rig.written(all.keySet()));
    }

    @Test
    public void aStreamedChangeASwitchRefusesIsReportedAsCommittedInNetc() throws Exception {
        Rig rig = new Rig();
        rig.bridge.topologyChanged();
        rig.bridge.pollOnce(0);
        long gen = rig.client.status().path("generation").asLong();
        List<NetcClient.IntentFile> more = new ArrayList<>();
        for (NetcClient.IntentFile f : rig.bridge.intent()) {
            more.add(new NetcClient.IntentFile(f.name, f.text + (f.name.equals("intent.ndl")
                    ? "vip(\"acme\", 203.0.113.12, 6, 443, \"public\").\n"
                            + "dip_pool(203.0.113.12, 6, 443, \"acme\", \"web1\", 8443, 1).\n" : "")));
        }
        rig.net.devices.keySet().forEach(rig.net.refusing::add);
        rig.client.apply(more, gen, true, false, "another client");
        assertEquals(0, rig.bridge.pollOnce(5));
        JsonNode failure = rig.bridge.status().path("onos").path("last_failure").path("error");
        assertEquals("device_failed", failure.path("code").asText());
        assertEquals(gen + 1, failure.path("detail").path("generation").asLong());
        assertTrue(failure.path("hint").asText().contains("committed"));
        assertEquals("the stream moved on", gen + 1, rig.bridge.programmedGeneration());
    }

    @Test
    public void aSwitchThatRefusesLeavesTheGenerationUncommitted() throws Exception {
        Rig rig = new Rig();
        rig.base = baseIntent;
        rig.bridge.topologyChanged();
        Map<String, SwitchState> expected = compiled("refuse-base", rig.bridge.intent());
        long gen = rig.client.status().path("generation").asLong();
        Map<String, SwitchState> before = rig.written(expected.keySet());
        assertSameState(expected, before);

        // tor2 refuses whatever it is sent; tor1's link to agg1 goes down, which moves
        // both ToRs' routes to agg2 (the failover), so tor1 is written before tor2 refuses
        rig.net.refusing.add(FakeNetwork.deviceId("tor2"));
        rig.net.portDown("tor1", 49);
        try {
            rig.bridge.topologyChanged();
            fail("tor2 refused: the apply must fail");
        } catch (NetcException e) {
            assertEquals("device_failed", e.code());
            assertEquals("tor2", e.detail().path("device").asText());
            assertFalse(e.detail().path("committed").asBoolean());
        }
        assertEquals("netc committed nothing", gen, rig.client.status().path("generation").asLong());
        assertEquals("every switch is as it was", before, rig.written(expected.keySet()));
        JsonNode st = rig.bridge.status();
        assertEquals("device_failed", st.path("onos").path("last_failure").path("error").path("code").asText());

        // the device takes it again: the same change commits
        rig.net.refusing.clear();
        JsonNode applied = rig.bridge.topologyChanged();
        assertEquals(gen + 1, applied.path("generation").asLong());
        Map<String, SwitchState> down = compiled("refuse-after", rig.bridge.intent());
        assertSameState(down, rig.written(down.keySet()));
    }
}
