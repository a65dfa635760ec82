from labctl.inventory import load_lab


def test_default_lab_has_the_2007_clients_and_servers() -> None:
    lab = load_lab(configuration="ha")
    assert len(lab.clients) == 100
    assert {s.name for s in lab.servers} == {"pvs-01", "pvs-02", "nas-01", "infra-01"}
    assert lab.clients[0].mac == "00:1a:a0:07:00:01" and lab.clients[-1].ip == "127.20.1.100"
