//! The PiPipeconf of netc.p4: its pipeline model read by ONOS's own
//! P4InfoParser from netc's P4Info (shipped in the bundle as
//! /netc/netc.p4info.txtpb, copied from p4/ at build time), netc's
//! interpreter, and the P4Info (and, when configured, the target's compiled
//! program, e.g. BMv2's JSON) as the extensions ONOS's drivers push to a
//! switch. ONOS 2.7's P4Info schema predates fields netc's P4Info carries
//! (`initial_default_action`), so ONOS is given the P4Info as its own schema
//! prints it ([`NetcP4Info#onosText`]).
package org.netc.onos.p4;

import org.onosproject.net.pi.model.DefaultPiPipeconf;
import org.onosproject.net.pi.model.PiPipeconf;
import org.onosproject.net.pi.model.PiPipeconfId;
import org.onosproject.net.pi.model.PiPipelineInterpreter;
import org.onosproject.p4runtime.model.P4InfoParser;
import org.onosproject.p4runtime.model.P4InfoParserException;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

public final class NetcPipeconf {

    public static final PiPipeconfId ID = new PiPipeconfId("org.netc.p4");
    /** Where the build puts netc's P4Info in the bundle. */
    public static final String P4INFO_RESOURCE = "/netc/netc.p4info.txtpb";

    private NetcPipeconf() {
    }

    /** netc's P4Info text, as the bundle carries it. */
    public static String p4InfoText() throws IOException {
        try (InputStream in = NetcPipeconf.class.getResourceAsStream(P4INFO_RESOURCE)) {
            if (in == null) {
                throw new IOException("the bundle has no " + P4INFO_RESOURCE);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /**
     * The pipeconf. `workDir` receives the P4Info as ONOS reads it;
     * `deviceConfig` (may be null) is the compiled program for BMv2.
     */
    public static PiPipeconf build(NetcP4Info info, Path workDir, Path deviceConfig)
            throws IOException, P4InfoParserException {
        Files.createDirectories(workDir);
        Path p4info = workDir.resolve("netc.p4info.onos.txtpb");
        Files.writeString(p4info, info.onosText());
        URL url = p4info.toUri().toURL();
        DefaultPiPipeconf.Builder b = DefaultPiPipeconf.builder()
                .withId(ID)
                .withPipelineModel(P4InfoParser.parse(url))
                .addBehaviour(PiPipelineInterpreter.class, NetcInterpreter.class)
                .addExtension(PiPipeconf.ExtensionType.P4_INFO_TEXT, url);
        if (deviceConfig != null) {
            b.addExtension(PiPipeconf.ExtensionType.BMV2_JSON, deviceConfig.toUri().toURL());
        }
        return b.build();
    }
}
