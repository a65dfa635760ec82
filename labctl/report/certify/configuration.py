"""The configuration under test, as the runs recorded it: the inventory each run resolved (servers,
volumes and RAID sets, clients, network), per configuration measured, and the firmware and software
versions the run read from the endpoints. Credentials are never read from it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from labctl.recorder.lab_record import ResolvedLab
from labctl.report.certify.common import num
from labctl.report.certify.inputs import Inputs
from labctl.report.certify.model import Block, Cell, Section, Table, Text

STREAMING_2007 = ("boot_storm", "copy_reboot")  # scenarios that use no vCenter and no storage array
CONFIG_WORDS = {"ha": "HA", "standalone": "Standalone"}
PURPOSE = {
    "os": "operating system",
    "vdisk": "vDisk images",
    "write_cache": "client write cache",
    "share": "file share",
}


def _cpu(hw: dict[str, Any]) -> str:
    cpu = hw.get("cpu") or {}
    if not cpu:
        return "-"
    sockets = int(cpu.get("sockets") or 1)
    cores = cpu.get("cores")
    ghz = cpu.get("ghz")
    text = f"{sockets} × {cpu.get('model', 'CPU')}"
    if cores:
        text += f" ({cores} cores" + (f", {num(float(ghz), 2)} GHz" if ghz else "") + ")"
    return text


def _roles(lab: ResolvedLab) -> dict[str, list[str]]:
    cfg = lab.data.get("configuration") or {}
    out: dict[str, list[str]] = {}
    for s in cfg.get("streaming_servers") or []:
        out.setdefault(s, []).append("streaming server")
    if cfg.get("vdisk_server"):
        out.setdefault(cfg["vdisk_server"], []).append("vDisk store")
    if cfg.get("write_cache_server"):
        out.setdefault(cfg["write_cache_server"], []).append("write-cache store")
    share = cfg.get("share") or {}
    if share.get("server"):
        out.setdefault(share["server"], []).append(f"file share {share.get('unc', '')}".strip())
    return out


def _versions(name: str, versions: dict[str, str]) -> str:
    found = [
        f"{k.removeprefix(name).strip() or 'endpoint'}: {v}"
        for k, v in sorted(versions.items())
        if k.split()[0] == name
    ]
    return "; ".join(found) or "-"


def servers_table(lab: ResolvedLab, versions: dict[str, str], cfg: str) -> Table | None:
    roles = _roles(lab)
    rows = []
    for name, m in sorted(lab.machines.items(), key=lambda kv: (kv[0] not in roles, kv[0])):
        if m.get("kind") != "server":
            continue
        hw = m.get("server_hardware") or {}
        nics = hw.get("nics") or {}
        role = ", ".join(roles.get(name, [])) or str(m.get("role") or "-")
        rows.append(
            [
                name,
                role,
                str(m.get("model") or "-"),
                _cpu(hw),
                f"{num(float(hw['ram_gb']))} GB" if hw.get("ram_gb") else "-",
                f"{nics.get('count', '-')} × {num(float(nics.get('speed_gbps', 0)))} Gbit/s" if nics else "-",
                str(m.get("os") or "-"),
                _versions(name, versions),
            ]
        )
    if not rows:
        return None
    return Table.of(
        f"Servers ({cfg})",
        (
            "server",
            "role in this configuration",
            "model",
            "processor",
            "memory",
            "network ports",
            "operating system",
            "firmware / versions read",
        ),
        rows,
    )


def volumes_table(lab: ResolvedLab, cfg: str) -> Table | None:
    rows = []
    for name, m in sorted(lab.machines.items()):
        for v in (m.get("server_hardware") or {}).get("volumes") or []:
            disks = v.get("disks")
            rows.append(
                [
                    name,
                    f"{v.get('name')} ({v.get('drive')})" if v.get("drive") else str(v.get("name")),
                    ", ".join(PURPOSE.get(p, p) for p in v.get("purposes") or []) or "-",
                    f"RAID {v.get('raid')}",
                    f"{disks} × {num(float(v.get('capacity_gb', 0)), 0)} GB",
                    f"{str(v.get('disk_type', '')).upper()} {num(float(v.get('rpm', 0)) / 1000, 1)}K rpm".strip()
                    if v.get("rpm")
                    else str(v.get("disk_type", "-")).upper(),
                    "yes" if v.get("controller_write_back") else "no",
                ]
            )
    if not rows:
        return None
    return Table.of(
        f"Server storage: RAID sets ({cfg})",
        ("server", "volume", "holds", "RAID level", "disks", "disk type", "controller write-back cache"),
        rows,
        note="Write-back: the RAID controller acknowledges writes from its battery-backed cache.",
    )


def clients_table(lab: ResolvedLab) -> Table | None:
    kinds: Counter[tuple[str, ...]] = Counter()
    for m in lab.machines.values():
        if m.get("kind") != "client":
            continue
        hw = m.get("client_hardware") or {}
        kinds[
            (
                str(m.get("model") or "-"),
                _cpu(hw),
                f"{num(float(hw['ram_gb']))} GB" if hw.get("ram_gb") else "-",
                f"{num(float(hw['nic_speed_gbps']))} Gbit/s" if hw.get("nic_speed_gbps") else "-",
                "none (diskless)"
                if hw.get("local_disk") is False
                else "yes"
                if hw.get("local_disk")
                else "-",
                str(m.get("os") or "-"),
            )
        ] += 1
    if not kinds:
        return None
    rows = [[str(n), *k] for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    return Table.of(
        "Clients",
        ("count", "model", "processor", "memory", "network", "local disk", "operating system"),
        rows,
    )


def network_table(lab: ResolvedLab) -> Table | None:
    rows = []
    for n in (lab.data.get("networks") or {}).values():
        rows.append(
            [f"network {n.get('name')}", f"{num(float(n.get('speed_gbps', 0)))} Gbit/s", n.get("subnet", "-")]
        )
    for s in lab.data.get("switches") or []:
        extra = "spanning tree with PortFast" if s.get("spanning_tree_portfast") else ""
        rows.append(
            [
                f"switch {s.get('name')} ({s.get('role', '')})",
                f"{s.get('model', '-')}: {s.get('ports', '-')} × {num(float(s.get('port_speed_gbps', 0)))} Gbit/s,"
                f" uplink {num(float(s.get('uplink_gbps', 0)))} Gbit/s",
                extra or "-",
            ]
        )
    if not rows:
        return None
    return Table.of("Network", ("component", "what", "notes"), rows)


def _gb(v: Any) -> str:
    return f"{num(float(v), 0)} GB" if isinstance(v, int | float) else "-"


def _nics(n: Any) -> str:
    if not isinstance(n, dict) or not n:
        return "-"
    return f"{n.get('count', '-')} × {num(float(n.get('speed_gbps') or 0))} Gbit/s"


def _grouped(rows: Sequence[tuple[str, ...]]) -> list[list[str | Cell]]:
    """Identical rows once, with their count and names (``esx-vdi-01 ... esx-vdi-08``)."""
    by: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        by.setdefault(tuple(row[1:]), []).append(row[0])
    out: list[list[str | Cell]] = []
    for rest, names in by.items():
        shown = names[0] if len(names) == 1 else f"{names[0]} ... {names[-1]}"
        out.append([str(len(names)), shown, *rest])
    return out


def vdi_tables(lab: ResolvedLab) -> list[Table]:
    """The VDI half of a lab: ESXi hosts, arrays and their tiers, datastores, streaming servers,
    desktop pools and session launchers (what and how many; never a launcher's access)."""
    vdi = lab.data.get("vdi") or {}
    if not isinstance(vdi, dict) or not vdi:
        return []
    out = []
    hosts = vdi.get("hosts") or {}
    rows = [
        (
            str(h.get("name", n)),
            str(h.get("cluster") or "-"),
            str(h.get("model") or "-"),
            f"{h.get('sockets', 1)} × {h.get('cpu_model', 'CPU')} ({h.get('cores', '-')} cores, "
            f"{num(float(h.get('ghz') or 0), 2)} GHz)",
            _gb(h.get("ram_gb")),
            _nics(h.get("nics")),
        )
        for n, h in sorted(hosts.items())
    ]
    if rows:
        out.append(
            Table.of(
                "ESXi hosts",
                ("count", "hosts", "cluster", "model", "processor", "memory", "network ports"),
                _grouped(rows),
            )
        )
    arrays = vdi.get("arrays") or {}
    rows_a = []
    for name, a in sorted(arrays.items()):
        tiers = "; ".join(
            f"{t.get('count')} × {str(t.get('drive', '')).upper()} {_gb(t.get('capacity_gb'))} in RAID {t.get('raid')}"
            + (f" ({t.get('spares')} spare)" if t.get("spares") else "")
            for t in a.get("tiers") or []
        )
        controllers = a.get("controllers")
        ctrl = len(controllers) if isinstance(controllers, list) else controllers
        mode = str(a.get("controller_mode") or "").replace("_", "/")
        rows_a.append(
            [
                str(name),
                f"{a.get('kind', '')} {a.get('model', '')}".strip() or "-",
                f"{ctrl or '-'}" + (f" ({mode})" if mode else ""),
                _gb(a.get("cache_gb")),
                _nics(a.get("ports")),
                tiers or "-",
            ]
        )
    if rows_a:
        out.append(
            Table.of(
                "Storage arrays",
                ("array", "model", "controllers", "cache", "host ports", "drives"),
                rows_a,
            )
        )
    stores = vdi.get("datastores") or {}
    if stores:
        out.append(
            Table.of(
                "Datastores",
                ("datastore", "array", "capacity"),
                [
                    [str(n), str(d.get("array") or "-"), _gb(d.get("capacity_gb"))]
                    for n, d in sorted(stores.items())
                ],
            )
        )
    pvs = vdi.get("pvs_servers") or {}
    rows_p = [
        (
            str(n),
            f"{p.get('vcpus', '-')} vCPU at {num(float(p.get('ghz') or 0), 2)} GHz",
            _gb(p.get("ram_gb")),
            _nics(p.get("nics")),
            str(p.get("vdisk_datastore") or "-"),
        )
        for n, p in sorted(pvs.items())
    ]
    if rows_p:
        out.append(
            Table.of(
                "Streaming servers (PVS)",
                ("count", "servers", "processor", "memory", "network ports", "vDisk on"),
                _grouped(rows_p),
            )
        )
    pools = vdi.get("pools") or {}
    rows_pool = []
    for n, p in sorted(pools.items()):
        prov = p.get("provisioning") or {}
        how = str(prov.get("kind") or "-")
        if prov.get("write_cache"):
            how += f", write cache on the {str(prov['write_cache']).replace('_', ' ')}"
        rows_pool.append(
            [
                str(n),
                str(len(p.get("desktops") or [])),
                str(p.get("os") or "-"),
                f"{p.get('vcpus', '-')} vCPU, {_gb(p.get('ram_gb'))}",
                str(p.get("workload") or "-"),
                how,
                ", ".join(p.get("datastores") or []) or "-",
            ]
        )
    if rows_pool:
        out.append(
            Table.of(
                "Desktop pools",
                (
                    "pool",
                    "desktops",
                    "operating system",
                    "each desktop",
                    "workload",
                    "provisioning",
                    "datastores",
                ),
                rows_pool,
            )
        )
    launchers = vdi.get("launchers") or []
    rows_l = [
        (
            str(x.get("name")),
            str(x.get("sessions", "-")),
            str(x.get("pool") or "-"),
            str(x.get("protocol") or "-").upper(),
            str(x.get("kind") or "-"),
        )
        for x in launchers
        if isinstance(x, dict)
    ]
    if rows_l:
        out.append(
            Table.of(
                "Session launchers",
                ("count", "launchers", "sessions each", "pool", "protocol", "driven over"),
                _grouped(rows_l),
                note="Each launcher logs its users on and runs their timed operations (docs/session-launchers.md).",
            )
        )
    return out


def section(inputs: Inputs) -> Section:
    children = []
    versions: dict[str, str] = {}
    for r in inputs.runs:
        versions.update(r.versions)
    if all(c.summary.scenario in STREAMING_2007 for c in inputs.cells):
        # the lab's vCenter and arrays answered the preflight, but no test of these runs used them
        machines = {
            m
            for cfg in inputs.configurations or [""]
            if (lab := inputs.lab(cfg or None))
            for m in lab.machines
        }
        versions = {k: v for k, v in versions.items() if k.split()[0] in machines}
    configs = inputs.configurations or [""]
    for cfg in configs:
        lab = inputs.lab(cfg or None)
        title = f"{CONFIG_WORDS.get(cfg, cfg[:1].upper() + cfg[1:])} configuration" if cfg else "The lab"
        if lab is None:
            children.append(
                Section(
                    title,
                    [
                        Text(
                            f"The runs do not record the lab of configuration {cfg or '(default)'}, and the "
                            "inventory file they name is gone or has changed since: not shown."
                        )
                    ],
                )
            )
            continue
        desc = (lab.data.get("configuration") or {}).get("description") or ""
        blocks: list[Block] = [
            Text(f"{desc[0].upper() + desc[1:]}. Source: {lab.origin}." if desc else f"Source: {lab.origin}.")
        ]
        blocks += [
            t
            for t in (servers_table(lab, versions, cfg or lab.data.get("name", "")), volumes_table(lab, cfg))
            if t
        ]
        children.append(Section(title, blocks))
    first = inputs.lab(configs[0] or None)
    shared: list[Block] = []
    if first is not None and any(c.is_vdi for c in inputs.cells):
        tables = vdi_tables(first)
        if tables:
            children.append(Section("Hosts, arrays, pools and launchers", list(tables)))
    if first is not None:
        shared += [t for t in (clients_table(first), network_table(first)) if t]
    if versions:
        shared.append(
            Table.of(
                "Firmware and software versions read from the endpoints during the runs",
                ("endpoint", "version as read"),
                [[k, v] for k, v in sorted(versions.items())],
            )
        )
    else:
        shared.append(
            Text(
                "The runs recorded no firmware or software versions read from the endpoints (run.json has no "
                "endpoint_versions, and no Allure environment file): the versions above are the inventory's.",
                note=True,
            )
        )
    if shared:
        children.append(Section("Clients, network and versions", shared))
    lab = inputs.lab()
    intro = (
        f"Lab {lab.data.get('name')}: {lab.data.get('description', '').strip()}"
        if lab is not None
        else "The lab as the runs recorded it."
    )
    head: list[Block] = [
        Text(
            intro
            + " The tables below are taken from each run's resolved inventory (every machine, its hardware and "
            "its role in the configuration) and from what the endpoints reported during the run."
        )
    ]
    if inputs.simulated:
        head.append(
            Text(
                "This lab is simulated: every endpoint was a simulator on the controller, answering from a "
                "physical model of the hardware listed here. The results characterise that model, not "
                "delivered hardware.",
            )
        )
    return Section("Configuration under test", head, children)
