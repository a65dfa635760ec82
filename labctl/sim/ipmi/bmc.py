"""A simulated IPMI BMC: pyghmi's BMC server (RMCP+ over UDP) asking the lab twin.

Chassis Status reads the twin's power state (bit 0 "power is on": on while the machine is powered,
booting or shutting down included, as a real chassis reports it); Chassis Control starts the
twin's power actions: power up (``on``), power down (``force_off``), soft off (``shutdown``,
the ACPI request the OS acts on), hard reset (``force_restart``), power cycle (``power_cycle``).

pyghmi keeps its sockets and sessions in process-wide state with one I/O thread; one dispatcher
thread here runs its event loop for every simulated BMC of the process.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pyghmi.ipmi import bmc as pyghmi_bmc
from pyghmi.ipmi.private import constants as ipmi_constants
from pyghmi.ipmi.private import serversession
from pyghmi.ipmi.private import session as ipmi_session

from labctl.inventory.model import IpmiEndpoint, Machine
from labctl.sim.endpoint import EndpointInfo, SimContext, check_address_free
from labctl.sim.redfish.idrac import IDRAC_FIRMWARE
from labctl.sim.twin.interface import PowerAction, PowerState

log = logging.getLogger(__name__)

LOOP_WAIT_S = 0.5  # the dispatcher's longest wait between two looks at pyghmi's queues

# IPMI Chassis Status bit 0 is "power is on": every twin state except Off has power applied
_POWERED = {
    PowerState.ON: "on",
    PowerState.POWERING_ON: "on",
    PowerState.POWERING_OFF: "on",
    PowerState.OFF: "off",
}


# Get Device ID as an iDRAC answers it (ipmitool mc info of iDRAC7/8/9 in public logs: device 32,
# revision 1, manufacturer 674 "DELL Inc", product 256 (0x0100), chassis device among others).
# The firmware revision is the iDRAC's own, major.minor with the minor in BCD: 4.40 is (4, 0x40).
DELL_IANA = 674
IDRAC_PRODUCT_ID = 0x0100
IDRAC_DEVICE_ID = 0x20
CHASSIS_DEVICE = 0x80  # additional device support: the only one simulated (no SDR, SEL or FRU)


def firmware_revision(version: str) -> tuple[int, int]:
    """(major, minor as BCD) of a firmware version such as ``4.40.00.00``."""
    major, minor = [*version.split("."), "0"][:2]
    digits = minor[:2].rjust(2, "0")
    return int(major), (int(digits[0]) << 4) | int(digits[1])


RAKP_HMAC_SHA1 = 1  # authentication algorithm of cipher suite 3, the only one pyghmi's server speaks
NO_MATCHING_AUTH_PAYLOAD = 0x11  # RMCP+ status codes (IPMI 2.0 table 13-15)
UNAUTHORIZED_NAME = 0x0D


class _Suite3Session(serversession.ServerSession):
    """pyghmi's server session, refusing what it cannot do as a real suite-3 BMC does.

    pyghmi's server answers every open-session request with cipher suite 3 (HMAC-SHA1), even one
    proposing suite 17 (SHA-256), which pyghmi's client tries first and then cannot verify. A BMC
    without suite 17 refuses the proposal (status 0x11), and the client retries with suite 3.
    pyghmi's server also stays silent to an unknown user (the client would wait out its timeout);
    a BMC answers RAKP 1 with "unauthorized name" (0x0D).
    """

    def _got_rakp1(self, data: bytearray) -> None:
        namelen = data[27]
        name = bytes(data[28 : 28 + namelen]).decode("utf-8", "replace")
        if namelen and self.authdata.get(name) is None:
            reply = bytearray([data[0], UNAUTHORIZED_NAME, 0, 0]) + self.clientsessionid
            self.send_payload(reply, ipmi_constants.payload_types["rakp2"], retry=False)
            return
        super()._got_rakp1(data)

    def create_open_session_response(self, request: bytearray) -> bytearray:
        if request[12] != RAKP_HMAC_SHA1:  # the proposed authentication algorithm
            return bytearray([request[0], NO_MATCHING_AUTH_PAYLOAD, 0, 0]) + request[4:8]
        return super().create_open_session_response(request)


class _Dispatcher:
    """Runs pyghmi's event loop while at least one simulated BMC of this process is started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        with self._lock:
            self._users += 1
            if self._thread is None:
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="ipmi-bmc-loop", daemon=True)
                self._thread.start()

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            thread = self._thread if self._users == 0 else None
            if thread is not None:
                self._thread = None
                self._stop.set()
        if thread is not None:
            thread.join(LOOP_WAIT_S * 4)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                ipmi_session.Session.wait_for_rsp(LOOP_WAIT_S)
            except OSError as exc:  # a reply queued for a BMC stopped meanwhile
                log.debug("IPMI event loop: %s", exc)
            except Exception:  # one bad packet must not stop every BMC of the lab
                log.exception("IPMI event loop")


