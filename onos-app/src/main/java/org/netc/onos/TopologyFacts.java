//! ONOS's view of the network as netc facts (specs/intent.md §2): the
//! `switch`, `link`, `host`, `link_down` and `switch_down` facts of one
//! intent text, rebuilt from DeviceService, LinkService and HostService
//! whenever they change.
//!
//! What becomes a fact: a device annotated `netc.role` and `netc.loopback`
//! is a netc switch (name `netc.name`, else its device id made a valid netc
//! name; table capacities `netc.host_cap`/`netc.ecmp_cap`/`netc.tunnel_cap`,
//! else netc.p4's 16384/4096/512). A link ONOS holds between two such
//! switches is a `link` fact; while it does not carry traffic (not ACTIVE
//! in both directions, or a port disabled) each end that is down is a
//! `link_down(switch, port)` fact (the first end when ONOS says only that
//! the link is inactive), and a switch ONOS holds unavailable is a
//! `switch_down` fact. netc's rules recompute the routes, multicast trees
//! and the VIP placement around them, and move a VIP off a switch that is
//! down to the SMuxes: failover is compiled, not hand-coded here, and a
//! link going down is a fact change the warm engine answers with deltas.
//! A switch that is down keeps its `switch` fact, so its hosts stay named
//! and, unreachable, are reported by netc's verifier (REACH-1) before
//! anything is written. An ONOS host annotated `netc.name` (a server with
//! netc's OVS bridge) attached to a netc switch is a `host` fact (its first
//! IPv4 address is the underlay address). Guarantees: the text is
//! deterministic (sorted), so an unchanged topology gives an identical text
//! and posting it changes nothing.
package org.netc.onos;

import org.onlab.packet.IpAddress;
import org.onosproject.net.ConnectPoint;
import org.onosproject.net.Device;
import org.onosproject.net.DeviceId;
import org.onosproject.net.Host;
import org.onosproject.net.Link;
import org.onosproject.net.Port;
import org.onosproject.net.device.DeviceService;
import org.onosproject.net.host.HostService;
import org.onosproject.net.link.LinkService;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

public final class TopologyFacts {

    public static final String FILE_NAME = "onos-topology.ndl";
    public static final String ROLE = "netc.role";
    public static final String LOOPBACK = "netc.loopback";
    public static final String NAME = "netc.name";
    public static final String CAPACITY = "netc.capacity_mbps";
    /** netc.p4's table sizes (specs/intent.md §2). */
    private static final long[] DEFAULT_CAPS = {16384, 4096, 512};
    private static final String[] CAP_KEYS = {"netc.host_cap", "netc.ecmp_cap", "netc.tunnel_cap"};
    private static final long DEFAULT_LINK_MBPS = 10000;

    private final DeviceService devices;
    private final LinkService links;
    private final HostService hosts;

    public TopologyFacts(DeviceService devices, LinkService links, HostService hosts) {
        this.devices = devices;
        this.links = links;
        this.hosts = hosts;
    }

    /** The netc name of every netc switch ONOS knows, by device id. */
    public Map<DeviceId, String> switchNames() {
        Map<DeviceId, String> out = new HashMap<>();
        for (Device d : devices.getDevices()) {
            if (isSwitch(d)) {
                out.put(d.id(), nameOf(d));
            }
        }
        return out;
    }

    /** ONOS holds the device unavailable: it cannot be written now. */
    public boolean isDown(DeviceId id) {
        return !devices.isAvailable(id);
    }

    private static boolean isSwitch(Device d) {
        return d.annotations().value(ROLE) != null && d.annotations().value(LOOPBACK) != null;
    }

    /** A device's netc name: `netc.name`, else its id with every other character a `-`. */
    public static String nameOf(Device d) {
        String n = d.annotations().value(NAME);
        if (n == null) {
            n = d.id().toString().replaceAll("[^A-Za-z0-9._-]", "-").replaceAll("^[^A-Za-z0-9]+", "");
        }
        return n;
    }

