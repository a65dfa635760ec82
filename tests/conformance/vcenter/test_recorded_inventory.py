"""The vSphere driver's inventory reads against inventories recorded from real vCenters.

Each archive in ``recordings/`` is a `govc object.save` of a real vCenter (SOURCES.md: who
recorded it, where, which vCenter), cut by ``cut_recording.py``; govmomi's vcsim serves it with
``-load``. What the driver reads through vcsim's PropertyCollector (paged: five objects a page)
is compared with the recording itself, read here with ElementTree: names, power, connection and
guest state, hosts, datastores. What the recordings taught (each test below failed before):

- a VM on a host that stopped responding keeps the last power state vCenter knew
  (``runtime.connectionState`` says so): it is not "on";
- vCenter names are unique per folder, not per vCenter: two VMs share a name in a real SDDC;
- VMware Tools report a link-local ``guest.ipAddress`` (fe80::) when the guest has no other
  address: such a guest is up, but not reachable.
"""

from __future__ import annotations

import math
import re
import tarfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from pyVmomi import vim, vmodl

from labctl.drivers.power_verbs import PowerReading
from labctl.drivers.versions import check_version, verified
from labctl.drivers.vsphere import VCenterClient
from labctl.inventory import load_lab
from labctl.lab.context import LabContext
from labctl.lab.preflight import CheckResult, Preflight
from tests.drivers.vcsim import Vcsim, run_vcsim
from tests.labfiles import make_test_lab

# one worker loads the recordings (a few seconds each, once per module), not every worker
pytestmark = pytest.mark.xdist_group("vcenter_recordings")

RECORDINGS = Path(__file__).parent / "recordings"
ARCHIVES = sorted(p.name.removesuffix(".tar.xz") for p in RECORDINGS.glob("*.tar.xz"))
PAGE = 5


@dataclass(frozen=True)
class RecordedVm:
    moid: str
    name: str
    power_state: str
    connection_state: str
    tools_running: bool
    ip: str | None
    host: str | None
    in_vapp: bool
    template: bool
    boot_time: str | None  # summary.runtime.bootTime as recorded (xsd:dateTime)


@dataclass(frozen=True)
class Recording:
    name: str
    about: dict[str, str]
    vms: tuple[RecordedVm, ...]
    hosts: dict[str, bool]  # name -> in maintenance mode
    datastores: dict[str, dict[str, object]]

    def unique(self) -> dict[str, RecordedVm]:
        counts = Counter(v.name for v in self.vms)
        return {v.name: v for v in self.vms if counts[v.name] == 1}

    def shared(self) -> dict[str, tuple[str, ...]]:
        counts = Counter(v.name for v in self.vms)
        return {n: tuple(sorted(v.moid for v in self.vms if v.name == n)) for n, c in counts.items() if c > 1}


def _props(path: Path) -> tuple[str, dict[str, ET.Element]]:
    root = ET.parse(path).getroot()
    out = {}
    for ps in root.findall("propSet"):
        val = ps.find("val")
        if val is not None:
            out[str(ps.findtext("name"))] = val
    return str(root.findtext("obj")), out


def _reachable(ip: str | None) -> str | None:
    """A hand-rolled reading of RFC 4291 2.5.6 and RFC 3927: fe80::/10 and 169.254/16 are
    link-local, reachable by no controller on another link."""
    if not ip:
        return None
    low = ip.lower()
    if low.split(":", 1)[0] in {"fe8", "fe9", "fea", "feb"} or low[:4] in {"fe80", "fe90", "fea0", "feb0"}:
        return None
    if low.startswith("169.254."):
        return None
    return ip


