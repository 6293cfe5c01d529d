//! What a switch holds, as comparable PI entities: read back from what the
//! app wrote through ONOS (FlowRules → PiTableEntry; INDIRECT groups →
//! action-profile members; ALL groups → multicast groups), or decoded from
//! the WriteRequest `netc compile` writes for it (official P4Runtime classes).
package org.netc.onos;

import org.netc.onos.p4.NetcP4Info;
import org.netc.onos.p4.P4Updates;
import org.onosproject.net.DeviceId;
import org.onosproject.net.flow.FlowRule;
import org.onosproject.net.flow.criteria.Criterion;
import org.onosproject.net.flow.criteria.PiCriterion;
import org.onosproject.net.flow.instructions.Instruction;
import org.onosproject.net.flow.instructions.Instructions;
import org.onosproject.net.flow.instructions.PiInstruction;
import org.onosproject.net.group.GroupBucket;
import org.onosproject.net.group.GroupDescription;
import org.onosproject.net.pi.model.PiTableId;
import org.onosproject.net.pi.runtime.PiAction;
import org.onosproject.net.pi.runtime.PiActionProfileMember;
import org.onosproject.net.pi.runtime.PiEntity;
import org.onosproject.net.pi.runtime.PiMatchKey;
import org.onosproject.net.pi.runtime.PiMulticastGroupEntry;
import org.onosproject.net.pi.runtime.PiTableEntry;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

final class SwitchState {

    final Set<PiTableEntry> entries;
    /** (action profile name, member id, action) */
    final Set<List<Object>> members;
    /** (multicast group id, sorted ports) */
    final Set<List<Object>> mcast;

    SwitchState(Set<PiTableEntry> entries, Set<List<Object>> members, Set<List<Object>> mcast) {
        this.entries = entries;
        this.members = members;
        this.mcast = mcast;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SwitchState)) {
            return false;
        }
        SwitchState s = (SwitchState) o;
        return entries.equals(s.entries) && members.equals(s.members) && mcast.equals(s.mcast);
    }

    @Override
    public int hashCode() {
        return Objects.hash(entries, members, mcast);
    }

    @Override
    public String toString() {
        return entries.size() + " entries " + entries + ", members " + members + ", mcast " + mcast;
    }

    private static List<Object> mcastOf(long group, List<Long> ports) {
        return Arrays.asList(group, ports.stream().sorted().collect(Collectors.toList()));
    }

    /** The switch's state as `netc compile` wrote it (DIR/p4/<switch>.txtpb). */
    static SwitchState compiled(Path out, String sw, NetcP4Info info) throws Exception {
        Path f = out.resolve("p4").resolve(sw + ".txtpb");
        P4Updates dec = new P4Updates(info);
        Set<PiTableEntry> entries = new java.util.HashSet<>();
        Set<List<Object>> members = new java.util.HashSet<>();
        Set<List<Object>> mcast = new java.util.HashSet<>();
        for (P4Updates.PiUpdate u : dec.decode(P4Updates.parseRequest(Files.readString(f)))) {
            PiEntity e = u.entity;
            if (e instanceof PiTableEntry) {
                entries.add((PiTableEntry) e);
            } else if (e instanceof PiActionProfileMember) {
                PiActionProfileMember m = (PiActionProfileMember) e;
                members.add(Arrays.asList(m.actionProfile().id(), m.id().id(), m.action()));
            } else {
                PiMulticastGroupEntry g = (PiMulticastGroupEntry) e;
                mcast.add(mcastOf(g.groupId(), g.replicas().stream().map(r -> r.egressPort().toLong())
                        .collect(Collectors.toList())));
            }
        }
        return new SwitchState(entries, members, mcast);
    }

    /** What the app wrote to `device` through ONOS's flow rule and group services. */
    static SwitchState written(FakeNetwork net, DeviceId device, NetcP4Info info) {
        Set<PiTableEntry> entries = new java.util.HashSet<>();
        for (FlowRule r : net.tables.getOrDefault(device, Map.of()).values()) {
            PiTableId table = (PiTableId) r.table();
            PiTableEntry.Builder b = PiTableEntry.builder().forTable(table);
            Criterion c = r.selector().getCriterion(Criterion.Type.PROTOCOL_INDEPENDENT);
            b.withMatchKey(c == null ? PiMatchKey.EMPTY
                    : PiMatchKey.builder().addFieldMatches(((PiCriterion) c).fieldMatches()).build());
            if (info.tableNamed(table.id()).needsPriority) {
                b.withPriority(r.priority());
            }
            for (Instruction i : r.treatment().allInstructions()) {
                if (i instanceof PiInstruction) {
                    b.withAction(((PiInstruction) i).action());
                }
            }
            entries.add(b.build());
        }
        Set<List<Object>> members = new java.util.HashSet<>();
        Set<List<Object>> mcast = new java.util.HashSet<>();
        for (GroupDescription g : net.groups.getOrDefault(device, Map.of()).values()) {
            if (g.type() == GroupDescription.Type.INDIRECT) {
                String key = new String(g.appCookie().key(), java.nio.charset.StandardCharsets.UTF_8);
                String profile = key.substring("netc-member:".length(), key.lastIndexOf(':'));
                PiAction action = (PiAction) ((PiInstruction) g.buckets().buckets().get(0).treatment()
                        .allInstructions().get(0)).action();
                members.add(Arrays.asList(profile, g.givenGroupId(), action));
            } else {
                List<Long> ports = new java.util.ArrayList<>();
                for (GroupBucket bk : g.buckets().buckets()) {
                    for (Instruction i : bk.treatment().allInstructions()) {
                        ports.add(((Instructions.OutputInstruction) i).port().toLong());
                    }
                }
                mcast.add(mcastOf(g.givenGroupId(), ports));
            }
        }
        return new SwitchState(entries, members, mcast);
    }

    static Set<String> switches(Path out) throws Exception {
        try (var s = Files.list(out.resolve("p4"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".txtpb"))
                    .map(n -> n.substring(0, n.length() - ".txtpb".length()))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

}
