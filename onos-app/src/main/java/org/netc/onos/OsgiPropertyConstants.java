//! The app's configuration (`cfg set org.netc.onos.NetcManager NAME VALUE`),
//! names and defaults in one place, as ONOS's cfg tooling reads them.
package org.netc.onos;

public final class OsgiPropertyConstants {

    private OsgiPropertyConstants() {
    }

    /** Where `netc serve` listens (it runs with `--no-push`: this app writes the switches). */
    public static final String NETC_URL = "netcUrl";
    public static final String NETC_URL_DEFAULT = "http://127.0.0.1:7878";

    /** The daemon's token file (`--token-file`, else its state's serve.token). */
    public static final String TOKEN_FILE = "tokenFile";
    public static final String TOKEN_FILE_DEFAULT = ".netc/serve.token";

    /** A directory of `.ndl` files: the intent other than the topology (tenants, VMs, VIPs, ...). */
    public static final String INTENT_DIR = "intentDir";
    public static final String INTENT_DIR_DEFAULT = "";

    /** The compiled netc.p4 for BMv2 (p4c's JSON), pushed with the P4Info; empty: none. */
    public static final String DEVICE_CONFIG = "deviceConfig";
    public static final String DEVICE_CONFIG_DEFAULT = "";

    /** Apply when ONOS's topology changes (off: only `netc:apply` and REST apply). */
    public static final String APPLY_ON_TOPOLOGY = "applyOnTopologyChange";
    public static final boolean APPLY_ON_TOPOLOGY_DEFAULT = true;
}