def read_recording(directory: Path) -> Recording:
    _, si = _props(next(directory.glob("*-ServiceInstance-ServiceInstance.xml")))
    about_el = si["content"].find("about")
    assert about_el is not None
    about = {k: str(about_el.findtext(k)) for k in ("version", "build", "apiVersion", "apiType")}
    vms = []
    for f in sorted(directory.glob("*-VirtualMachine-*.xml")):
        moid, p = _props(f)
        rt, guest = p["runtime"], p.get("guest")
        config, summary_rt = p["summary"].find("config"), p["summary"].find("runtime")
        vms.append(
            RecordedVm(
                moid=moid,
                name=str(p["name"].text),
                power_state=str(rt.findtext("powerState")),
                connection_state=str(rt.findtext("connectionState")),
                tools_running=guest is not None
                and guest.findtext("toolsRunningStatus") == "guestToolsRunning",
                ip=_reachable(guest.findtext("ipAddress") if guest is not None else None),
                host=rt.findtext("host"),
                in_vapp="parentVApp" in p and "parent" not in p,
                template=config is not None and config.findtext("template") == "true",
                boot_time=summary_rt.findtext("bootTime") if summary_rt is not None else None,
            )
        )
    hosts = {}
    for f in directory.glob("*-HostSystem-*.xml"):
        _, p = _props(f)
        hosts[str(p["name"].text)] = p["runtime"].findtext("inMaintenanceMode") == "true"
    datastores: dict[str, dict[str, object]] = {}
    for f in directory.glob("*-Datastore-*.xml"):
        _, p = _props(f)
        s = p["summary"]
        datastores[str(p["name"].text)] = {
            "url": s.findtext("url"),
            "capacity_bytes": int(s.findtext("capacity") or 0),
            "free_bytes": int(s.findtext("freeSpace") or 0),
            "accessible": s.findtext("accessible") == "true",
            "status": p["overallStatus"].text,
        }
    return Recording(directory.name, about, tuple(vms), hosts, datastores)


@dataclass(frozen=True)
class Loaded:
    recording: Recording
    sim: Vcsim


class Simulators:
    """One vcsim per recording, started when a test first needs it, stopped with the module."""

    def __init__(self, where: Path):
        self.where = where
        self.stack = ExitStack()
        self.loaded: dict[str, Loaded] = {}

    def get(self, name: str) -> Loaded:
        if name not in self.loaded:
            with tarfile.open(RECORDINGS / f"{name}.tar.xz") as tar:
                tar.extractall(self.where, filter="data")
            directory = self.where / name
            sim = self.stack.enter_context(run_vcsim("-load", str(directory), timeout_s=60))
            self.loaded[name] = Loaded(read_recording(directory), sim)
        return self.loaded[name]


@pytest.fixture(scope="module")
def simulators(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Simulators]:
    sims = Simulators(tmp_path_factory.mktemp("recordings"))
    with sims.stack:
        yield sims


@pytest.fixture(params=ARCHIVES)
def loaded(request: pytest.FixtureRequest, simulators: Simulators) -> Loaded:
    return simulators.get(request.param)


def client(loaded: Loaded, monkeypatch: pytest.MonkeyPatch) -> VCenterClient:
    monkeypatch.setenv("LABCTL_TEST_VC_PASSWORD", loaded.sim.password)
    return VCenterClient(loaded.sim.vcenter(), timeout_s=30, page_size=PAGE)


@pytest.fixture
def vc(loaded: Loaded, monkeypatch: pytest.MonkeyPatch) -> Iterator[VCenterClient]:
    with client(loaded, monkeypatch) as c:
        yield c


@pytest.fixture
def primp(simulators: Simulators, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Loaded, VCenterClient]]:
    loaded = simulators.get("vcsa-7.0.1-primp")
    with client(loaded, monkeypatch) as c:
        yield loaded, c


@pytest.fixture
def sddc(simulators: Simulators, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Loaded, VCenterClient]]:
    loaded = simulators.get("vmc-7.0.1-sddc")
    with client(loaded, monkeypatch) as c:
        yield loaded, c


@pytest.fixture
def rax(simulators: Simulators, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Loaded, VCenterClient]]:
    loaded = simulators.get("vc-6.7.0-rax")
    with client(loaded, monkeypatch) as c:
        yield loaded, c


def test_the_recordings_are_what_sources_md_says() -> None:
    assert ARCHIVES == ["vc-6.7.0-rax", "vcsa-7.0.1-primp", "vmc-7.0.1-sddc"]


def test_the_service_is_the_recorded_vcenter(loaded: Loaded, vc: VCenterClient) -> None:
    about = loaded.recording.about
    assert about["apiType"] == "VirtualCenter"
    assert vc.about["version"] == about["version"]
    assert vc.about["build"] == about["build"]
    assert vc.about["api_version"] == about["apiVersion"]
    # `labctl check` calls this version verified (labctl/drivers/verified_versions.yaml)
    verdict = check_version("vcenter", f"{about['version']} build-{about['build']}")
    assert verdict.tag == "verified (recording)"
    (row,) = [r for r in verified("vcenter") if r.version == f"{about['version']} build-{about['build']}"]
    assert (row.api, row.check) == (
        about["apiVersion"],
        "tests/conformance/vcenter/test_recorded_inventory.py",
    )


