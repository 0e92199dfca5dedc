"""server.properties as the lab writes it for a node, in each mode."""

from pathlib import Path

import pytest

from kfaild_lab.config import server_properties
from kfaild_lab.secured import client_properties


def properties(text: str) -> dict[str, str]:
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_a_broker_listens_in_plaintext_on_its_port_and_knows_the_controller(
    lab_env: Path,
) -> None:
    props = properties(server_properties(2, 25000, {}))
    assert props["node.id"] == "2"
    assert props["process.roles"] == "broker"
    assert props["controller.quorum.voters"] == "100@127.0.0.1:25100"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:25092"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:25092"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["log.dirs"] == str(lab_env / "node2" / "data")
    assert "authorizer.class.name" not in props


def test_a_controller_has_only_the_controller_listener(lab_env: Path) -> None:
    props = properties(server_properties(100, 19000, {}))
    assert props["process.roles"] == "controller"
    assert props["listeners"] == "CONTROLLER://127.0.0.1:19100"
    assert "advertised.listeners" not in props


def test_set_settings_come_last_in_key_order(lab_env: Path) -> None:
    text = server_properties(1, 19000, {"z.last": "1", "a.first": "2"})
    tail = text.splitlines()[-3:]
    assert tail == ["# lab up --set", "a.first=2", "z.last=1"]


def test_a_namespaced_node_listens_on_its_own_address_with_its_log_on_its_disk(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_NETNS", "1")
    props = properties(server_properties(3, 25000, None))
    assert props["listeners"] == "PLAINTEXT://10.77.25.3:25093"
    assert props["controller.quorum.voters"] == "100@10.77.25.100:25100"
    assert props["log.dirs"] == str(lab_env / "node3" / "disk" / "kafka")


def write_passwords(state: Path) -> None:
    secrets = state / "secrets"
    secrets.mkdir(parents=True)
    for user in ("admin", "kfaild", "probe"):
        (secrets / f"{user}.password").write_text(f"pw-{user}\n")


def test_a_sasl_ssl_broker_has_a_scram_client_listener_and_a_plaintext_one_for_the_lab(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_SECURITY", "sasl_ssl")
    write_passwords(lab_env)
    props = properties(server_properties(1, 19000, {}))
    assert props["listeners"] == "CLIENT://127.0.0.1:19091,LAB://127.0.0.1:19081"
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,CLIENT:SASL_SSL,LAB:PLAINTEXT"
    )
    assert props["inter.broker.listener.name"] == "CLIENT"
    assert props["ssl.keystore.location"] == str(lab_env / "node1" / "tls" / "node.pem")
    assert 'password="pw-admin"' in props["listener.name.client.scram-sha-512.sasl.jaas.config"]
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:admin;User:kfaild;User:ANONYMOUS"


def test_an_mtls_broker_requires_client_certificates_and_has_no_authorizer(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_SECURITY", "mtls")
    props = properties(server_properties(1, 19000, {}))
    assert props["listener.security.protocol.map"] == (
        "CONTROLLER:PLAINTEXT,CLIENT:SSL,LAB:PLAINTEXT"
    )
    assert props["listener.name.client.ssl.client.auth"] == "required"
    assert "authorizer.class.name" not in props


def test_controllers_stay_plaintext_in_a_secured_lab(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_SECURITY", "mtls")
    props = properties(server_properties(100, 19000, {}))
    assert props["listeners"] == "CONTROLLER://127.0.0.1:19100"


def test_a_client_of_each_mode_gets_kfailds_client_keys(lab_env: Path) -> None:
    assert client_properties("plaintext") == {}
    sasl = client_properties("sasl_ssl")
    assert sasl["security.protocol"] == "SASL_SSL"
    assert sasl["sasl.username"] == "kfaild"
    assert sasl["sasl.password_file"] == str(lab_env / "secrets" / "kfaild.password")
    mtls = client_properties("mtls")
    assert mtls["ssl.certificate.location"] == str(lab_env / "tls" / "client.pem")
    assert mtls["ssl.ca.location"] == str(lab_env / "tls" / "ca.pem")
