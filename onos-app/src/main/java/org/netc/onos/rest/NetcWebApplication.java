//! The JAX-RS application of the app's web context (WEB-INF/web.xml names it).
package org.netc.onos.rest;

import org.onlab.rest.AbstractWebApplication;

import java.util.Set;

public class NetcWebApplication extends AbstractWebApplication {
    @Override
    public Set<Class<?>> getClasses() {
        return getClasses(NetcWebResource.class);
    }
}
