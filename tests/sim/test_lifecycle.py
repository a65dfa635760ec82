"""`labctl sim up/status/down` and SimulatedLab: start, find, stop -- and nothing left behind.

CLI tests run `python -m labctl sim ...` as a subprocess with LABCTL_STATE_DIR in tmp, on a test lab
with random 127.x addresses. Every test stops what it started by pid, even when it fails.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import paramiko
import pytest
import wakeonlan

from labctl.errors import LabctlError
from labctl.inventory import resolve_credential
from labctl.inventory.credentials import SECRETS_FILE_VAR
from labctl.sim import simlab as sim_lab_module
from labctl.sim.endpoint import PortInUseError
from labctl.sim.simlab import SimAlreadyRunningError, SimulatedLab, leftover_processes
from labctl.sim.state import STATE_DIR_VAR, ProcessRecord, read_state, stop_processes, up_lock
from tests.labfiles import make_test_lab

pytestmark = pytest.mark.integration

CLI_TIMEOUT_S = 90


def run_cli(
    state_dir: Path, *args: str, timeout_s: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in (SECRETS_FILE_VAR, "LABCTL_LAB", "LABCTL_CONFIG")}
    env[STATE_DIR_VAR] = str(state_dir)
    env["COLUMNS"] = "120"
    return subprocess.run(
        [sys.executable, "-m", "labctl", "sim", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def assert_nothing_left(state_dir: Path, pids: list[int]) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and leftover_processes(state_dir):
        time.sleep(0.05)
    assert leftover_processes(state_dir) == []
    for pid in pids:
        try:
            st = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        assert st == "Z", f"pid {pid} still runs"


# --- the CLI -------------------------------------------------------------------------------------


def test_up_status_down_leaves_no_process_behind(tmp_path: Path, state_dir: Path) -> None:
    lab = make_test_lab(tmp_path, clients=5)
    t0 = time.monotonic()
    up = run_cli(state_dir, "up", "--lab", str(lab))
    took = time.monotonic() - t0
    assert up.returncode == 0, up.stderr
    assert "Simulated lab up" in up.stdout
    assert took < 90  # a deadline, not a speed claim: startup time is measured in bench/
    state = json.loads((state_dir / "state.json").read_text())
    pids = [p["pid"] for p in state["processes"]]
    assert {p["role"] for p in state["processes"]} == {"simd", "vcsim:vc-01"}
    assert state["time_scale"] == 60 and state["anchor_wall_s"] > 0
    kinds = {e["kind"] for e in state["endpoints"]}
    assert {"wol", "vcenter"} <= kinds
    assert all({"kind", "name", "host", "port"} <= set(e) for e in state["endpoints"])
    secrets = state_dir / "secrets.yaml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert "sim.vcenter_password" in secrets.read_text()

    again = run_cli(state_dir, "up", "--lab", str(lab))
    assert again.returncode == 2
    assert "already running" in again.stderr

    status = run_cli(state_dir, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "every endpoint answers" in status.stdout

    down = run_cli(state_dir, "down")
    assert down.returncode == 0, down.stderr
    assert "stopped simd" in down.stdout
    assert not (state_dir / "state.json").exists()
    assert_nothing_left(state_dir, pids)

    nothing = run_cli(state_dir, "status")
    assert nothing.returncode == 1
    assert "no simulated lab is running" in nothing.stdout
    assert run_cli(state_dir, "down").returncode == 0


def _taken(kind: str, lab: Path) -> tuple[socket.socket, str, int]:
    from labctl.inventory import load_lab

    lab_obj = load_lab(lab, every_machine=True)
    if kind == "wol":
        net = lab_obj.networks["lab-net"]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((net.broadcast, net.wol_port))
        return s, net.broadcast, net.wol_port
    if kind == "ssh":
        client = lab_obj.machine("optiplex-001")
        assert client.ssh is not None and client.ssh_host is not None
        s = socket.socket()
        s.bind((client.ssh_host, client.ssh.port))
        s.listen()
        return s, client.ssh_host, client.ssh.port
    url = lab_obj.vcenters["vc-01"].url if kind == "vcenter" else lab_obj.machine("pvs-01").bmc.url  # type: ignore[union-attr]
    host, port = url.split("//")[1].split("/")[0].split(":")
    s = socket.socket()
    s.bind((host, int(port)))
    s.listen()
    return s, host, int(port)


@pytest.mark.parametrize("kind", ["vcenter", "wol", "redfish", "ssh"])
def test_taken_port_exits_2_naming_it(tmp_path: Path, state_dir: Path, kind: str) -> None:
    lab = make_test_lab(tmp_path, clients=2)
    sock, host, port = _taken(kind, lab)
    with sock:
        up = run_cli(state_dir, "up", "--lab", str(lab))
    assert up.returncode == 2, up.stdout + up.stderr
    assert f"{host}:{port} is already in use" in up.stderr
    assert f"{kind} endpoint for " in up.stderr
    assert not (state_dir / "state.json").exists()
    assert_nothing_left(state_dir, [])


def test_status_exits_1_when_a_process_died_and_down_cleans_up(tmp_path: Path, state_dir: Path) -> None:
    lab = make_test_lab(tmp_path, clients=2)
    assert run_cli(state_dir, "up", "--lab", str(lab)).returncode == 0
    state = read_state(state_dir)
    assert state is not None
    simd = next(p for p in state.processes if p.role == "simd")
    os.kill(simd.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while simd.pid in leftover_processes(state_dir) and time.monotonic() < deadline:
        time.sleep(0.02)
    status = run_cli(state_dir, "status")
    assert status.returncode == 1
    assert "do not answer" in status.stdout or "not running" in status.stdout
    down = run_cli(state_dir, "down")
    assert down.returncode == 0, down.stderr
    assert_nothing_left(state_dir, [p.pid for p in state.processes])


def test_bad_fault_option_is_bad_input(tmp_path: Path, state_dir: Path) -> None:
    up = run_cli(
        state_dir, "up", "--lab", str(make_test_lab(tmp_path, clients=1)), "--fault", "melts:optiplex-001"
    )
    assert up.returncode == 2
    assert "unknown fault kind 'melts'" in up.stderr
    assert_nothing_left(state_dir, [])


# --- stopping by pid -----------------------------------------------------------------------------


def _stubborn_child(marker: str) -> subprocess.Popen[bytes]:
    """A process in its own session that ignores SIGTERM, with ``marker`` on its command line."""
    code = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, marker], stdout=subprocess.PIPE, start_new_session=True
    )
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    assert ready and proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def test_stop_processes_kills_what_ignores_sigterm_and_spares_a_reused_pid(tmp_path: Path) -> None:
    marker = str(tmp_path / "state")
    proc = _stubborn_child(marker)
    try:
        # a record whose marker is not on the pid's command line: a recycled pid, never signalled
        assert stop_processes([ProcessRecord("simd", proc.pid, marker + "-other")], term_timeout_s=0.2) == []
        assert proc.poll() is None
        t0 = time.monotonic()
        left = stop_processes(
            [ProcessRecord("simd", proc.pid, marker)], term_timeout_s=0.3, children={proc.pid: proc}
        )
        assert left == []
        assert proc.returncode == -signal.SIGKILL  # SIGTERM was ignored; SIGKILL followed, reaped
        assert time.monotonic() - t0 < 3
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)


def test_up_lock_gives_up_after_its_deadline(tmp_path: Path) -> None:
    sd = tmp_path / "state"
    with up_lock(sd):
        t0 = time.monotonic()
        with pytest.raises(LabctlError, match=r"up\.lock for 0\.2 s"), up_lock(sd, timeout_s=0.2):
            pytest.fail("two holders of the lock at once")
        assert time.monotonic() - t0 < 2
    with up_lock(sd, timeout_s=0.2):  # free again once its holder left
        pass


# --- the Python API ------------------------------------------------------------------------------


def test_context_manager_stops_everything_on_an_exception(tmp_path: Path) -> None:
    sd = tmp_path / "state"
    lab = make_test_lab(tmp_path, clients=2)
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"), SimulatedLab(lab, state_dir=sd) as sim:
        pids = [p.pid for p in sim.state.processes]
        assert sim.running
        # the orchestrator's clock agrees with the simulator's: same anchor and scale
        assert (sim.clock.anchor_wall_s, sim.clock.scale) == (sim.state.anchor_wall_s, 60)
        assert abs(sim.clock.now() - sim.state.clock.now()) < 1.0
        raise RuntimeError("boom")
    assert pids
    assert read_state(sd) is None
    assert_nothing_left(sd, pids)


def test_context_manager_stops_everything_on_ctrl_c(tmp_path: Path) -> None:
    sd = tmp_path / "state"
    pids: list[int] = []
    with (
        pytest.raises(KeyboardInterrupt),
        SimulatedLab(make_test_lab(tmp_path, clients=1), state_dir=sd) as sim,
    ):
        pids = [p.pid for p in sim.state.processes]
        raise KeyboardInterrupt
    assert_nothing_left(sd, pids)


def test_attach_finds_the_running_lab_and_leaving_it_does_not_stop_it(tmp_path: Path) -> None:
    sd = tmp_path / "state"
    with SimulatedLab(make_test_lab(tmp_path, clients=1), state_dir=sd) as sim:
        with SimulatedLab.attach(sd) as other:
            assert other.endpoints == sim.endpoints
            assert other.clock == sim.clock
            assert other.lab.name == sim.lab.name
        assert sim.running
        with pytest.raises(SimAlreadyRunningError):
            SimulatedLab(make_test_lab(tmp_path, clients=1, name="second.yaml"), state_dir=sd).start()
        assert all(h.ok for h in sim.health())


def test_a_port_taken_after_the_check_still_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulator process and the vCenter report a taken address themselves (a race with the check)."""
    monkeypatch.setattr(sim_lab_module, "check_ports", lambda lab: None)
    for kind in ("wol", "vcenter", "ssh"):
        lab = make_test_lab(tmp_path, clients=1, name=f"{kind}.yaml")
        sd = tmp_path / f"state-{kind}"
        sock, host, port = _taken(kind, lab)
        with sock, pytest.raises(PortInUseError, match=f"^{kind} endpoint for .*{host}:{port}") as err:
            SimulatedLab(lab, state_dir=sd).start()
        assert (err.value.kind, err.value.host, err.value.port) == (kind, host, port)
        assert read_state(sd) is None
        assert_nothing_left(sd, [])


