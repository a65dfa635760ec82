from labctl.inventory import load_lab


def test_default_lab_has_the_2007_clients_and_servers() -> None:
    lab = load_lab(configuration="ha")
    assert len(lab.clients) == 100
    assert {s.name for s in lab.servers} == {"pvs-01", "pvs-02", "nas-01", "infra-01"}
    assert lab.clients[0].mac == "00:1a:a0:07:00:01" and lab.clients[-1].ip == "127.20.1.100"


def test_test_lab_factory_moves_every_address(tmp_path) -> None:
    from tests.labfiles import make_test_lab

    path = make_test_lab(tmp_path, clients=3, faults="- {kind: client_never_wakes, targets: [optiplex-002]}")
    lab = load_lab(path, every_machine=True)
    assert len(lab.clients) == 3
    assert all(not (m.ip or "").startswith("127.20.") for m in lab.machines.values())
    assert lab.faults[0].targets == ("optiplex-002",)
