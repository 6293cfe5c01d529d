//! One device's change as PI entities, from netc's entries (`path: entry`
//! strings, added and removed: a delta-stream entry's `entries`, or a plan's
//! `devices.<name>.entries`).
//!
//! Why removals are filtered: netc lists a changed P4 entity as its old
//! block removed and its new block added. ONOS identifies a flow rule by
//! device, table, selector and priority, a group by its key, so writing the
//! new one replaces the old, and removing the old afterwards would remove the
//! new. A removal whose key an addition reuses is therefore dropped, and a
//! default entry (empty match) is never removed, only replaced. Entries of
//! other artifacts (OVS flows, host documents) are counted in `other`.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;
import org.netc.onos.p4.P4DecodeException;
import org.netc.onos.p4.P4Updates;
import org.onosproject.net.pi.runtime.PiActionProfileMember;
import org.onosproject.net.pi.runtime.PiEntity;
import org.onosproject.net.pi.runtime.PiMatchKey;
import org.onosproject.net.pi.runtime.PiMulticastGroupEntry;
import org.onosproject.net.pi.runtime.PiTableEntry;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

public final class DeviceChange {

    public final List<PiActionProfileMember> membersAdded = new ArrayList<>();
    public final List<PiMulticastGroupEntry> groupsAdded = new ArrayList<>();
    public final List<PiTableEntry> entriesAdded = new ArrayList<>();
    public final List<PiTableEntry> entriesRemoved = new ArrayList<>();
    public final List<PiMulticastGroupEntry> groupsRemoved = new ArrayList<>();
    public final List<PiActionProfileMember> membersRemoved = new ArrayList<>();
    /** Removed entities an addition replaces (kept so that the inverse restores them). */
    final List<PiEntity> replaced = new ArrayList<>();
    /** Entries of artifacts this app does not program (OVS flows, host documents). */
    public int other;

    /** The change `entries` (`{"added": [...], "removed": [...]}`) describes. */
    public static DeviceChange of(P4Updates decoder, JsonNode entries) throws P4DecodeException {
        List<PiEntity> added = new ArrayList<>();
        List<PiEntity> removed = new ArrayList<>();
        DeviceChange c = new DeviceChange();
        for (JsonNode e : entries.path("added")) {
            c.collect(decoder, e.asText(), added);
        }
        for (JsonNode e : entries.path("removed")) {
            c.collect(decoder, e.asText(), removed);
        }
        return build(added, removed, c.other);
    }

    private void collect(P4Updates decoder, String entry, List<PiEntity> into) throws P4DecodeException {
        List<P4Updates.PiUpdate> ups = decoder.decodeEntry(entry);
        if (ups == null) {
            other++;
            return;
        }
        for (P4Updates.PiUpdate u : ups) {
            into.add(u.entity);
        }
    }

    private static DeviceChange build(List<PiEntity> added, List<PiEntity> removed, int other) {
        DeviceChange c = new DeviceChange();
        c.other = other;
        Set<Object> addedKeys = new HashSet<>();
        for (PiEntity e : added) {
            addedKeys.add(key(e));
            if (e instanceof PiTableEntry) {
                c.entriesAdded.add((PiTableEntry) e);
            } else if (e instanceof PiActionProfileMember) {
                c.membersAdded.add((PiActionProfileMember) e);
            } else if (e instanceof PiMulticastGroupEntry) {
                c.groupsAdded.add((PiMulticastGroupEntry) e);
            }
        }
        for (PiEntity e : removed) {
            if (addedKeys.contains(key(e))) {
                c.replaced.add(e);
                continue;
            }
            if (e instanceof PiTableEntry) {
                if (!((PiTableEntry) e).matchKey().equals(PiMatchKey.EMPTY)) {
                    c.entriesRemoved.add((PiTableEntry) e);
                }
            } else if (e instanceof PiActionProfileMember) {
                c.membersRemoved.add((PiActionProfileMember) e);
            } else if (e instanceof PiMulticastGroupEntry) {
                c.groupsRemoved.add((PiMulticastGroupEntry) e);
            }
        }
        return c;
    }

    /** What identifies an entity on the device (and in ONOS). */
    static Object key(PiEntity e) {
        if (e instanceof PiTableEntry) {
            PiTableEntry t = (PiTableEntry) e;
            return Arrays.asList("table", t.table(), t.matchKey(), t.priority());
        }
        if (e instanceof PiActionProfileMember) {
            PiActionProfileMember m = (PiActionProfileMember) e;
            return Arrays.asList("member", m.actionProfile(), m.id());
        }
        return Arrays.asList("mcast", ((PiMulticastGroupEntry) e).groupId());
    }

    /** The change that undoes this one. */
    public DeviceChange inverse() {
        List<PiEntity> added = new ArrayList<>();
        List<PiEntity> removed = new ArrayList<>();
        added.addAll(membersRemoved);
        added.addAll(groupsRemoved);
        added.addAll(entriesRemoved);
        added.addAll(replaced);
        removed.addAll(membersAdded);
        removed.addAll(groupsAdded);
        removed.addAll(entriesAdded);
        return build(added, removed, other);
    }

    /** Nothing for the app to write. */
    public boolean isEmpty() {
        return membersAdded.isEmpty() && groupsAdded.isEmpty() && entriesAdded.isEmpty()
                && entriesRemoved.isEmpty() && groupsRemoved.isEmpty() && membersRemoved.isEmpty();
    }

    public int size() {
        return membersAdded.size() + groupsAdded.size() + entriesAdded.size() + entriesRemoved.size()
                + groupsRemoved.size() + membersRemoved.size();
    }
}
