//! What the app offers ONOS's CLI and REST: netc's plan, apply, verify and
//! status, answered with netc's own JSON (verdicts, reports with their
//! counterexamples, per-device entries) plus what the app did on the devices.
package org.netc.onos;

import com.fasterxml.jackson.databind.JsonNode;

public interface NetcService {

    /** `POST /v1/plan` of the intent (the base intent and ONOS's topology): applies nothing. */
    JsonNode plan() throws NetcException;

    /**
     * Plans, verifies, programs every changed device through ONOS one at a
     * time, and only then asks netc to commit the generation. A device that
     * refuses puts the devices already changed back and commits nothing.
     */
    JsonNode apply(boolean force) throws NetcException;

    /** `POST /v1/verify`: the verifier's report on netc's current state. */
    JsonNode verify() throws NetcException;

    /** `GET /v1/status` with the app's own state under `onos`. */
    JsonNode status() throws NetcException;
}
