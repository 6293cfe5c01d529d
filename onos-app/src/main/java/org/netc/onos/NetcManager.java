//! The app as an ONOS component: wires ONOS's services to [`NetcBridge`],
//! registers netc.p4's pipeconf, listens to device, link and host events
//! (each batch of changes → one apply of the new topology facts, after a
//! short quiet period so that a flapping port is one change, not ten), and
//! runs the delta-stream poller. Configuration: [`OsgiPropertyConstants`].
package org.netc.onos;

import org.netc.onos.p4.NetcP4Info;
import org.netc.onos.p4.NetcPipeconf;
import org.netc.onos.p4.P4Updates;
import org.onlab.util.Tools;
import org.onosproject.cfg.ComponentConfigService;
import org.onosproject.core.ApplicationId;
import org.onosproject.core.CoreService;
import org.onosproject.net.device.DeviceEvent;
import org.onosproject.net.device.DeviceListener;
import org.onosproject.net.device.DeviceService;
import org.onosproject.net.flow.FlowRuleService;
import org.onosproject.net.group.GroupService;
import org.onosproject.net.host.HostListener;
import org.onosproject.net.host.HostService;
import org.onosproject.net.link.LinkListener;
import org.onosproject.net.link.LinkService;
import org.onosproject.net.pi.service.PiPipeconfService;
import org.osgi.service.component.ComponentContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.netc.onos.OsgiPropertyConstants.APPLY_ON_TOPOLOGY;
import static org.netc.onos.OsgiPropertyConstants.APPLY_ON_TOPOLOGY_DEFAULT;
import static org.netc.onos.OsgiPropertyConstants.DEVICE_CONFIG;
import static org.netc.onos.OsgiPropertyConstants.DEVICE_CONFIG_DEFAULT;
import static org.netc.onos.OsgiPropertyConstants.INTENT_DIR;
import static org.netc.onos.OsgiPropertyConstants.INTENT_DIR_DEFAULT;
import static org.netc.onos.OsgiPropertyConstants.NETC_URL;
import static org.netc.onos.OsgiPropertyConstants.NETC_URL_DEFAULT;
import static org.netc.onos.OsgiPropertyConstants.TOKEN_FILE;
import static org.netc.onos.OsgiPropertyConstants.TOKEN_FILE_DEFAULT;

@Component(immediate = true, service = NetcService.class,
        property = {
                NETC_URL + "=" + NETC_URL_DEFAULT,
                TOKEN_FILE + "=" + TOKEN_FILE_DEFAULT,
                INTENT_DIR + "=" + INTENT_DIR_DEFAULT,
                DEVICE_CONFIG + "=" + DEVICE_CONFIG_DEFAULT,
                APPLY_ON_TOPOLOGY + ":Boolean=" + APPLY_ON_TOPOLOGY_DEFAULT,
        })
public class NetcManager implements NetcService {

    private static final Logger LOG = LoggerFactory.getLogger(NetcManager.class);
    /** A burst of topology events is one change once it has been quiet this long. */
    private static final long QUIET_MILLIS = 500;
    private static final long DEVICE_TIMEOUT_MILLIS = 30_000;
    private static final int POLL_WAIT_SECONDS = 25;

    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected CoreService coreService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected ComponentConfigService cfgService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected DeviceService deviceService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected LinkService linkService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected HostService hostService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected FlowRuleService flowRuleService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected GroupService groupService;
    @Reference(cardinality = ReferenceCardinality.MANDATORY)
    protected PiPipeconfService pipeconfService;

    private String netcUrl = NETC_URL_DEFAULT;
    private String tokenFile = TOKEN_FILE_DEFAULT;
    private String intentDir = INTENT_DIR_DEFAULT;
    private String deviceConfig = DEVICE_CONFIG_DEFAULT;
    private boolean applyOnTopologyChange = APPLY_ON_TOPOLOGY_DEFAULT;

    private ApplicationId appId;
    private volatile NetcBridge bridge;
    private ScheduledExecutorService executor;
    private ScheduledFuture<?> pending;
    private volatile boolean running;
    private Thread poller;

    private final DeviceListener deviceListener = e -> {
        if (e.type() != DeviceEvent.Type.PORT_STATS_UPDATED) {
            topologyEvent();
        }
    };
    private final LinkListener linkListener = e -> topologyEvent();
    private final HostListener hostListener = e -> topologyEvent();

