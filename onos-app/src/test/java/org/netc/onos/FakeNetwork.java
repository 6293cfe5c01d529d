//! An ONOS network for the tests, on ONOS's own service adapters (the
//! onos-api tests jar): DeviceServiceAdapter, LinkServiceAdapter,
//! HostServiceAdapter answer from the devices, ports, links and hosts held
//! here; FlowRuleServiceAdapter and GroupServiceAdapter record what the app
//! writes, as a switch's tables would hold it, and can refuse a device.
package org.netc.onos;

import org.onlab.packet.ChassisId;
import org.onlab.packet.IpAddress;
import org.onlab.packet.MacAddress;
import org.onlab.packet.VlanId;
import org.onosproject.core.ApplicationId;
import org.onosproject.net.Annotations;
import org.onosproject.net.ConnectPoint;
import org.onosproject.net.DefaultAnnotations;
import org.onosproject.net.DefaultDevice;
import org.onosproject.net.DefaultHost;
import org.onosproject.net.DefaultLink;
import org.onosproject.net.DefaultPort;
import org.onosproject.net.Device;
import org.onosproject.net.DeviceId;
import org.onosproject.net.Host;
import org.onosproject.net.HostId;
import org.onosproject.net.HostLocation;
import org.onosproject.net.Link;
import org.onosproject.net.Port;
import org.onosproject.net.PortNumber;
import org.onosproject.net.device.DeviceServiceAdapter;
import org.onosproject.net.flow.FlowRule;
import org.onosproject.net.flow.FlowRuleOperation;
import org.onosproject.net.flow.FlowRuleOperations;
import org.onosproject.net.flow.FlowRuleServiceAdapter;
import org.onosproject.core.GroupId;
import org.onosproject.net.group.DefaultGroup;
import org.onosproject.net.group.DefaultGroupDescription;
import org.onosproject.net.group.Group;
import org.onosproject.net.group.GroupBuckets;
import org.onosproject.net.group.GroupDescription;
import org.onosproject.net.group.GroupEvent;
import org.onosproject.net.group.GroupListener;
import org.onosproject.net.group.GroupKey;
import org.onosproject.net.group.GroupServiceAdapter;
import org.onosproject.net.host.HostServiceAdapter;
import org.onosproject.net.link.LinkServiceAdapter;
import org.onosproject.net.provider.ProviderId;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class FakeNetwork {

    static final ProviderId PID = new ProviderId("p4runtime", "org.netc.onos.test");

    final Map<DeviceId, Device> devices = new LinkedHashMap<>();
    final Map<ConnectPoint, Boolean> portEnabled = new HashMap<>();
    final Set<DeviceId> down = new HashSet<>();
    final List<Link> links = new ArrayList<>();
    final List<Host> hosts = new ArrayList<>();

    /** What each device holds: flow rules by their ONOS identity, groups by key. */
    final Map<DeviceId, Map<Object, FlowRule>> tables = new HashMap<>();
    final Map<DeviceId, Map<GroupKey, GroupDescription>> groups = new HashMap<>();
    /** Devices whose flow rule operations fail (the device refuses). */
    final Set<DeviceId> refusing = new HashSet<>();
    int flowBatches;
    /** The listeners the app registered, to deliver ONOS's events to. */
    final List<org.onosproject.net.device.DeviceListener> deviceListeners = new ArrayList<>();
    final List<org.onosproject.net.link.LinkListener> linkListeners = new ArrayList<>();
    final List<org.onosproject.net.host.HostListener> hostListeners = new ArrayList<>();

    final DeviceServiceAdapter deviceService = new DeviceServiceAdapter() {
        @Override
        public Iterable<Device> getDevices() {
            return devices.values();
        }

        @Override
        public Device getDevice(DeviceId id) {
            return devices.get(id);
        }

        @Override
        public boolean isAvailable(DeviceId id) {
            return devices.containsKey(id) && !down.contains(id);
        }

        @Override
        public void addListener(org.onosproject.net.device.DeviceListener l) {
            deviceListeners.add(l);
        }

        @Override
        public void removeListener(org.onosproject.net.device.DeviceListener l) {
            deviceListeners.remove(l);
        }

        @Override
        public Port getPort(DeviceId id, PortNumber n) {
            Device d = devices.get(id);
            ConnectPoint cp = new ConnectPoint(id, n);
            return d == null ? null : new DefaultPort(d, n, portEnabled.getOrDefault(cp, true));
        }
    };

    final LinkServiceAdapter linkService = new LinkServiceAdapter() {
        @Override
        public Iterable<Link> getLinks() {
            return links;
        }

        @Override
        public void addListener(org.onosproject.net.link.LinkListener l) {
            linkListeners.add(l);
        }

        @Override
        public void removeListener(org.onosproject.net.link.LinkListener l) {
            linkListeners.remove(l);
        }

        @Override
        public Link getLink(ConnectPoint src, ConnectPoint dst) {
            return links.stream().filter(l -> l.src().equals(src) && l.dst().equals(dst)).findFirst()
                    .orElse(null);
        }
    };

    final HostServiceAdapter hostService = new HostServiceAdapter() {
        @Override
        public Iterable<Host> getHosts() {
            return hosts;
        }

        @Override
        public void addListener(org.onosproject.net.host.HostListener l) {
            hostListeners.add(l);
        }

        @Override
        public void removeListener(org.onosproject.net.host.HostListener l) {
            hostListeners.remove(l);
        }
    };

    final FlowRuleServiceAdapter flowService = new FlowRuleServiceAdapter() {
        @Override
        public void purgeFlowRules(DeviceId d, ApplicationId app) {
            tables.remove(d);
        }

        @Override
        public void apply(FlowRuleOperations ops) {
            flowBatches++;
            for (Set<FlowRuleOperation> stage : ops.stages()) {
                for (FlowRuleOperation op : stage) {
                    if (refusing.contains(op.rule().deviceId())) {
                        ops.callback().onError(ops);
                        return;
                    }
                }
                for (FlowRuleOperation op : stage) {
                    Map<Object, FlowRule> t = tables.computeIfAbsent(op.rule().deviceId(), k -> new HashMap<>());
                    if (op.type() == FlowRuleOperation.Type.REMOVE) {
                        t.remove(flowKey(op.rule()));
                    } else {
                        t.put(flowKey(op.rule()), op.rule());
                    }
                }
            }
            ops.callback().onSuccess(ops);
        }
    };

    final List<GroupListener> groupListeners = new ArrayList<>();

    /** As ONOS's group manager: the outcome comes as an event, a refusing device's as a failure. */
    final GroupServiceAdapter groupService = new GroupServiceAdapter() {
        @Override
        public void addGroup(GroupDescription g) {
            DefaultGroup stored = new DefaultGroup(new GroupId(g.givenGroupId()), g);
            if (refusing.contains(g.deviceId())) {
                fire(GroupEvent.Type.GROUP_ADD_FAILED, stored);
                return;
            }
            stored.setState(Group.GroupState.ADDED);
            groups.computeIfAbsent(g.deviceId(), k -> new HashMap<>()).put(g.appCookie(), stored);
            fire(GroupEvent.Type.GROUP_ADDED, stored);
        }

        @Override
        public Group getGroup(DeviceId d, GroupKey key) {
            GroupDescription g = groups.getOrDefault(d, Map.of()).get(key);
            return g == null ? null : (Group) g;
        }

        @Override
        public void setBucketsForGroup(DeviceId d, GroupKey key, GroupBuckets buckets, GroupKey newKey,
                                       ApplicationId app) {
            GroupDescription old = groups.get(d).get(key);
            DefaultGroup stored = new DefaultGroup(new GroupId(old.givenGroupId()), new DefaultGroupDescription(
                    d, old.type(), buckets, newKey, old.givenGroupId(), app));
            if (refusing.contains(d)) {
                fire(GroupEvent.Type.GROUP_UPDATE_FAILED, stored);
                return;
            }
            stored.setState(Group.GroupState.ADDED);
            groups.get(d).remove(key);
            groups.get(d).put(newKey, stored);
            fire(GroupEvent.Type.GROUP_UPDATED, stored);
        }

        @Override
        public void removeGroup(DeviceId d, GroupKey key, ApplicationId app) {
            if (!refusing.contains(d)) {
                groups.computeIfAbsent(d, k -> new HashMap<>()).remove(key);
            }
        }

        @Override
        public void purgeGroupEntries(DeviceId d, ApplicationId app) {
            groups.remove(d);
        }

        @Override
        public void addListener(GroupListener l) {
            groupListeners.add(l);
        }

        @Override
        public void removeListener(GroupListener l) {
            groupListeners.remove(l);
        }

        private void fire(GroupEvent.Type type, Group g) {
            GroupEvent e = new GroupEvent(type, g);
            new ArrayList<>(groupListeners).forEach(l -> l.event(e));
        }
    };

    /** ONOS's identity of a flow rule: device, table, selector, priority (its FlowId hashes these). */
    static Object flowKey(FlowRule r) {
        return List.of(r.deviceId(), r.table(), r.selector(), r.priority());
    }

    static DeviceId deviceId(String name) {
        return DeviceId.deviceId("device:" + name);
    }

    private static final Pattern SWITCH = Pattern.compile(
            "switch\\(\"([^\"]+)\", \"([^\"]+)\", ([0-9.]+), (\\d+), (\\d+), (\\d+)\\)\\.");
    private static final Pattern LINK = Pattern.compile(
            "link\\(\"([^\"]+)\", (\\d+), \"([^\"]+)\", (\\d+), (\\d+)\\)\\.");
    private static final Pattern HOST = Pattern.compile(
            "host\\(\"([^\"]+)\", ([0-9.]+), \"([^\"]+)\", (\\d+)\\)\\.");

    /**
     * The network a topology written as netc facts describes, as ONOS would
     * discover it: annotated P4 devices, a link per direction, hosts at their
     * ToR's port. (Test scaffolding: the fixtures are netc's own examples.)
     */
    static FakeNetwork fromFacts(String text) {
        FakeNetwork n = new FakeNetwork();
        for (String line : text.split("\n")) {
            String l = line.trim();
            Matcher m = SWITCH.matcher(l);
            if (m.matches()) {
                Annotations a = DefaultAnnotations.builder()
                        .set(TopologyFacts.NAME, m.group(1)).set(TopologyFacts.ROLE, m.group(2))
                        .set(TopologyFacts.LOOPBACK, m.group(3)).set("netc.host_cap", m.group(4))
                        .set("netc.ecmp_cap", m.group(5)).set("netc.tunnel_cap", m.group(6)).build();
                DeviceId id = deviceId(m.group(1));
                n.devices.put(id, new DefaultDevice(PID, id, Device.Type.SWITCH, "p4.org", "bmv2", "netc.p4",
                        m.group(1), new ChassisId(n.devices.size() + 1), a));
                continue;
            }
            m = LINK.matcher(l);
            if (m.matches()) {
                ConnectPoint a = new ConnectPoint(deviceId(m.group(1)), PortNumber.portNumber(m.group(2)));
                ConnectPoint b = new ConnectPoint(deviceId(m.group(3)), PortNumber.portNumber(m.group(4)));
                Annotations ann = DefaultAnnotations.builder().set(TopologyFacts.CAPACITY, m.group(5)).build();
                n.links.add(link(a, b, ann));
                n.links.add(link(b, a, ann));
                continue;
            }
            m = HOST.matcher(l);
            if (m.matches()) {
                Annotations a = DefaultAnnotations.builder().set(TopologyFacts.NAME, m.group(1)).build();
                MacAddress mac = MacAddress.valueOf(0x020000000000L + n.hosts.size() + 1);
                HostLocation loc = new HostLocation(deviceId(m.group(3)), PortNumber.portNumber(m.group(4)), 0);
                n.hosts.add(new DefaultHost(PID, HostId.hostId(mac), mac, VlanId.NONE, loc,
                        Set.of(IpAddress.valueOf(m.group(2))), a));
            }
        }
        return n;
    }

    static Link link(ConnectPoint a, ConnectPoint b, Annotations ann) {
        return DefaultLink.builder().providerId(PID).src(a).dst(b).type(Link.Type.DIRECT)
                .state(Link.State.ACTIVE).annotations(ann).build();
    }

    /** ONOS marks a link's port down (e.g. the port status of a cut cable). */
    void portDown(String device, long port) {
        portEnabled.put(new ConnectPoint(deviceId(device), PortNumber.portNumber(port)), false);
    }

    /** ONOS's PORT_UPDATED event for a port, to every device listener. */
    void firePortUpdated(String device, long port) {
        Device d = devices.get(deviceId(device));
        org.onosproject.net.device.DeviceEvent e = new org.onosproject.net.device.DeviceEvent(
                org.onosproject.net.device.DeviceEvent.Type.PORT_UPDATED, d,
                deviceService.getPort(d.id(), PortNumber.portNumber(port)));
        new ArrayList<>(deviceListeners).forEach(l -> l.event(e));
    }

    void portUp(String device, long port) {
        portEnabled.remove(new ConnectPoint(deviceId(device), PortNumber.portNumber(port)));
    }

    TopologyFacts topology() {
        return new TopologyFacts(deviceService, linkService, hostService);
    }
}
