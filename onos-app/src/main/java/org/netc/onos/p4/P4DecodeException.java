//! A P4Runtime message netc wrote that this app cannot turn into ONOS PI
//! objects: malformed text, or an id netc.p4's P4Info does not declare.
package org.netc.onos.p4;

public final class P4DecodeException extends Exception {
    private static final long serialVersionUID = 1L;

    public P4DecodeException(String message) {
        super(message);
    }

    public P4DecodeException(String message, Throwable cause) {
        super(message, cause);
    }
}
