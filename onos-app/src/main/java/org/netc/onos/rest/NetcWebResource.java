//! The REST resource (under the app's web context, /onos/netc): netc's plan,
//! apply, verify and status as JSON, exactly netc's answers plus the app's
//! `onos` part; a refusal is netc's error object with netc's HTTP status
//! (422 violation, 502 device_failed, 409 base_moved, ...).
package org.netc.onos.rest;

import com.fasterxml.jackson.databind.JsonNode;
import org.netc.onos.NetcException;
import org.netc.onos.NetcService;
import org.onosproject.rest.AbstractWebResource;

import javax.ws.rs.DefaultValue;
import javax.ws.rs.GET;
import javax.ws.rs.POST;
import javax.ws.rs.Path;
import javax.ws.rs.Produces;
import javax.ws.rs.QueryParam;
import javax.ws.rs.core.MediaType;
import javax.ws.rs.core.Response;

@Path("")
public class NetcWebResource extends AbstractWebResource {

    /** The service this resource answers from (ONOS's service directory in the app). */
    protected NetcService service() {
        return get(NetcService.class);
    }

    interface Call {
        JsonNode run(NetcService s) throws NetcException;
    }

    Response answer(Call call) {
        try {
            return Response.ok(call.run(service()).toString(), MediaType.APPLICATION_JSON_TYPE).build();
        } catch (NetcException e) {
            int status = e.status() >= 400 ? e.status() : 502;
            return Response.status(status).type(MediaType.APPLICATION_JSON_TYPE).entity(e.toJson().toString())
                    .build();
        }
    }

    @GET
    @Path("status")
    @Produces(MediaType.APPLICATION_JSON)
    public Response status() {
        return answer(NetcService::status);
    }

    @POST
    @Path("plan")
    @Produces(MediaType.APPLICATION_JSON)
    public Response plan() {
        return answer(NetcService::plan);
    }

    @POST
    @Path("apply")
    @Produces(MediaType.APPLICATION_JSON)
    public Response apply(@QueryParam("force") @DefaultValue("false") boolean force) {
        return answer(s -> s.apply(force));
    }

    @POST
    @Path("verify")
    @Produces(MediaType.APPLICATION_JSON)
    public Response verify() {
        return answer(NetcService::verify);
    }
}
