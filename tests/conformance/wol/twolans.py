"""A test lab whose clients sit on two subnets, each with its own directed broadcast address.

The 2007 lab (tests/labfiles.py, on its own random loopback block 127.a/16) with lab-net cut to
127.a.0.0/17 and a second network, far-net 127.a.128.0/17, holding two more clients.
"""

from __future__ import annotations

import re
from pathlib import Path

from labctl.inventory import load_lab
from labctl.inventory.model import Lab
from tests.labfiles import make_test_lab

FAR_MACS = ("00:1a:a0:07:01:01", "00:1a:a0:07:01:02")


def two_subnet_lab(tmp_path: Path, clients: int = 3) -> Lab:
    path = make_test_lab(tmp_path, clients=clients)
    text = path.read_text()
    a = re.search(r"subnet: 127\.(\d+)\.0\.0/16", text)
    assert a is not None, "the test lab's network moved"
    b = a.group(1)
    text = text.replace(f"subnet: 127.{b}.0.0/16", f"subnet: 127.{b}.0.0/17")
    text = text.replace(f"broadcast: 127.{b}.255.255", f"broadcast: 127.{b}.127.255")
    far_net = (
        f"  - name: far-net\n    subnet: 127.{b}.128.0/17\n    broadcast: 127.{b}.255.255\n"
        "    wol_port: 40009\n    speed_gbps: 1\n\n"
    )
    text = text.replace("\nswitches:\n", "\n" + far_net + "switches:\n", 1)
    block = re.search(r"  - name: optiplex-\[.*?\n(?=\n)", text, flags=re.S)
    assert block is not None
    far = (
        block.group(0)
        .replace(re.search(r"optiplex-\[[^\]]*\]", block.group(0)).group(0), "far-[01-02]")  # type: ignore[union-attr]
        .replace("network: lab-net", "network: far-net")
    )
    far = re.sub(r"mac: .*", f"mac: {FAR_MACS[0]}..{FAR_MACS[1]}", far)
    far = re.sub(r"ip: .*", f"ip: 127.{b}.128.1..127.{b}.128.2", far)
    text = text.replace(block.group(0), block.group(0) + far, 1)
    path.write_text(text)
    return load_lab(path, every_machine=True)
