//! netc's P4Runtime WriteRequests (p4/<switch>.txtpb, or one `updates { }`
//! block of a delta entry) as ONOS PI entities.
//!
//! Reading: text → the official P4Runtime message classes (ONOS's
//! onos-protocols-p4runtime-proto) → PiTableEntry / PiActionProfileMember /
//! PiMulticastGroupEntry, names from netc.p4's P4Info ([`NetcP4Info`]).
//!
//! Why the schema is extended by one field: netc writes P4Runtime 1.4's
//! `Replica.port` (bytes, field 3), which ONOS 2.7's generated classes
//! predate (they know only the deprecated `egress_port`, field 1). The text
//! is parsed against ONOS's own descriptor with that one field added, then
//! re-read by the generated classes, where field 3 stays as an unknown field
//! that is read by its number. Nothing else is parsed by hand.
package org.netc.onos.p4;

import com.google.protobuf.ByteString;
import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TextFormat;
import com.google.protobuf.UnknownFieldSet;
import org.onlab.util.ImmutableByteSequence;
import org.onosproject.net.PortNumber;
import org.onosproject.net.pi.model.PiActionId;
import org.onosproject.net.pi.model.PiActionParamId;
import org.onosproject.net.pi.model.PiActionProfileId;
import org.onosproject.net.pi.model.PiMatchFieldId;
import org.onosproject.net.pi.model.PiTableId;
import org.onosproject.net.pi.runtime.PiAction;
import org.onosproject.net.pi.runtime.PiActionParam;
import org.onosproject.net.pi.runtime.PiActionProfileMember;
import org.onosproject.net.pi.runtime.PiActionProfileMemberId;
import org.onosproject.net.pi.runtime.PiEntity;
import org.onosproject.net.pi.runtime.PiExactFieldMatch;
import org.onosproject.net.pi.runtime.PiFieldMatch;
import org.onosproject.net.pi.runtime.PiLpmFieldMatch;
import org.onosproject.net.pi.runtime.PiMatchKey;
import org.onosproject.net.pi.runtime.PiMulticastGroupEntry;
import org.onosproject.net.pi.runtime.PiOptionalFieldMatch;
import org.onosproject.net.pi.runtime.PiPreReplica;
import org.onosproject.net.pi.runtime.PiRangeFieldMatch;
import org.onosproject.net.pi.runtime.PiTableAction;
import org.onosproject.net.pi.runtime.PiTableEntry;
import org.onosproject.net.pi.runtime.PiTernaryFieldMatch;
import p4.v1.P4RuntimeOuterClass;
import p4.v1.P4RuntimeOuterClass.Entity;
import p4.v1.P4RuntimeOuterClass.FieldMatch;
import p4.v1.P4RuntimeOuterClass.Replica;
import p4.v1.P4RuntimeOuterClass.TableEntry;
import p4.v1.P4RuntimeOuterClass.Update;
import p4.v1.P4RuntimeOuterClass.WriteRequest;

import java.util.ArrayList;
import java.util.List;

public final class P4Updates {

    /** One update of a request: what to do, to which PI entity. */
    public static final class PiUpdate {
        public final Update.Type type;
        public final PiEntity entity;

        PiUpdate(Update.Type type, PiEntity entity) {
            this.type = type;
            this.entity = entity;
        }

        @Override
        public String toString() {
            return type + " " + entity;
        }
    }

    private static final int REPLICA_PORT_FIELD = 3;
    private static final Descriptors.Descriptor WRITE_REQUEST = withReplicaPort();

    private final NetcP4Info info;

    public P4Updates(NetcP4Info info) {
        this.info = info;
    }

