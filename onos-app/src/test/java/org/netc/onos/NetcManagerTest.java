//! The ONOS component as ONOS would run it, with ONOS's adapters for every
//! service it references and a real `netc serve`: activation registers
//! netc.p4's pipeconf and applies ONOS's topology (after the quiet period),
//! a PORT_UPDATED event for a port that went down becomes a new generation
//! with the link gone, netc:plan/status/verify print netc's answers through the
//! component, and deactivation stops the poller and unregisters.
package org.netc.onos;

import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.netc.onos.cli.NetcPlanCommand;
import org.netc.onos.cli.NetcStatusCommand;
import org.netc.onos.cli.NetcVerifyCommand;
import org.onlab.osgi.ComponentContextAdapter;
import org.onosproject.TestApplicationId;
import org.onosproject.cfg.ComponentConfigAdapter;
import org.onosproject.core.ApplicationId;
import org.onosproject.core.CoreServiceAdapter;
import org.onosproject.net.pi.PiPipeconfServiceAdapter;
import org.onosproject.net.pi.model.PiPipeconf;
import org.onosproject.net.pi.model.PiPipeconfId;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.Hashtable;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

public class NetcManagerTest {

    private Path tmp;
    private NetcServe serve;
    private FakeNetwork net;
    private NetcManager manager;
    private final List<PiPipeconf> registered = new ArrayList<>();

    @Before
    public void start() throws Exception {
        tmp = Files.createTempDirectory("netc-onos-manager");
        serve = NetcServe.start(tmp.resolve("state"));
        String quickstart = Files.readString(NetcServe.repo().resolve("examples/quickstart/intent.ndl"));
        String topo = quickstart.lines().filter(l -> l.startsWith("switch(") || l.startsWith("link(")
                || l.startsWith("host(")).collect(Collectors.joining("\n"));
        Path intentDir = Files.createDirectories(tmp.resolve("intent"));
        Files.writeString(intentDir.resolve("intent.ndl"), quickstart.lines()
                .filter(l -> !topo.contains(l) || l.isBlank()).collect(Collectors.joining("\n")));
        Path token = tmp.resolve("token");
        Files.writeString(token, serve.token);
        net = FakeNetwork.fromFacts(topo);

        manager = new NetcManager();
        manager.coreService = new CoreServiceAdapter() {
            @Override
            public ApplicationId registerApplication(String name) {
                return new TestApplicationId(name);
            }
        };
        manager.cfgService = new ComponentConfigAdapter();
        manager.deviceService = net.deviceService;
        manager.linkService = net.linkService;
        manager.hostService = net.hostService;
        manager.flowRuleService = net.flowService;
        manager.groupService = net.groupService;
        manager.pipeconfService = new PiPipeconfServiceAdapter() {
            @Override
            public void register(PiPipeconf pipeconf) {
                registered.add(pipeconf);
            }

            @Override
            public void unregister(PiPipeconfId id) {
                registered.removeIf(p -> p.id().equals(id));
            }
        };
        Hashtable<String, Object> props = new Hashtable<>();
        props.put(OsgiPropertyConstants.NETC_URL, serve.url);
        props.put(OsgiPropertyConstants.TOKEN_FILE, token.toString());
        props.put(OsgiPropertyConstants.INTENT_DIR, intentDir.toString());
        manager.activate(new ComponentContextAdapter() {
            @Override
            public Dictionary getProperties() {
                return props;
            }
        });
    }

    @After
    public void stop() throws Exception {
        manager.deactivate(); // again after the test's own: stops the poller if the test failed early
        serve.close();
    }

    /** Waits (bounded) for netc's generation to reach `gen`. */
    private void awaitGeneration(long gen) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (serve.client().status().path("generation").asLong() < gen) {
            assertTrue("generation " + gen + " within 30 s", System.currentTimeMillis() < deadline);
            Thread.sleep(100);
        }
    }

    @Test
    public void theComponentAppliesTopologyEventsAndAnswersTheCli() throws Exception {
        assertEquals(1, registered.size());
        assertEquals("org.netc.p4", registered.get(0).id().id());
        assertEquals(1, net.deviceListeners.size());
        assertEquals(1, net.linkListeners.size());
        assertEquals(1, net.hostListeners.size());

        awaitGeneration(1);
        assertFalse("the switches were written", net.tables.isEmpty());

        net.portDown("tor1", 49);
        net.firePortUpdated("tor1", 49);
        awaitGeneration(2);
        String facts = serve.client().status().toString();
        assertTrue(facts, facts.contains(TopologyFacts.FILE_NAME));

        // netc:plan and netc:status through the component
        StringBuilder out = new StringBuilder();
        var plan = new NetcPlanCommand() {
            @Override
            protected NetcService service() {
                return manager;
            }

            @Override
            public void print(String format, Object... args) {
                out.append(String.format(format, args));
            }

            @Override
            public void error(String format, Object... args) {
                out.append("ERROR ").append(String.format(format, args));
            }

            /** What ONOS's shell runs after its audit (which needs a running ONOS). */
            void run() {
                doExecute();
            }
        };
        plan.run();
        assertTrue(out.toString(), out.toString().startsWith("plan against generation 2"));
        assertTrue(out.toString(), out.toString().contains("verdict: proven"));
        out.setLength(0);
        var status = new NetcStatusCommand() {
            @Override
            protected NetcService service() {
                return manager;
            }

            @Override
            public void print(String format, Object... args) {
                out.append(String.format(format, args));
            }

            @Override
            public void error(String format, Object... args) {
                out.append("ERROR ").append(String.format(format, args));
            }

            /** What ONOS's shell runs after its audit (which needs a running ONOS). */
            void run() {
                doExecute();
            }
        };
        status.run();
        assertTrue(out.toString(), out.toString().contains("written up to generation 2"));
        assertTrue(out.toString(), out.toString().contains("tor1") && out.toString().contains("device:tor1"));

        out.setLength(0);
        var verify = new NetcVerifyCommand() {
            @Override
            protected NetcService service() {
                return manager;
            }

            @Override
            public void print(String format, Object... args) {
                out.append(String.format(format, args));
            }

            void run() {
                doExecute();
            }
        };
        verify.run();
        assertTrue(out.toString(), out.toString().contains("REACH-1") && out.toString().contains("proven"));

        manager.deactivate();
        assertTrue("the pipeconf is unregistered", registered.isEmpty());
        assertTrue("the listeners are removed", net.deviceListeners.isEmpty() && net.linkListeners.isEmpty());
    }
}
