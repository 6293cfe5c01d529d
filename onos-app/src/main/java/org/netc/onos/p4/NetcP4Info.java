//! netc.p4's P4Info, read with the official P4Runtime classes, as the name
//! maps the ONOS PI model speaks: numeric ids in netc's WriteRequests become
//! the table, match field, action, parameter and action-profile names that
//! PiTableId/PiMatchFieldId/PiActionId/PiActionParamId/PiActionProfileId
//! carry. Expects the text P4Info netc ships (p4/netc.p4info.txtpb).
//! Guarantees: an id the P4Info does not declare is an error naming it,
//! never a guess.
package org.netc.onos.p4;

import com.google.protobuf.TextFormat;
import p4.config.v1.P4InfoOuterClass.Action;
import p4.config.v1.P4InfoOuterClass.ActionProfile;
import p4.config.v1.P4InfoOuterClass.MatchField;
import p4.config.v1.P4InfoOuterClass.P4Info;
import p4.config.v1.P4InfoOuterClass.Table;

import java.util.HashMap;
import java.util.Map;

public final class NetcP4Info {

    /** A table: its name, its match fields by id, whether entries carry a priority. */
    public static final class TableInfo {
        public final String name;
        public final Map<Integer, String> fields = new HashMap<>();
        /** P4Runtime requires a priority exactly when a field is ternary, range or optional. */
        public final boolean needsPriority;

        TableInfo(Table t) {
            this.name = t.getPreamble().getName();
            boolean prio = false;
            for (MatchField f : t.getMatchFieldsList()) {
                fields.put(f.getId(), f.getName());
                MatchField.MatchType mt = f.getMatchType();
                prio |= mt == MatchField.MatchType.TERNARY || mt == MatchField.MatchType.RANGE
                        || mt == MatchField.MatchType.OPTIONAL;
            }
            this.needsPriority = prio;
        }
    }

    /** An action: its name and its parameters by id. */
    public static final class ActionInfo {
        public final String name;
        public final Map<Integer, String> params = new HashMap<>();

        ActionInfo(Action a) {
            this.name = a.getPreamble().getName();
            for (Action.Param p : a.getParamsList()) {
                params.put(p.getId(), p.getName());
            }
        }
    }

    private final Map<Integer, TableInfo> tables = new HashMap<>();
    private final Map<Integer, ActionInfo> actions = new HashMap<>();
    private final Map<Integer, String> profiles = new HashMap<>();

    private NetcP4Info(P4Info info) {
        this.message = info;
        for (Table t : info.getTablesList()) {
            tables.put(t.getPreamble().getId(), new TableInfo(t));
        }
        for (Action a : info.getActionsList()) {
            actions.put(a.getPreamble().getId(), new ActionInfo(a));
        }
        for (ActionProfile p : info.getActionProfilesList()) {
            profiles.put(p.getPreamble().getId(), p.getPreamble().getName());
        }
    }

    private final P4Info message;

    /**
     * Parses P4Info text (protobuf text format, `#` comments allowed). Fields
     * newer than ONOS 2.7's P4Info schema are skipped: netc's P4Info carries
     * each table's `initial_default_action` (P4Runtime 1.4), which names
     * what the program starts with and nothing an entry refers to.
     */
    public static NetcP4Info parse(String text) throws P4DecodeException {
        return new NetcP4Info(read(text));
    }

    private static P4Info read(String text) throws P4DecodeException {
        P4Info.Builder b = P4Info.newBuilder();
        // protobuf logs every skipped field as a warning; these are known (above)
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(TextFormat.class.getName());
        java.util.logging.Level level = jul.getLevel();
        jul.setLevel(java.util.logging.Level.SEVERE);
        try {
            TextFormat.Parser.newBuilder().setAllowUnknownFields(true).build().merge(text, b);
        } catch (TextFormat.ParseException e) {
            throw new P4DecodeException("P4Info: " + e.getMessage(), e);
        } finally {
            jul.setLevel(level);
        }
        return b.build();
    }

    /** The P4Info as ONOS 2.7's schema prints it (what the pipeconf hands ONOS's P4InfoParser). */
    public String onosText() {
        return TextFormat.printer().printToString(message);
    }

    public TableInfo table(int id) throws P4DecodeException {
        TableInfo t = tables.get(id);
        if (t == null) {
            throw new P4DecodeException("table id " + id + " is not in netc.p4's P4Info");
        }
        return t;
    }

    /** A table by its name (as a PiTableId carries it), or null. */
    public TableInfo tableNamed(String name) {
        return tables.values().stream().filter(t -> t.name.equals(name)).findFirst().orElse(null);
    }

    public ActionInfo action(int id) throws P4DecodeException {
        ActionInfo a = actions.get(id);
        if (a == null) {
            throw new P4DecodeException("action id " + id + " is not in netc.p4's P4Info");
        }
        return a;
    }

    public String profile(int id) throws P4DecodeException {
        String p = profiles.get(id);
        if (p == null) {
            throw new P4DecodeException("action profile id " + id + " is not in netc.p4's P4Info");
        }
        return p;
    }
}
