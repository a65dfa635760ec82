"""The simulated Unity cuts collections into pages the way the recorded real array does (storops'
two-page metric catalogue: ``per_page``, ``links`` self/next and self/first/prev), and the driver
reads every page of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from labctl.drivers.storage.unity import UnityDriver
from labctl.inventory.model import Tls, TlsMode
from tests.conformance.storage.replay import recording
from tests.drivers.simparts import SECRETS, endpoints, write_secrets

pytestmark = pytest.mark.integration


def test_the_simulated_unity_pages_as_the_real_array_and_the_driver_reads_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = [recording(f"unity/metric_page_{n}.json.gz")["links"] for n in (1, 2)]
    write_secrets(tmp_path, monkeypatch)
    with endpoints(tmp_path, "labctl.sim.unity") as parts:
        arr = parts.lab.storage["unity-01"]
        arr = arr.model_copy(update={"tls": Tls(mode=TlsMode.VERIFY, ca_file=str(parts.ca_file))})
        s = requests.Session()
        s.trust_env = False
        s.auth = (arr.user, SECRETS[arr.password])
        s.headers["X-EMC-REST-CLIENT"] = "true"
        url = arr.url.rstrip("/") + "/api/types/metric/instances"
        whole = s.get(url, params={"fields": "path"}, verify=str(parts.ca_file), timeout=10).json()
        n = len(whole["entries"])
        per_page = (n + 1) // 2  # two pages, as the real catalogue has
        pages = [
            s.get(
                url,
                params={"fields": "path", "per_page": per_page, "page": p},
                verify=str(parts.ca_file),
                timeout=10,
            ).json()
            for p in (1, 2)
        ]
        with UnityDriver(arr, timeout_s=5) as drv:
            catalog = drv.metric_catalog()
    assert whole["links"] == [{"rel": "self", "href": "&page=1"}]  # everything fits one page of 2,000
    assert [p["links"] for p in pages] == real  # the real array's link form, page for page
    assert sum(len(p["entries"]) for p in pages) == n
    assert f"per_page={per_page}" in pages[0]["@base"]
    assert set(catalog) == {e["content"]["path"] for e in whole["entries"]}