    private static Descriptors.Descriptor withReplicaPort() {
        Descriptors.FileDescriptor onos = P4RuntimeOuterClass.getDescriptor();
        FileDescriptorProto.Builder file = onos.toProto().toBuilder();
        for (DescriptorProto.Builder m : file.getMessageTypeBuilderList()) {
            boolean hasPort = m.getFieldList().stream().anyMatch(f -> f.getNumber() == REPLICA_PORT_FIELD);
            if (m.getName().equals("Replica") && !hasPort) {
                m.addField(FieldDescriptorProto.newBuilder()
                        .setName("port").setNumber(REPLICA_PORT_FIELD)
                        .setType(FieldDescriptorProto.Type.TYPE_BYTES)
                        .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL));
            }
        }
        try {
            Descriptors.FileDescriptor extended = Descriptors.FileDescriptor.buildFrom(
                    file.build(), onos.getDependencies().toArray(new Descriptors.FileDescriptor[0]));
            return extended.findMessageTypeByName("WriteRequest");
        } catch (Descriptors.DescriptorValidationException e) {
            throw new IllegalStateException("P4Runtime descriptor", e);
        }
    }

    /** A WriteRequest in text format (a whole p4/<switch>.txtpb, `#` comments allowed). */
    public static WriteRequest parseRequest(String text) throws P4DecodeException {
        DynamicMessage.Builder b = DynamicMessage.newBuilder(WRITE_REQUEST);
        try {
            TextFormat.merge(text, b);
            return WriteRequest.parseFrom(b.build().toByteString());
        } catch (TextFormat.ParseException | InvalidProtocolBufferException e) {
            throw new P4DecodeException("P4Runtime WriteRequest: " + e.getMessage(), e);
        }
    }

    /**
     * A delta entry as netc serve's stream and plan list it: `p4/<switch>.txtpb: updates { ... }`.
     * Returns null for an entry of another artifact (an OVS flow, a host document).
     */
    public List<PiUpdate> decodeEntry(String entry) throws P4DecodeException {
        int colon = entry.indexOf(": ");
        if (colon < 0 || !entry.substring(0, colon).endsWith(".txtpb")) {
            return null;
        }
        return decode(parseRequest(entry.substring(colon + 2)));
    }

    /** Every update of a request, in order, as PI entities. */
    public List<PiUpdate> decode(WriteRequest request) throws P4DecodeException {
        List<PiUpdate> out = new ArrayList<>();
        for (Update u : request.getUpdatesList()) {
            out.add(new PiUpdate(u.getType(), entity(u.getEntity())));
        }
        return out;
    }

    public PiEntity entity(Entity e) throws P4DecodeException {
        switch (e.getEntityCase()) {
            case TABLE_ENTRY:
                return tableEntry(e.getTableEntry());
            case ACTION_PROFILE_MEMBER: {
                P4RuntimeOuterClass.ActionProfileMember m = e.getActionProfileMember();
                return PiActionProfileMember.builder()
                        .forActionProfile(PiActionProfileId.of(info.profile(m.getActionProfileId())))
                        .withId(PiActionProfileMemberId.of(m.getMemberId()))
                        .withAction(action(m.getAction()))
                        .build();
            }
            case PACKET_REPLICATION_ENGINE_ENTRY: {
                P4RuntimeOuterClass.PacketReplicationEngineEntry pre = e.getPacketReplicationEngineEntry();
                if (!pre.hasMulticastGroupEntry()) {
                    throw new P4DecodeException("packet replication entry other than a multicast group");
                }
                P4RuntimeOuterClass.MulticastGroupEntry g = pre.getMulticastGroupEntry();
                PiMulticastGroupEntry.Builder b = PiMulticastGroupEntry.builder()
                        .withGroupId(g.getMulticastGroupId());
                for (Replica r : g.getReplicasList()) {
                    b.addReplica(new PiPreReplica(PortNumber.portNumber(replicaPort(r)), r.getInstance()));
                }
                return b.build();
            }
            default:
                throw new P4DecodeException("entity " + e.getEntityCase() + " is not one netc writes");
        }
    }

    private static long replicaPort(Replica r) throws P4DecodeException {
        UnknownFieldSet.Field port = r.getUnknownFields().getField(REPLICA_PORT_FIELD);
        if (port != null && !port.getLengthDelimitedList().isEmpty()) {
            long v = 0;
            for (byte x : port.getLengthDelimitedList().get(0).toByteArray()) {
                v = (v << 8) | (x & 0xff);
            }
            return v;
        }
        if (r.getEgressPort() != 0) {
            return r.getEgressPort();
        }
        throw new P4DecodeException("a multicast replica without a port");
    }

    private PiTableEntry tableEntry(TableEntry t) throws P4DecodeException {
        NetcP4Info.TableInfo table = info.table(t.getTableId());
        PiTableEntry.Builder b = PiTableEntry.builder().forTable(PiTableId.of(table.name));
        if (t.getMatchCount() == 0) {
            b.withMatchKey(PiMatchKey.EMPTY);
        } else {
            PiMatchKey.Builder k = PiMatchKey.builder();
            for (FieldMatch f : t.getMatchList()) {
                k.addFieldMatch(fieldMatch(table, f));
            }
            b.withMatchKey(k.build());
        }
        if (table.needsPriority) {
            b.withPriority(t.getPriority());
        }
        P4RuntimeOuterClass.TableAction a = t.getAction();
        PiTableAction action;
        switch (a.getTypeCase()) {
            case ACTION:
                action = action(a.getAction());
                break;
            case ACTION_PROFILE_MEMBER_ID:
                action = PiActionProfileMemberId.of(a.getActionProfileMemberId());
                break;
            default:
                throw new P4DecodeException("table action " + a.getTypeCase() + " in " + table.name
                        + " is not one netc writes");
        }
        return b.withAction(action).build();
    }

    private static ImmutableByteSequence bytes(ByteString s) {
        return ImmutableByteSequence.copyFrom(s.toByteArray());
    }

    private static PiFieldMatch fieldMatch(NetcP4Info.TableInfo table, FieldMatch f) throws P4DecodeException {
        String name = table.fields.get(f.getFieldId());
        if (name == null) {
            throw new P4DecodeException("match field id " + f.getFieldId() + " is not in table " + table.name);
        }
        PiMatchFieldId id = PiMatchFieldId.of(name);
        switch (f.getFieldMatchTypeCase()) {
            case EXACT:
                return new PiExactFieldMatch(id, bytes(f.getExact().getValue()));
            case LPM:
                return new PiLpmFieldMatch(id, bytes(f.getLpm().getValue()), f.getLpm().getPrefixLen());
            case TERNARY:
                return new PiTernaryFieldMatch(id, bytes(f.getTernary().getValue()), bytes(f.getTernary().getMask()));
            case RANGE:
                return new PiRangeFieldMatch(id, bytes(f.getRange().getLow()), bytes(f.getRange().getHigh()));
            case OPTIONAL:
                return new PiOptionalFieldMatch(id, bytes(f.getOptional().getValue()));
            default:
                throw new P4DecodeException("match " + f.getFieldMatchTypeCase() + " on " + name);
        }
    }

    private PiAction action(P4RuntimeOuterClass.Action a) throws P4DecodeException {
        NetcP4Info.ActionInfo act = info.action(a.getActionId());
        PiAction.Builder b = PiAction.builder().withId(PiActionId.of(act.name));
        for (P4RuntimeOuterClass.Action.Param p : a.getParamsList()) {
            String name = act.params.get(p.getParamId());
            if (name == null) {
                throw new P4DecodeException("param id " + p.getParamId() + " is not in action " + act.name);
            }
            b.withParameter(new PiActionParam(PiActionParamId.of(name), bytes(p.getValue())));
        }
        return b.build();
    }
}
