"""Nothing a customer or a chat channel reads carries the controller's absolute paths or a store's
credentials (issue 20): the nightly summary's links are relative to the run folder, the trends page
names a local store by its file name and a URL without its password."""

from __future__ import annotations

from labctl.report.summary_text import shown_link
from labctl.report.trends import store_name

RUN = "20261128-010000-boot_storm-ab12"


def test_local_links_are_relative_to_the_run_folder() -> None:
    assert shown_link(f"/work/main/results/{RUN}/report/index.html", RUN) == "report/index.html"
    assert shown_link(f"/srv/results/{RUN}/junit.xml", RUN) == "junit.xml"
    url = f"https://ci.example/artifacts/{RUN}/report/index.html"
    assert shown_link(url, RUN) == url


def test_store_is_named_without_paths_or_credentials() -> None:
    assert store_name("/work/main/results/store.duckdb") == "store.duckdb"
    shown = store_name("postgresql://labctl:hunter2@db.example:5432/results?password=hunter2")
    assert "hunter2" not in shown and shown == "postgresql://db.example:5432/results"