    @Activate
    protected void activate(ComponentContext context) throws Exception {
        appId = coreService.registerApplication("org.netc.onos");
        cfgService.registerProperties(getClass());
        readConfig(context);
        NetcP4Info info = NetcP4Info.parse(NetcPipeconf.p4InfoText());
        Path work = Files.createTempDirectory("netc-onos");
        pipeconfService.register(NetcPipeconf.build(info, work,
                deviceConfig.isEmpty() ? null : Path.of(deviceConfig)));
        bridge = newBridge(info);
        executor = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "netc-topology"));
        deviceService.addListener(deviceListener);
        linkService.addListener(linkListener);
        hostService.addListener(hostListener);
        running = true;
        poller = new Thread(this::pollLoop, "netc-deltas");
        poller.setDaemon(true);
        poller.start();
        topologyEvent();
        LOG.info("netc: started (netc serve at {})", netcUrl);
    }

    @Modified
    protected void modified(ComponentContext context) throws Exception {
        readConfig(context);
        bridge = newBridge(NetcP4Info.parse(NetcPipeconf.p4InfoText()));
        topologyEvent();
    }

    @Deactivate
    protected void deactivate() {
        running = false;
        deviceService.removeListener(deviceListener);
        linkService.removeListener(linkListener);
        hostService.removeListener(hostListener);
        if (poller != null) {
            poller.interrupt();
        }
        if (executor != null) {
            executor.shutdownNow();
        }
        pipeconfService.unregister(NetcPipeconf.ID);
        cfgService.unregisterProperties(getClass(), false);
        LOG.info("netc: stopped");
    }

    private void readConfig(ComponentContext context) {
        if (context == null) {
            return;
        }
        Dictionary<?, ?> p = context.getProperties();
        netcUrl = orDefault(Tools.get(p, NETC_URL), NETC_URL_DEFAULT);
        tokenFile = orDefault(Tools.get(p, TOKEN_FILE), TOKEN_FILE_DEFAULT);
        intentDir = orDefault(Tools.get(p, INTENT_DIR), INTENT_DIR_DEFAULT);
        deviceConfig = orDefault(Tools.get(p, DEVICE_CONFIG), DEVICE_CONFIG_DEFAULT);
        String apply = Tools.get(p, APPLY_ON_TOPOLOGY);
        applyOnTopologyChange = apply == null ? APPLY_ON_TOPOLOGY_DEFAULT : Boolean.parseBoolean(apply);
    }

    private static String orDefault(String v, String d) {
        return v == null ? d : v.trim();
    }

    private NetcBridge newBridge(NetcP4Info info) {
        NetcClient client = new NetcClient(netcUrl, readToken());
        OnosDeviceWriter writer = new OnosDeviceWriter(appId, flowRuleService, groupService,
                DEVICE_TIMEOUT_MILLIS);
        return new NetcBridge(client, new TopologyFacts(deviceService, linkService, hostService), writer,
                new P4Updates(info), this::readIntent);
    }

    private String readToken() {
        try {
            return Files.readString(Path.of(tokenFile)).trim();
        } catch (IOException e) {
            LOG.error("netc: cannot read the token file {}: {}", tokenFile, e.getMessage());
            return "";
        }
    }

    /** The `.ndl` files of the intent directory, by name, read at each apply. */
    private List<NetcClient.IntentFile> readIntent() {
        List<NetcClient.IntentFile> out = new ArrayList<>();
        if (intentDir.isEmpty()) {
            return out;
        }
        try (Stream<Path> s = Files.list(Path.of(intentDir))) {
            for (Path f : s.filter(x -> x.toString().endsWith(".ndl")).sorted().collect(Collectors.toList())) {
                out.add(new NetcClient.IntentFile(f.getFileName().toString(), Files.readString(f)));
            }
        } catch (IOException e) {
            LOG.error("netc: cannot read the intent directory {}: {}", intentDir, e.getMessage());
        }
        return out;
    }

    private synchronized void topologyEvent() {
        if (!applyOnTopologyChange || executor == null) {
            return;
        }
        if (pending != null) {
            pending.cancel(false);
        }
        pending = executor.schedule(() -> {
            try {
                bridge.topologyChanged();
            } catch (NetcException e) {
                LOG.warn("netc: the topology change was not applied: {} ({})", e.getMessage(), e.code());
            }
        }, QUIET_MILLIS, TimeUnit.MILLISECONDS);
    }

    private void pollLoop() {
        while (running) {
            try {
                bridge.pollOnce(POLL_WAIT_SECONDS);
            } catch (NetcException e) {
                LOG.warn("netc: delta stream: {} ({})", e.getMessage(), e.code());
                try {
                    Thread.sleep(5000);
                } catch (InterruptedException x) {
                    return;
                }
            }
        }
    }

    @Override
    public com.fasterxml.jackson.databind.JsonNode plan() throws NetcException {
        return bridge.plan();
    }

    @Override
    public com.fasterxml.jackson.databind.JsonNode apply(boolean force) throws NetcException {
        return bridge.apply(force);
    }

    @Override
    public com.fasterxml.jackson.databind.JsonNode verify() throws NetcException {
        return bridge.verify();
    }

    @Override
    public com.fasterxml.jackson.databind.JsonNode status() throws NetcException {
        return bridge.status();
    }
}
