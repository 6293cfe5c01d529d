//! A device change written through ONOS: table entries as FlowRules (the
//! entry's PiCriterion as the selector, its PiAction or action-profile
//! member id as a PiTableAction treatment, its table as the rule's table),
//! action-profile members and multicast groups through the GroupService.
//!
//! Order within a device (as netc's phases, p4/README.md): members and
//! multicast groups first, then the table entries added, then the entries
//! removed, then the members and groups removed, so no entry ever names a
//! member that is not there. The flow rules are one FlowRuleOperations
//! (additions, then removals as a second stage) whose outcome is awaited:
//! `onError` — the device refused — or no answer within the timeout is a
//! DeviceFailedException, which the caller turns into "not committed".
//!
//! Groups: a member is an INDIRECT group of one bucket whose treatment is
//! the member's PiAction (group id = member id); a multicast group an ALL
//! group with one output bucket per replica (group id = the multicast group
//! id). ONOS's group service answers with events: the writer waits for each
//! group's GROUP_ADDED/GROUP_UPDATED, and a *_FAILED refuses the device like
//! a flow rule error. A group ONOS already holds under the key (a modified
//! member) gets the new buckets. Removals are not awaited: nothing refers to
//! a removed group any more.
package org.netc.onos;

import org.onosproject.core.ApplicationId;
import org.onosproject.net.DeviceId;
import org.onosproject.net.flow.DefaultFlowRule;
import org.onosproject.net.flow.DefaultTrafficSelector;
import org.onosproject.net.flow.DefaultTrafficTreatment;
import org.onosproject.net.flow.FlowRule;
import org.onosproject.net.flow.FlowRuleOperations;
import org.onosproject.net.flow.FlowRuleOperationsContext;
import org.onosproject.net.flow.FlowRuleService;
import org.onosproject.net.flow.TrafficSelector;
import org.onosproject.net.flow.criteria.PiCriterion;
import org.onosproject.net.group.DefaultGroupBucket;
import org.onosproject.net.group.DefaultGroupDescription;
import org.onosproject.net.group.DefaultGroupKey;
import org.onosproject.net.group.GroupBucket;
import org.onosproject.net.group.GroupBuckets;
import org.onosproject.net.group.GroupDescription;
import org.onosproject.net.group.Group;
import org.onosproject.net.group.GroupKey;
import org.onosproject.net.group.GroupListener;
import org.onosproject.net.group.GroupService;
import org.onosproject.net.pi.runtime.PiActionProfileMember;
import org.onosproject.net.pi.runtime.PiFieldMatch;
import org.onosproject.net.pi.runtime.PiMulticastGroupEntry;
import org.onosproject.net.pi.runtime.PiPreReplica;
import org.onosproject.net.pi.runtime.PiTableEntry;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class OnosDeviceWriter implements DeviceWriter {

    /** FlowRule priority of entries of tables without priorities (exact/LPM): ONOS needs one. */
    public static final int NO_PRIORITY = 10;

    private final ApplicationId appId;
    private final FlowRuleService flows;
    private final GroupService groups;
    private final long timeoutMillis;

    public OnosDeviceWriter(ApplicationId appId, FlowRuleService flows, GroupService groups, long timeoutMillis) {
        this.appId = appId;
        this.flows = flows;
        this.groups = groups;
        this.timeoutMillis = timeoutMillis;
    }

    /** A table entry as the FlowRule that carries it. */
    public static FlowRule flowRule(ApplicationId appId, DeviceId device, PiTableEntry e) {
        TrafficSelector selector = DefaultTrafficSelector.emptySelector();
        if (!e.matchKey().fieldMatches().isEmpty()) {
            PiCriterion.Builder c = PiCriterion.builder();
            for (PiFieldMatch m : e.matchKey().fieldMatches()) {
                c.add(m);
            }
            selector = DefaultTrafficSelector.builder().matchPi(c.build()).build();
        }
        return DefaultFlowRule.builder()
                .forDevice(device)
                .forTable(e.table())
                .fromApp(appId)
                .withSelector(selector)
                .withTreatment(DefaultTrafficTreatment.builder().piTableAction(e.action()).build())
                .withPriority(e.priority().orElse(NO_PRIORITY))
                .makePermanent()
                .build();
    }

    static GroupKey memberKey(PiActionProfileMember m) {
        return new DefaultGroupKey(("netc-member:" + m.actionProfile().id() + ":" + m.id().id())
                .getBytes(StandardCharsets.UTF_8));
    }

    static GroupKey mcastKey(PiMulticastGroupEntry g) {
        return new DefaultGroupKey(("netc-mcast:" + g.groupId()).getBytes(StandardCharsets.UTF_8));
    }

    GroupDescription member(DeviceId device, PiActionProfileMember m) {
        GroupBucket b = DefaultGroupBucket.createIndirectGroupBucket(
                DefaultTrafficTreatment.builder().piTableAction(m.action()).build());
        return new DefaultGroupDescription(device, GroupDescription.Type.INDIRECT,
                new GroupBuckets(List.of(b)), memberKey(m), m.id().id(), appId);
    }

    GroupDescription mcast(DeviceId device, PiMulticastGroupEntry g) {
        List<GroupBucket> buckets = new ArrayList<>();
        for (PiPreReplica r : g.replicas()) {
            buckets.add(DefaultGroupBucket.createAllGroupBucket(
                    DefaultTrafficTreatment.builder().setOutput(r.egressPort()).build()));
        }
        return new DefaultGroupDescription(device, GroupDescription.Type.ALL, new GroupBuckets(buckets),
                mcastKey(g), (int) g.groupId(), appId);
    }

    /**
     * Adds the groups (a group whose key ONOS already holds gets the new
     * buckets: a modified member or multicast group) and waits for ONOS's
     * outcome events: GROUP_ADDED/GROUP_UPDATED, or a *_FAILED that makes
     * the device refused.
     */
    private void writeGroups(DeviceId device, List<GroupDescription> wanted) throws DeviceFailedException {
        if (wanted.isEmpty()) {
            return;
        }
        Map<GroupKey, CompletableFuture<Boolean>> pending = new ConcurrentHashMap<>();
        wanted.forEach(g -> pending.put(g.appCookie(), new CompletableFuture<>()));
        GroupListener listener = e -> {
            CompletableFuture<Boolean> f = e.subject().deviceId().equals(device)
                    ? pending.get(e.subject().appCookie()) : null;
            if (f == null) {
                return;
            }
            switch (e.type()) {
                case GROUP_ADDED:
                case GROUP_UPDATED:
                    f.complete(true);
                    break;
                case GROUP_ADD_FAILED:
                case GROUP_UPDATE_FAILED:
                    f.complete(false);
                    break;
                default:
                    break;
            }
        };
        groups.addListener(listener);
        try {
            for (GroupDescription g : wanted) {
                Group held = groups.getGroup(device, g.appCookie());
                if (held == null) {
                    groups.addGroup(g);
                } else if (held.state() == Group.GroupState.ADDED && held.buckets().equals(g.buckets())) {
                    pending.get(g.appCookie()).complete(true);
                } else {
                    groups.setBucketsForGroup(device, g.appCookie(), g.buckets(), g.appCookie(), appId);
                }
            }
            long deadline = System.currentTimeMillis() + timeoutMillis;
            List<String> refused = new ArrayList<>();
            for (Map.Entry<GroupKey, CompletableFuture<Boolean>> p : pending.entrySet()) {
                if (!await(p.getValue(), deadline, device)) {
                    refused.add(new String(p.getKey().key(), StandardCharsets.UTF_8));
                }
            }
            if (!refused.isEmpty()) {
                throw new DeviceFailedException(device + " refused groups " + refused);
            }
        } finally {
            groups.removeListener(listener);
        }
    }

    private static boolean await(CompletableFuture<Boolean> f, long deadline, DeviceId device)
            throws DeviceFailedException {
        try {
            return f.get(Math.max(0, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new DeviceFailedException(device + " did not confirm its groups in time");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DeviceFailedException("interrupted while writing " + device);
        } catch (ExecutionException e) {
            throw new DeviceFailedException(device + ": " + e.getCause());
        }
    }

    @Override
    public void forget(DeviceId device) {
        flows.purgeFlowRules(device, appId);
        groups.purgeGroupEntries(device, appId);
    }

    @Override
    public void write(DeviceId device, DeviceChange change) throws DeviceFailedException {
        List<GroupDescription> wanted = new ArrayList<>();
        for (PiActionProfileMember m : change.membersAdded) {
            wanted.add(member(device, m));
        }
        for (PiMulticastGroupEntry g : change.groupsAdded) {
            wanted.add(mcast(device, g));
        }
        writeGroups(device, wanted);
        if (!change.entriesAdded.isEmpty() || !change.entriesRemoved.isEmpty()) {
            FlowRuleOperations.Builder ops = FlowRuleOperations.builder();
            for (PiTableEntry e : change.entriesAdded) {
                ops.add(flowRule(appId, device, e));
            }
            ops.newStage();
            for (PiTableEntry e : change.entriesRemoved) {
                ops.remove(flowRule(appId, device, e));
            }
            CompletableFuture<Boolean> done = new CompletableFuture<>();
            flows.apply(ops.build(new FlowRuleOperationsContext() {
                @Override
                public void onSuccess(FlowRuleOperations o) {
                    done.complete(true);
                }

                @Override
                public void onError(FlowRuleOperations o) {
                    done.complete(false);
                }
            }));
            boolean ok;
            try {
                ok = done.get(timeoutMillis, TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new DeviceFailedException(device + " did not confirm its flow rules within "
                        + timeoutMillis + " ms");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DeviceFailedException("interrupted while writing " + device);
            } catch (ExecutionException e) {
                throw new DeviceFailedException(device + ": " + e.getCause());
            }
            if (!ok) {
                throw new DeviceFailedException(device + " refused its flow rules (" + change.entriesAdded.size()
                        + " added, " + change.entriesRemoved.size() + " removed)");
            }
        }
        for (PiMulticastGroupEntry g : change.groupsRemoved) {
            groups.removeGroup(device, mcastKey(g), appId);
        }
        for (PiActionProfileMember m : change.membersRemoved) {
            groups.removeGroup(device, memberKey(m), appId);
        }
    }

}
