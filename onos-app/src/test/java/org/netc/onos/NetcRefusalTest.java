//! netc's verdicts through the app's CLI and REST, against a real `netc
//! serve` whose rules carry a fault (every VM may also reach the other
//! tenant's VNI, an ISO-1 violation): the app writes nothing, commits
//! nothing, and answers with netc's own verdict and counterexamples — the
//! REST resource with netc's 422 and error object, the CLI's text with
//! netc's report; `force` goes through and is recorded as forced.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.netc.onos.p4.NetcP4Info;
import org.netc.onos.p4.NetcPipeconf;
import org.netc.onos.p4.P4Updates;
import org.netc.onos.rest.NetcWebResource;
import org.onosproject.TestApplicationId;

import javax.ws.rs.core.Response;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class NetcRefusalTest {

    private NetcServe serve;
    private FakeNetwork net;
    private NetcBridge bridge;

    @Before
    public void start() throws Exception {
        Path tmp = Files.createTempDirectory("netc-onos-refusal");
        Path rules = tmp.resolve("rules");
        Files.createDirectories(rules);
        try (Stream<Path> s = Files.list(NetcServe.repo().resolve("rules"))) {
            for (Path f : s.filter(x -> x.toString().endsWith(".ndl")).collect(Collectors.toList())) {
                Files.copy(f, rules.resolve(f.getFileName()));
            }
        }
        Files.writeString(rules.resolve("zz_fault.ndl"),
                "ovs_flow(h, 0, 200, cat(\"in_port=1,tun_id=\", to_string(v2)), "
                        + "cat(\"load:\", to_string(v1), \"->NXM_NX_REG6[],resubmit(,40)\"), 1) :-\n"
                        + "    vm(t1, _, _, _, h), tenant(t1, v1), tenant(t2, v2), t1 != t2.\n");
        serve = NetcServe.start(tmp.resolve("state"), "--rules", rules.toString());
        String quickstart = Files.readString(NetcServe.repo().resolve("examples/quickstart/intent.ndl"));
        String topo = quickstart.lines().filter(l -> l.startsWith("switch(") || l.startsWith("link(")
                || l.startsWith("host(")).collect(Collectors.joining("\n"));
        String base = quickstart.lines().filter(l -> !topo.contains(l) || l.isBlank())
                .collect(Collectors.joining("\n"));
        net = FakeNetwork.fromFacts(topo);
        NetcP4Info info = NetcP4Info.parse(NetcPipeconf.p4InfoText());
        bridge = new NetcBridge(serve.client(), net.topology(),
                new OnosDeviceWriter(new TestApplicationId("org.netc.onos"), net.flowService, net.groupService,
                        10_000),
                new P4Updates(info), () -> List.of(new NetcClient.IntentFile("intent.ndl", base)));
    }

    @After
    public void stop() throws Exception {
        serve.close();
    }

    @Test
    public void aViolationIsRefusedWithNetcsCounterexamplesThroughRestAndCli() throws Exception {
        NetcWebResource rest = new NetcWebResource() {
            @Override
            protected NetcService service() {
                return bridge;
            }
        };
        Response r = rest.apply(false);
        assertEquals(422, r.getStatus());
        JsonNode err = new ObjectMapper().readTree((String) r.getEntity()).path("error");
        assertEquals("violation", err.path("code").asText());
        assertEquals("violated", err.path("detail").path("verdict").asText());
        boolean counterexample = false;
        for (JsonNode v : err.path("detail").path("report").path("verdicts")) {
            if (v.path("invariant").asText().equals("ISO-1")) {
                assertEquals("violated", v.path("status").asText());
                counterexample = v.path("counterexamples").size() > 0;
            }
        }
        assertTrue("netc's ISO-1 counterexamples come through", counterexample);
        assertEquals("nothing was written", 0, net.flowBatches);
        assertTrue(net.groups.isEmpty());
        assertEquals("nothing was committed", 0, serve.client().status().path("generation").asLong());

        // the CLI prints netc's own report text with the refusal
        try {
            bridge.apply(false);
            fail("a violation must be refused");
        } catch (NetcException e) {
            String text = NetcText.error(e);
            assertTrue(text, text.startsWith("error[violation]"));
            assertTrue(text, text.contains("ISO-1"));
        }

        // plan answers 200 with the verdict; a forced apply writes and commits, recorded as forced
        Response plan = rest.plan();
        assertEquals(200, plan.getStatus());
        assertEquals("violated", new ObjectMapper().readTree((String) plan.getEntity()).path("verdict").asText());
        Response forced = rest.apply(true);
        assertEquals(200, forced.getStatus());
        JsonNode f = new ObjectMapper().readTree((String) forced.getEntity());
        assertTrue(f.path("forced").asBoolean());
        assertEquals(1, f.path("generation").asLong());
        assertTrue(net.flowBatches > 0);
        String text = NetcText.change(f);
        assertTrue(text, text.contains("generation 1 (committed") && text.contains("verdict: violated"));
        Response st = rest.status();
        assertEquals(1, new ObjectMapper().readTree((String) st.getEntity()).path("onos")
                .path("programmed_generation").asLong());
    }
}