    /** The topology as one intent text. */
    public String text() {
        Map<DeviceId, String> names = switchNames();
        TreeMap<String, String> switches = new TreeMap<>();
        TreeSet<String> downFacts = new TreeSet<>();
        for (Device d : devices.getDevices()) {
            if (!isSwitch(d)) {
                continue;
            }
            StringBuilder caps = new StringBuilder();
            for (int i = 0; i < CAP_KEYS.length; i++) {
                String v = d.annotations().value(CAP_KEYS[i]);
                caps.append(", ").append(v != null ? Long.parseLong(v.trim()) : DEFAULT_CAPS[i]);
            }
            String name = names.get(d.id());
            switches.put(name, String.format("switch(%s, %s, %s%s).", quote(name),
                    quote(d.annotations().value(ROLE)), d.annotations().value(LOOPBACK).trim(), caps));
            if (!devices.isAvailable(d.id())) {
                downFacts.add(String.format("switch_down(%s).", quote(name)));
            }
        }
        TreeSet<String> linkFacts = new TreeSet<>();
        for (Link l : links.getLinks()) {
            linkFacts(l, names, linkFacts, downFacts);
        }
        TreeSet<String> hostFacts = new TreeSet<>();
        for (Host h : hosts.getHosts()) {
            String name = h.annotations().value(NAME);
            String tor = names.get(h.location().deviceId());
            Optional<IpAddress> ip = h.ipAddresses().stream().filter(IpAddress::isIp4).sorted().findFirst();
            if (name != null && tor != null && ip.isPresent()) {
                hostFacts.add(String.format("host(%s, %s, %s, %d).", quote(name), ip.get(), quote(tor),
                        h.location().port().toLong()));
            }
        }
        StringBuilder out = new StringBuilder();
        out.append("// ONOS's topology as netc facts (switch, link, host, link_down, switch_down), ")
                .append("written by the netc ONOS app.\n");
        switches.values().forEach(s -> out.append(s).append('\n'));
        linkFacts.forEach(s -> out.append(s).append('\n'));
        hostFacts.forEach(s -> out.append(s).append('\n'));
        downFacts.forEach(s -> out.append(s).append('\n'));
        return out.toString();
    }

    /**
     * A link's fact, listed once (from the end whose name sorts first), and
     * while it carries nothing, a `link_down` fact for each end that is down.
     * A switch that is down is `switch_down` already: its ends need no more.
     */
    private void linkFacts(Link l, Map<DeviceId, String> names, Set<String> linkOut, Set<String> downOut) {
        String a = names.get(l.src().deviceId());
        String b = names.get(l.dst().deviceId());
        if (a == null || b == null) {
            return;
        }
        ConnectPoint x = l.src();
        ConnectPoint y = l.dst();
        if (a.compareTo(b) > 0) {
            String t = a;
            a = b;
            b = t;
            x = l.dst();
            y = l.src();
        }
        String cap = l.annotations().value(CAPACITY);
        long mbps = cap != null ? Long.parseLong(cap.trim()) : speedOf(x).orElse(DEFAULT_LINK_MBPS);
        linkOut.add(String.format("link(%s, %d, %s, %d, %d).", quote(a), x.port().toLong(), quote(b),
                y.port().toLong(), mbps));
        boolean xDown = portDown(x);
        boolean yDown = portDown(y);
        if (xDown) {
            downOut.add(String.format("link_down(%s, %d).", quote(a), x.port().toLong()));
        }
        if (yDown) {
            downOut.add(String.format("link_down(%s, %d).", quote(b), y.port().toLong()));
        }
        // ONOS holds each direction; both must be ACTIVE for the link to carry traffic
        Link back = links.getLink(l.dst(), l.src());
        boolean inactive = l.state() != Link.State.ACTIVE || (back != null && back.state() != Link.State.ACTIVE);
        if (inactive && !xDown && !yDown && devices.isAvailable(x.deviceId()) && devices.isAvailable(y.deviceId())) {
            downOut.add(String.format("link_down(%s, %d).", quote(a), x.port().toLong()));
        }
    }

    /** The port is disabled (its switch being up: a switch down is `switch_down`). */
    private boolean portDown(ConnectPoint cp) {
        if (!devices.isAvailable(cp.deviceId())) {
            return false;
        }
        Port p = devices.getPort(cp.deviceId(), cp.port());
        return p != null && !p.isEnabled();
    }

    private Optional<Long> speedOf(ConnectPoint cp) {
        Port p = devices.getPort(cp.deviceId(), cp.port());
        return p != null && p.portSpeed() > 0 ? Optional.of(p.portSpeed()) : Optional.empty();
    }

    static String quote(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
