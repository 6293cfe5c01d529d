//! The app's logic, free of OSGi so that tests drive it with ONOS's service
//! adapters and a real `netc serve`: ONOS → netc (the topology as facts,
//! applied when it changes) and netc → ONOS (plans programmed device by
//! device before netc commits; the delta stream programmed as it comes).
//!
//! Two paths program devices. (1) An apply made through the app — `netc:apply`,
//! REST, or a topology change — plans first (`POST /v1/plan`: the verdict and
//! every device's entries against the base generation), refuses a violation,
//! writes each changed device through ONOS one at a time, and only then
//! commits (`POST /v1/apply` with `base`); a device that refuses puts back
//! the devices already written and nothing is committed, so netc's generation
//! and the devices stay as they were. (2) Changes committed by anyone else
//! (`netc apply --server`, another tool) arrive on the delta stream
//! (`GET /v1/deltas`, long-poll) with netc's rendering of each device's
//! change; the poller writes those whose generation the app has not written
//! itself. Both hold one lock, so a generation is written once.
//!
//! The daemon must run with `--no-push` (or an inventory without these
//! switches): the app, not netc, writes them.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.netc.onos.p4.P4DecodeException;
import org.netc.onos.p4.P4Updates;
import org.onosproject.net.DeviceId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

public final class NetcBridge implements NetcService {

    private static final Logger LOG = LoggerFactory.getLogger(NetcBridge.class);
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final NetcClient client;
    private final TopologyFacts topology;
    private final DeviceWriter writer;
    private final P4Updates decoder;
    private final Supplier<List<NetcClient.IntentFile>> baseIntent;

    /** The newest generation whose changes the app has written (or knows written). */
    private long programmedGeneration;
    /** The delta stream's `since` for the next poll. */
    private long streamSince;
    private String appliedTopology;
    private ObjectNode lastFailure;
    /** Switches whose rules the app dropped while they were down: their whole state is owed. */
    private final java.util.Set<String> wiped = new java.util.TreeSet<>();

    public NetcBridge(NetcClient client, TopologyFacts topology, DeviceWriter writer, P4Updates decoder,
                      Supplier<List<NetcClient.IntentFile>> baseIntent) {
        this.client = client;
        this.topology = topology;
        this.writer = writer;
        this.decoder = decoder;
        this.baseIntent = baseIntent;
    }

    /** The intent netc gets: the base intent files and ONOS's topology as one more file. */
    public List<NetcClient.IntentFile> intent() {
        List<NetcClient.IntentFile> files = new ArrayList<>(baseIntent.get());
        files.add(new NetcClient.IntentFile(TopologyFacts.FILE_NAME, topology.text()));
        return files;
    }

    @Override
    public JsonNode plan() throws NetcException {
        return client.plan(intent(), true);
    }

    @Override
    public JsonNode verify() throws NetcException {
        return client.verify();
    }

    @Override
    public synchronized JsonNode status() throws NetcException {
        ObjectNode s = client.status().deepCopy();
        ObjectNode app = s.putObject("onos");
        app.put("programmed_generation", programmedGeneration);
        app.put("stream_since", streamSince);
        ObjectNode devs = app.putObject("devices");
        new TreeMap<>(devicesByName()).forEach((n, id) -> devs.put(n, id.toString()));
        app.set("last_failure", lastFailure);
        return s;
    }

    private Map<String, DeviceId> devicesByName() {
        Map<String, DeviceId> out = new TreeMap<>();
        topology.switchNames().forEach((id, name) -> out.put(name, id));
        return out;
    }

    /**
     * Applies the intent with ONOS's current topology if the topology differs
     * from the one last applied; returns the apply's answer, or null when
     * nothing changed.
     */
    public synchronized JsonNode topologyChanged() throws NetcException {
        String text = topology.text();
        if (text.equals(appliedTopology)) {
            return null;
        }
        return apply(false);
    }

