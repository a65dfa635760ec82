"""Cut a `govc object.save` directory of a real vCenter down to what the conformance tests load.

    python -m tests.conformance.vcenter.cut_recording SRC DST [--keep-vms N_PER_VAPP,N_IN_FOLDERS]

Drops what neither vcsim's ``-load`` nor the driver needs (tasks, the event catalogue, the extension
list, the port groups' ports, alarm and layout properties of VMs, hosts' ``config``), then writes
``DST.tar.xz``. vcsim loads the cut recordings (dangling references to dropped VMs are skipped).
SOURCES.md names each recording and the arguments it was cut with.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tarfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

DROP_FILES = ("*TaskManager*", "*-Task-*", "README.md", "*DistributedVirtualPortgroup*")
DROP_PROPS = {
    "EventManager": ("description",),
    "ExtensionManager": ("extensionList",),
    "VirtualMachine": (
        "capability",
        "layoutEx",
        "layout",
        "declaredAlarmState",
        "disabledMethod",
        "triggeredAlarmState",
        "recentTask",
    ),
    "HostSystem": ("declaredAlarmState", "systemResources", "capability", "config"),
}


def drop_props(path: Path, names: tuple[str, ...]) -> None:
    text = path.read_text()
    for n in names:
        text = re.sub(
            rf"  <propSet>\n    <name>{re.escape(n)}</name>\n.*?\n  </propSet>\n", "", text, flags=re.S
        )
    path.write_text(text)


def props(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {str(ps.findtext("name")): ps.find("val") for ps in root.findall("propSet")}  # type: ignore[misc]


def keep_vms(dst: Path, per_vapp: int, in_folders: int) -> None:
    """Every template, ``per_vapp`` VMs of each vApp, ``in_folders`` others, and every VM whose
    name another VM shares or whose guest address is link-local (the cases the tests need)."""
    files = sorted(dst.glob("*-VirtualMachine-*.xml"))
    names = Counter(str(props(f)["name"].text) for f in files)
    kept: set[Path] = set()
    vapps: Counter[str] = Counter()
    folder = 0
    for f in files:
        p = props(f)
        summary = p["summary"].find("config")
        template = summary is not None and summary.findtext("template") == "true"
        vapp = p["parentVApp"].text if "parentVApp" in p and p["parentVApp"] is not None else None
        guest = p.get("guest")
        ip = (guest.findtext("ipAddress") if guest is not None else None) or ""
        if template or names[str(p["name"].text)] > 1 or ip.startswith("fe80:"):
            kept.add(f)
        elif vapp and vapps[vapp] < per_vapp:
            vapps[vapp] += 1
            kept.add(f)
        elif not vapp and folder < in_folders:
            folder += 1
            kept.add(f)
    for f in files:
        if f not in kept:
            f.unlink()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--keep-vms", help="N_PER_VAPP,N_IN_FOLDERS (default: every VM)")
    a = ap.parse_args()
    shutil.rmtree(a.dst, ignore_errors=True)
    shutil.copytree(a.src, a.dst)
    for pattern in DROP_FILES:
        for f in a.dst.glob(pattern):
            f.unlink()
    for kind, names in DROP_PROPS.items():
        for f in a.dst.glob(f"*-{kind}-*.xml"):
            drop_props(f, names)
    if a.keep_vms:
        per_vapp, in_folders = (int(x) for x in a.keep_vms.split(","))
        keep_vms(a.dst, per_vapp, in_folders)
    with tarfile.open(a.dst.with_name(a.dst.name + ".tar.xz"), "w:xz") as tar:
        tar.add(a.dst, arcname=a.dst.name)
    shutil.rmtree(a.dst)


if __name__ == "__main__":
    main()