_DISPATCHER = _Dispatcher()


class SimBmc(pyghmi_bmc.Bmc):
    """One machine's BMC on ``ipmi.host:ipmi.port`` (UDP)."""

    def __init__(self, ctx: SimContext, machine: Machine, ep: IpmiEndpoint):
        # pyghmi's constructor binds the socket: it runs in start(), not here
        self.ctx = ctx
        self.machine = machine
        self.ep = ep
        self.info = EndpointInfo("ipmi", machine.name, ep.host, ep.port, "udp")
        self.started = False

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        check_address_free("ipmi", self.machine.name, self.ep.host, self.ep.port, udp=True)
        password = self.ctx.credential(self.ep.password) or ""
        if ipmi_session.myself is None:
            # pyghmi wakes its I/O thread with a datagram to (myself, first socket's port); left to
            # itself it guesses ::1 or ::ffff:127.0.0.1, neither of which is this BMC's address
            ipmi_session.myself = self.ep.host
        super().__init__({self.ep.user: password}, port=self.ep.port, address=self.ep.host)
        self.deviceid, self.revision = IDRAC_DEVICE_ID, 1
        self.firmwaremajor, self.firmwareminor = firmware_revision(IDRAC_FIRMWARE)
        self.mfgid, self.prodid, self.additionaldevices = DELL_IANA, IDRAC_PRODUCT_ID, CHASSIS_DEVICE
        self.started = True
        _DISPATCHER.acquire()
        log.info("ipmi %s listening on %s:%d/udp", self.machine.name, self.ep.host, self.ep.port)

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        sock = self.serversocket
        handlers = ipmi_session.Session.bmc_handlers
        handlers.pop(sock, None)
        for peer, by_port in list(handlers.items()):  # this BMC's client sessions
            if isinstance(by_port, dict) and getattr(by_port.get(self.port), "bmc", None) is self:
                del by_port[self.port]
                if not by_port:
                    handlers.pop(peer, None)
        if sock in ipmi_session.iosockets:
            ipmi_session.iosockets.remove(sock)
        if ipmi_session.iosockets and ipmi_session.myself == self.ep.host:
            ipmi_session.myself = ipmi_session.iosockets[0].getsockname()[0]
        elif not ipmi_session.iosockets:
            ipmi_session.myself = None
        _DISPATCHER.release()  # the last BMC stops the loop before its socket closes
        sock.close()

    # --- what the BMC answers ------------------------------------------------------------------
    def sessionless_data(self, data: bytes, sockaddr: Any) -> None:
        raw = bytearray(data)
        # an RMCP+ open-session request (IPMI 2.0 payload type 0x10): our session class answers it
        if len(raw) >= 22 and raw[0] == 6 and raw[2:4] == b"\xff\x07" and raw[4] == 6 and raw[5] == 16:
            _Suite3Session(self.authdata, self.kg, sockaddr, self.serversocket, raw[16:], self.uuid, bmc=self)
            return
        super().sessionless_data(data, sockaddr)

    def send_device_id(self, session: Any) -> None:
        """Get Device ID laid out as IPMI 2.0 table 20-2 has it: a 3-byte manufacturer ID, then the
        2-byte product ID. pyghmi's server packs the manufacturer in 4 bytes, which shifts the
        product ID by one (ipmitool read "Product ID: 0" from it)."""
        data = [
            self.deviceid,
            self.revision,
            self.firmwaremajor,
            self.firmwareminor,
            self.ipmiversion,
            self.additionaldevices,
            *self.mfgid.to_bytes(3, "little"),
            *self.prodid.to_bytes(2, "little"),
        ]
        session.send_ipmi_response(data=data)

    def get_power_state(self) -> str:
        return _POWERED.get(PowerState(self.ctx.twin.power_state(self.machine.name)), "off")

    def _act(self, action: PowerAction) -> int:
        log.info("ipmi %s: chassis control -> %s", self.machine.name, action.value)
        self.ctx.twin.power(self.machine.name, action)
        return 0  # completion code: normal

    def power_on(self) -> int:
        return self._act(PowerAction.ON)

    def power_off(self) -> int:
        return self._act(PowerAction.FORCE_OFF)

    def power_shutdown(self) -> int:
        return self._act(PowerAction.SHUTDOWN)

    def power_reset(self) -> int:
        return self._act(PowerAction.FORCE_RESTART)

    def power_cycle(self) -> int:
        return self._act(PowerAction.POWER_CYCLE)

    def cold_reset(self) -> int:
        return 0  # the BMC restarting itself: nothing to model

    def __repr__(self) -> str:
        return f"SimBmc({self.machine.name} {self.ep.host}:{self.ep.port})"

    def stats(self) -> dict[str, Any]:
        return {"started": self.started}
