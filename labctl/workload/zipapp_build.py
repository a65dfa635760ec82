"""Build the workload as one file to copy into a desktop image: a zipapp with its profiles."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

HERE = Path(__file__).parent
MAIN = "import sys\nimport labctl_workload\n\nsys.exit(labctl_workload.main())\n"


def build(out: Path) -> Path:
    """``python out.pyz --help`` runs on any Python 3.11+ with nothing else installed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("__main__.py", MAIN)
        z.write(HERE / "agent.py", "labctl_workload.py")
        z.write(HERE / "profiles.json", "profiles.json")
    out.write_bytes(b"#!/usr/bin/env python3\n" + buf.getvalue())
    out.chmod(0o755)
    return out
