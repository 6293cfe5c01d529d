//! Where a device's change is written: ONOS's services in the app
//! ([`OnosDeviceWriter`]); the tests give the same writer ONOS's adapters.
package org.netc.onos;

import org.onosproject.net.DeviceId;

public interface DeviceWriter {

    /** A device refused (part of) a change, or did not answer in time. */
    final class DeviceFailedException extends Exception {
        private static final long serialVersionUID = 1L;

        public DeviceFailedException(String message) {
            super(message);
        }
    }

    /** Writes `change` to `device` and returns when the device has taken it. */
    void write(DeviceId device, DeviceChange change) throws DeviceFailedException;

    /**
     * Drops everything the app wrote to a device that is down (it cannot
     * take a change now); when it is back, it gets its whole state again.
     */
    void forget(DeviceId device);
}