def test_the_full_2007_lab_starts_on_test_addresses(tmp_path: Path) -> None:
    """100 clients, 4 servers, a vCenter with 10 VMs, a Unity (sim-2007.yaml on test addresses)."""
    sd = tmp_path / "state"
    with SimulatedLab(make_test_lab(tmp_path, clients=100), state_dir=sd) as sim:
        assert len(sim.lab.clients) == 100
        assert sim.state.startup_s < 90  # a deadline; the figure itself is in bench/
        health = sim.health()
        assert all(h.ok for h in health), [h for h in health if not h.ok]
        print(f"startup of 100 clients: {sim.state.startup_s:.2f} s")


# --- the acceptance path: a magic packet boots a client whose SSH then answers --------------------


def _hostname(host: str, port: int, user: str, password: str) -> str:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    try:
        client.connect(
            host,
            port,
            username=user,
            password=password,
            timeout=2,
            banner_timeout=2,
            auth_timeout=2,
            look_for_keys=False,
            allow_agent=False,
        )
        _, stdout, _ = client.exec_command("hostname", timeout=5)
        return stdout.read().decode().strip()
    finally:
        client.close()


def test_magic_packet_makes_the_clients_ssh_answer_after_the_boot_time(start_sim) -> None:
    pytest.importorskip("labctl.sim.ssh", reason="the SSH endpoints (labctl.sim.ssh) are not built yet")
    sim = start_sim(clients=3, time_scale=20)
    client = sim.lab.machine("optiplex-002")
    assert client.ssh is not None and client.ssh.password is not None
    ssh = sim.endpoint("ssh", client.name)
    password = resolve_credential(client.ssh.password, client.name)
    wol = sim.endpoint("wol", "lab-net")

    with pytest.raises((OSError, paramiko.SSHException)):
        _hostname(ssh.host, ssh.port, client.ssh.user, password)  # off: nothing answers

    woke_at = sim.clock.now()
    wakeonlan.wake(client.mac, host=wol.host, port=wol.port)
    time.sleep(0.05)
    with pytest.raises((OSError, paramiko.SSHException)):
        _hostname(ssh.host, ssh.port, client.ssh.user, password)  # booting: still nothing
    assert sim.clock.now() - woke_at < 10

    deadline = time.monotonic() + 30
    name = None
    while name is None:
        try:
            name = _hostname(ssh.host, ssh.port, client.ssh.user, password)
        except (OSError, paramiko.SSHException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    booted_after = sim.clock.now() - woke_at
    assert name.lower() == client.name
    # the placeholder twin boots a client in 1 + 30 lab s; any twin's boot takes a while
    assert booted_after >= (29 if sim.state.twin == "placeholder" else 10), booted_after
    # the other clients were not woken
    other = sim.endpoint("ssh", "optiplex-001")
    with pytest.raises((OSError, paramiko.SSHException)):
        _hostname(other.host, other.port, client.ssh.user, password)


# --- credentials -----------------------------------------------------------------------------------


def test_secrets_generated_once_resolvable_ones_kept_key_files_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from labctl.inventory import load_lab
    from labctl.sim.secrets import sim_secrets

    path = make_test_lab(tmp_path, clients=1)
    path.write_text(
        path.read_text()
        .replace('password: "secret:sim.bmc_password"', 'password: "env:TEST_BMC_PW"')
        .replace(
            'password: "secret:sim.client_password"',
            'password: "secret:sim.client_password", key_file: "secret:sim.client_key"',
        )
    )
    lab = load_lab(path, every_machine=True)
    sd = tmp_path / "state"
    sd.mkdir()
    monkeypatch.delenv(SECRETS_FILE_VAR, raising=False)
    monkeypatch.setenv("TEST_BMC_PW", "from-the-env")
    user_file = tmp_path / "mine.yaml"
    user_file.write_text("sim.unity_password: from-my-file\n")
    monkeypatch.setenv(SECRETS_FILE_VAR, str(user_file))

    first = sim_secrets(lab, sd)
    assert first.values["env:TEST_BMC_PW"] == "from-the-env"
    assert first.values["secret:sim.unity_password"] == "from-my-file"
    assert "secret:sim.vcenter_password" in first.generated
    key = Path(first.values["secret:sim.client_key"])
    assert key.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert Path(f"{key}.pub").read_text().startswith("ssh-ed25519 ")
    assert (sd / "authorized_keys").read_text() == Path(f"{key}.pub").read_text()  # the SSH sim accepts it
    stored = yaml.safe_load(first.file.read_text())
    assert stored["sim.unity_password"] == "from-my-file"  # the state file alone is enough
    assert "TEST_BMC_PW" not in stored  # env values stay in the env
    assert stat.S_IMODE(first.file.stat().st_mode) == 0o600
    assert any("mine.yaml has no sim.vcenter_password" in w for w in first.warnings)

    again = sim_secrets(lab, sd)
    assert again.generated == []
    assert again.values == first.values
    # what the simulator process reads (it never writes) is the same
    assert sim_secrets(lab, sd, generate=False).values == first.values
    # and labctl's resolver finds every value through the state folder's file
    monkeypatch.setenv(SECRETS_FILE_VAR, str(first.file))
    for ref, value in first.values.items():
        assert resolve_credential(ref, "test") == value


# --- the simulator process's control port ----------------------------------------------------------


def test_control_port_wants_its_token_and_a_known_path(start_sim) -> None:
    import urllib.error
    import urllib.request

    sim = start_sim(clients=1)
    c = sim.state.control

    def call(method: str, path: str, token: str | None, body: bytes | None = None) -> tuple[int, dict]:
        headers = {"X-Labctl-Token": token} if token is not None else {}
        req = urllib.request.Request(
            f"http://{c['host']}:{c['port']}{path}", method=method, data=body, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert call("GET", "/status", None)[0] == 401
    assert call("GET", "/status", "wrong")[0] == 401
    assert call("DELETE", "/faults", "wrong")[0] == 401
    assert call("GET", "/faults", c["token"]) == (404, {"error": "no such resource /faults"})
    assert call("POST", "/status", c["token"], b"{}")[0] == 404
    assert call("DELETE", "/status", c["token"])[0] == 404
    assert call("POST", "/faults", c["token"], b'{"fault": "melts:optiplex-001"}')[0] == 400
    code, status = call("GET", "/status", c["token"])
    assert code == 200 and status["faults"] == []

    sim.add_fault("ssh_refuse_auth:optiplex-001")
    assert [f["kind"] for f in sim.control_status()["faults"]] == ["ssh_refuse_auth"]
    sim.clear_faults()
    assert sim.control_status()["faults"] == []