    @Override
    public synchronized JsonNode apply(boolean force) throws NetcException {
        List<NetcClient.IntentFile> files = intent();
        String topo = files.get(files.size() - 1).text;
        Map<String, DeviceId> ids = devicesByName();
        java.util.Set<String> back = new java.util.TreeSet<>();
        for (String name : wiped) {
            DeviceId id = ids.get(name);
            if (id != null && !topology.isDown(id)) {
                back.add(name);
            }
        }
        JsonNode plan = client.plan(files, true, back);
        String verdict = plan.path("verdict").asText();
        if ("violated".equals(verdict) && !force) {
            ObjectNode detail = MAPPER.createObjectNode();
            detail.put("refused", true);
            detail.put("verdict", verdict);
            detail.set("report", plan.get("report"));
            detail.set("report_text", plan.get("report_text"));
            throw failure(new NetcException(422, "violation",
                    "netc's verifier found a violation: nothing was written to any device",
                    "read report_text; fix the intent, or apply with force", detail));
        }
        long base = plan.path("base").asLong();
        List<String> written = new ArrayList<>();
        List<DeviceChange> changes = new ArrayList<>();
        ArrayNode notProgrammed = MAPPER.createArrayNode();
        ArrayNode down = MAPPER.createArrayNode();
        // PLAN-1's order for switches: every switch is in one phase (VM moves order
        // only hosts), by name (verify/src/plan/migration.rs)
        // a switch that is down (switch_down) is not written: what the app wrote
        // there is dropped, and it gets its whole state when it is back
        for (Map.Entry<String, DeviceId> e : new TreeMap<>(ids).entrySet()) {
            if (topology.isDown(e.getValue())) {
                if (wiped.add(e.getKey())) {
                    writer.forget(e.getValue());
                }
                down.add(e.getKey());
            }
        }
        TreeMap<String, JsonNode> devices = new TreeMap<>();
        plan.path("devices").fields().forEachRemaining(d -> devices.put(d.getKey(), d.getValue()));
        for (Map.Entry<String, JsonNode> d : devices.entrySet()) {
            DeviceId id = ids.get(d.getKey());
            if (id != null && topology.isDown(id)) {
                continue;
            }
            DeviceChange change = decode(d.getKey(), d.getValue().path("entries"));
            if (change.isEmpty()) {
                if (change.other > 0) {
                    notProgrammed.add(d.getKey());
                }
                continue;
            }
            if (id == null) {
                notProgrammed.add(d.getKey());
                continue;
            }
            try {
                writer.write(id, change);
                written.add(d.getKey());
                changes.add(change);
            } catch (DeviceWriter.DeviceFailedException e) {
                // the refusing device may hold part of its change: it is put back too
                written.add(d.getKey());
                changes.add(change);
                ArrayNode restored = undo(ids, written, changes);
                ObjectNode detail = MAPPER.createObjectNode();
                detail.put("device", d.getKey());
                detail.put("kind", "p4");
                detail.put("address", id.toString());
                detail.put("reason", e.getMessage());
                detail.set("restored", restored);
                detail.put("committed", false);
                detail.put("generation", base);
                throw failure(new NetcException(502, "device_failed",
                        d.getKey() + " (" + id + ") refused its change: " + e.getMessage()
                                + "; the devices already changed were put back and netc committed nothing",
                        "see the device in ONOS (`flows`, `groups`, the driver's log), then apply again",
                        detail));
            }
        }
        JsonNode applied;
        try {
            applied = client.apply(files, base, true, force, "ONOS app");
        } catch (NetcException e) {
            undo(ids, written, changes);
            throw failure(e);
        }
        programmedGeneration = Math.max(programmedGeneration, applied.path("generation").asLong());
        wiped.removeAll(back);
        appliedTopology = topo;
        lastFailure = null;
        ObjectNode out = applied.deepCopy();
        ObjectNode app = out.putObject("onos");
        ArrayNode w = app.putArray("programmed");
        written.forEach(w::add);
        app.set("not_programmed", notProgrammed);
        app.set("down", down);
        return out;
    }