def test_the_vm_inventory_read_in_pages_is_the_recorded_one(
    loaded: Loaded, vc: VCenterClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages: list[int] = []
    pc_type = vmodl.query.PropertyCollector
    original = pc_type.ContinueRetrievePropertiesEx

    def counted(self, *a, **kw):  # type: ignore[no-untyped-def]
        result = original(self, *a, **kw)
        pages.append(len(result.objects or []))
        return result

    monkeypatch.setattr(pc_type, "ContinueRetrievePropertiesEx", counted)
    inv = vc.inventory()
    rec = loaded.recording
    # every VM, including those in vApps (parentVApp, no folder) and templates
    assert len(rec.vms) > PAGE
    assert len(pages) >= math.ceil(len(rec.vms) / PAGE) - 1
    assert max(pages) <= PAGE
    unique = rec.unique()
    assert set(inv) == set(unique)
    for name, want in unique.items():
        got = inv[name]
        assert got.moid == want.moid, name
        assert got.power_state == want.power_state, name
        assert got.connection_state == want.connection_state, name
        assert got.tools_running == want.tools_running, name
        assert got.ip == want.ip, name
        assert got.host == want.host, name
    assert vc.ambiguous == rec.shared()


def test_hosts_and_maintenance_mode_are_the_recorded_ones(loaded: Loaded, vc: VCenterClient) -> None:
    vc.datacenters()
    assert set(vc.hosts()) == set(loaded.recording.hosts)
    assert vc.hosts_in_maintenance() == sorted(h for h, m in loaded.recording.hosts.items() if m)


def test_datastores_are_the_recorded_ones(loaded: Loaded, vc: VCenterClient) -> None:
    vc.datacenters()
    got = vc.datastores()
    assert set(got) == set(loaded.recording.datastores)
    for name, want in loaded.recording.datastores.items():
        ds = got[name]
        assert ds.url == want["url"], name
        assert (ds.capacity_bytes, ds.free_bytes) == (want["capacity_bytes"], want["free_bytes"]), name
        assert ds.accessible == want["accessible"], name
        # vcsim recomputes overallStatus on load (a recorded vSAN datastore is yellow at 36 % used,
        # from an alarm, and vcsim serves it green): only its vocabulary is checked
        assert ds.status in {"green", "yellow", "red", "gray"}, name
        # the instance of its datastore.* counters: the last part of the URL (vsan:... for vSAN)
        assert ds.volume == str(want["url"]).rstrip("/").rsplit("/", 1)[-1]


def test_vapp_members_and_templates_are_in_the_inventory(rax: tuple[Loaded, VCenterClient]) -> None:
    loaded, vc = rax
    rec = loaded.recording
    in_vapps = [v.name for v in rec.vms if v.in_vapp]
    templates = [v.name for v in rec.vms if v.template]
    assert in_vapps and templates
    inv = vc.inventory()
    assert set(in_vapps) <= set(inv)
    assert all(inv[t].reading is PowerReading.OFF for t in templates)


def test_a_vm_on_a_host_that_stopped_responding_is_not_read_as_on(
    primp: tuple[Loaded, VCenterClient],
) -> None:
    """vCenter 7.0.1 (recorded): host 192.168.30.215 notResponding; its VM vCLS (24) is
    ``disconnected`` and still says poweredOn, tools running. The driver read it as on and,
    without requiring an address, as ready."""
    loaded, vc = primp
    stale = [v for v in loaded.recording.vms if v.connection_state != "connected"]
    assert [(v.name, v.power_state) for v in stale] == [("vCLS (24)", "poweredOn")]
    inv = vc.inventory()
    assert inv["vCLS (24)"].reading is PowerReading.UNKNOWN
    assert inv["dns.primp-industries.local"].reading is PowerReading.ON
    out = vc.wait_ready(["vCLS (24)", "dns.primp-industries.local"], timeout_s=2, require_ip=False)
    assert out["dns.primp-industries.local"].state == "ready"
    assert out["vCLS (24)"].state == "timeout"
    assert out["vCLS (24)"].detail.startswith(
        "connection disconnected, so vCenter's last known: power poweredOn"
    )


def test_vms_sharing_a_name_are_not_acted_on_by_that_name(sddc: tuple[Loaded, VCenterClient]) -> None:
    """A VMware Cloud on AWS SDDC (recorded) has five names that two VMs each carry, in
    different folders. The driver kept whichever came last and powered it on."""
    loaded, vc = sddc
    rec = loaded.recording
    shared = rec.shared()
    assert len(shared) == 5
    name = "photon-3-kube-v1.17.3+vmware.1"
    result = vc.power_on([name], timeout_s=10)
    outcome = result.outcomes[name]
    assert outcome.state == "dispatch_error"
    assert all(moid in (outcome.error or "") for moid in shared[name])
    assert result.calls == 0
    assert name not in vc.inventory()
    for moid in shared[name]:  # neither was powered on
        assert str(vim.VirtualMachine(moid, vc.si._stub).runtime.powerState) == "poweredOff"


def test_a_link_local_guest_address_is_no_address(sddc: tuple[Loaded, VCenterClient]) -> None:
    """The same SDDC: LauDemo1's tools run and report fe80::250:56ff:febd:dce1 as its address;
    its only network adapter has no other and its routes are fe80::/64 and ff00::/8. The
    driver took that for the guest's address and the VM for ready."""
    _, vc = sddc
    inv = vc.inventory()
    assert inv["LauDemo1"].tools_running
    assert inv["LauDemo1"].ip is None
    out = vc.wait_ready(["LauDemo1"], timeout_s=2)
    assert out["LauDemo1"].state == "timeout"
    assert "ip fe80::250:56ff:febd:dce1 (link-local)" in out["LauDemo1"].detail
    assert vc.wait_ready(["LauDemo1"], timeout_s=2, require_ip=False)["LauDemo1"].state == "ready"


def test_labctl_check_names_shared_and_missing_vms_and_the_verified_version(
    sddc: tuple[Loaded, VCenterClient], tmp_path: Path
) -> None:
    """`labctl check`'s vCenter row against the SDDC: its version is a verified one, a VM name
    two VMs share is named as such (not as missing, and not as found)."""
    loaded, _ = sddc
    text = make_test_lab(tmp_path, clients=1).read_text()
    text = re.sub(r"url: https://127\.\d+\.3\.1:8989/sdk", f"url: {loaded.sim.url}", text)
    text = text.replace('password: "secret:sim.vcenter_password"', 'password: "env:LABCTL_TEST_VC_PASSWORD"')
    text = re.sub(r"user: administrator@vsphere.local", f"user: {loaded.sim.user}", text)
    text = text.replace(
        '  - {name: "vdi-[001-010]", vcenter: vc-01, tags: [vdi]}',
        "  - {name: LauDemo1, vcenter: vc-01}\n  - {name: capv-haproxy, vcenter: vc-01}\n"
        "  - {name: no-such-desktop, vcenter: vc-01}",
    )
    (tmp_path / "sddc.yaml").write_text(text)
    lab = load_lab(tmp_path / "sddc.yaml", every_machine=True)
    assert lab.vcenters["vc-01"].url == loaded.sim.url
    ctx = LabContext(lab)
    try:
        r = CheckResult("vc-01", "vcenter", loaded.sim.url)
        Preflight(ctx)._vcenter(r, "vc-01")
    finally:
        ctx.close()
    assert not r.ok
    assert r.version.endswith("[verified (recording)]"), r.version
    assert "VMs not found: no-such-desktop" in r.reason
    assert "VM names more than one VM has: capv-haproxy" in r.reason
    assert "LauDemo1" not in r.reason
    assert r.capabilities.startswith("1/3 inventory VMs")


@pytest.fixture
def pacific_controller(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local zone is not UTC (a controller in California), restored after."""
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_boot_times_are_the_recorded_instants_whatever_the_controllers_zone(
    primp: tuple[Loaded, VCenterClient], pacific_controller: None
) -> None:
    """vCenter writes xsd:dateTime in UTC (`2021-01-02T02:11:18.47869Z`); the driver's epoch
    seconds are that instant on a controller whose local zone is eight hours behind."""
    loaded, vc = primp
    booted = {v.name: v.boot_time for v in loaded.recording.vms if v.boot_time}
    assert len(booted) >= 10
    inv = vc.inventory()
    for name, recorded in booted.items():
        when = datetime.fromisoformat(recorded.replace("Z", "+00:00"))
        assert when.tzinfo is not None
        assert inv[name].boot_time == pytest.approx(when.timestamp(), abs=1e-3), name