    private DeviceChange decode(String device, JsonNode entries) throws NetcException {
        try {
            return DeviceChange.of(decoder, entries);
        } catch (P4DecodeException e) {
            throw failure(new NetcException(500, "p4_decode", device + ": " + e.getMessage(),
                    "the app and netc disagree on netc.p4's P4Info: install the app built with this netc", null));
        }
    }

    /** Writes the inverse of each written change, newest first; returns the devices put back. */
    private ArrayNode undo(Map<String, DeviceId> ids, List<String> written, List<DeviceChange> changes) {
        ArrayNode restored = MAPPER.createArrayNode();
        for (int i = written.size() - 1; i >= 0; i--) {
            String name = written.get(i);
            try {
                writer.write(ids.get(name), changes.get(i).inverse());
                restored.add(name);
            } catch (DeviceWriter.DeviceFailedException e) {
                LOG.error("netc: could not put {} back: {}", name, e.getMessage());
            }
        }
        return restored;
    }

    private NetcException failure(NetcException e) {
        lastFailure = e.toJson();
        return e;
    }

    /**
     * One long-poll of the delta stream: writes every device change of a
     * generation newer than the last one written; returns how many device
     * changes were written. A stream that restarted or moved past what it
     * keeps (409/410) is resynced from `/v1/status`.
     */
    public int pollOnce(int waitSeconds) throws NetcException {
        JsonNode answer;
        long since;
        synchronized (this) {
            since = streamSince;
        }
        try {
            answer = client.deltas(since, waitSeconds);
        } catch (NetcException e) {
            if (e.code().equals("too_old") || e.code().equals("unknown_seq")) {
                resync();
                return 0;
            }
            throw e;
        }
        int n = 0;
        synchronized (this) {
            if (streamSince != since) {
                return 0;
            }
            Map<String, DeviceId> ids = devicesByName();
            long newest = programmedGeneration;
            for (JsonNode e : answer.path("deltas")) {
                long gen = e.path("generation").asLong();
                if (gen <= programmedGeneration) {
                    continue;
                }
                newest = Math.max(newest, gen);
                String name = e.path("device").asText();
                DeviceId id = ids.get(name);
                DeviceChange change;
                try {
                    change = DeviceChange.of(decoder, e.path("entries"));
                } catch (P4DecodeException x) {
                    failure(new NetcException(500, "p4_decode", name + ": " + x.getMessage(), null, null));
                    continue;
                }
                if (id == null || change.isEmpty()) {
                    continue;
                }
                if (topology.isDown(id)) {
                    writer.forget(id);
                    wiped.add(name);
                    continue;
                }
                try {
                    writer.write(id, change);
                    n++;
                } catch (DeviceWriter.DeviceFailedException x) {
                    // committed by netc already: reported, and visible in `netc:status`
                    ObjectNode detail = MAPPER.createObjectNode();
                    detail.put("device", name);
                    detail.put("generation", gen);
                    failure(new NetcException(502, "device_failed", name + " refused generation " + gen
                            + " from the delta stream: " + x.getMessage(),
                            "the generation is committed in netc; fix the device, then `netc rollback` or apply again",
                            detail));
                    LOG.error("netc: {}", x.getMessage());
                }
            }
            programmedGeneration = newest;
            streamSince = answer.path("next").asLong(streamSince);
        }
        return n;
    }

    private synchronized void resync() throws NetcException {
        JsonNode st = client.status();
        streamSince = st.path("deltas").path("last").asLong();
        programmedGeneration = Math.max(programmedGeneration, st.path("generation").asLong());
        failure(new NetcException(409, "resync", "the delta stream restarted or moved past what it keeps; "
                + "polling from " + streamSince, "apply again to make sure every device holds the generation",
                null));
    }

    public synchronized long programmedGeneration() {
        return programmedGeneration;
    }
}
