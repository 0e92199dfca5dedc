"""Ports, addresses and modes of a lab on a port base."""

import json
from pathlib import Path

import pytest

from kfaild_lab import layout
from kfaild_lab.errors import UsageError


def write_lab(state: Path, lab: dict[str, object]) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "lab.json").write_text(json.dumps(lab))


def test_brokers_are_on_base_plus_90_and_controllers_on_base_plus_100() -> None:
    assert [layout.node_port(n, 19000) for n in (1, 2, 3)] == [19091, 19092, 19093]
    assert [layout.node_port(n, 25000) for n in (100, 101, 102)] == [25100, 25101, 25102]


def test_the_port_base_is_19000_without_a_variable_or_a_lab(lab_env: Path) -> None:
    assert layout.port_base() == 19000


def test_the_port_base_variable_wins_over_the_labs_own(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_lab(lab_env, {"port_base": 23000})
    assert layout.port_base() == 23000
    monkeypatch.setenv("KFAILD_LAB_PORT_BASE", "31000")
    assert layout.port_base() == 31000


@pytest.mark.parametrize("value", ["1023", "65436", "port", ""])
def test_a_port_base_that_leaves_no_room_for_the_nodes_is_a_usage_error(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("KFAILD_LAB_PORT_BASE", value)
    with pytest.raises(UsageError, match="KFAILD_LAB_PORT_BASE"):
        layout.port_base()


def test_the_highest_port_base_puts_the_last_controller_on_65535(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_PORT_BASE", "65435")
    assert layout.node_port(100, layout.port_base()) == 65535


def test_nodes_listen_on_loopback_by_default(lab_env: Path) -> None:
    assert not layout.netns_mode()
    assert layout.node_host(1, 25000) == "127.0.0.1"
    assert layout.bootstrap_servers(19000) == "127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093"


def test_a_namespaced_node_has_its_id_as_the_last_octet_of_the_labs_subnet(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_NETNS", "1")
    assert layout.netns_mode()
    assert layout.node_host(2, 25000) == "10.77.25.2"
    assert layout.node_host(100, 25000) == "10.77.25.100"
    assert layout.bootstrap_servers(25000) == "10.77.25.1:25091,10.77.25.2:25092,10.77.25.3:25093"


def test_labs_on_other_port_bases_get_other_subnets_and_interface_names() -> None:
    assert layout.net_subnet(19000) == "10.77.19"
    assert layout.net_subnet(25000) == "10.77.25"
    assert layout.bridge_name(25000) == "kfl25000-br"
    assert layout.bridge_addr(25000) == "10.77.25.254"
    assert layout.netns_name(3, 25000) == "kfl25000-n3"
    assert layout.veth_host(100, 25000) == "kfl25000-n100h"


def test_every_interface_name_fits_linuxs_15_characters() -> None:
    for node in (1, 2, 3, 100, 101, 102):
        for base in (1024, 19000, 65435):
            assert len(layout.veth_host(node, base)) <= 15
            assert len(layout.bridge_name(base)) <= 15


def test_without_the_variable_the_modes_are_those_the_lab_was_brought_up_with(
    lab_env: Path,
) -> None:
    write_lab(lab_env, {"netns": True, "security": "mtls"})
    assert layout.netns_mode()
    assert layout.security_mode() == "mtls"
    assert layout.secured()


def test_an_empty_or_zero_netns_variable_means_loopback(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_lab(lab_env, {"netns": True})
    for value in ("0", ""):
        monkeypatch.setenv("KFAILD_LAB_NETNS", value)
        assert not layout.netns_mode()


def test_unknown_mode_values_are_usage_errors(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFAILD_LAB_NETNS", "yes")
    with pytest.raises(UsageError, match="KFAILD_LAB_NETNS"):
        layout.netns_mode()
    monkeypatch.setenv("KFAILD_LAB_SECURITY", "ssl")
    with pytest.raises(UsageError, match="plaintext, sasl_ssl, mtls"):
        layout.security_mode()


def test_the_lab_asks_a_secured_broker_on_its_own_plaintext_port(
    lab_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert layout.lab_port(2, 19000) == 19092
    monkeypatch.setenv("KFAILD_LAB_SECURITY", "sasl_ssl")
    assert layout.lab_port(2, 19000) == 19082


def test_a_port_names_its_nodes_address(lab_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KFAILD_LAB_NETNS", "1")
    monkeypatch.setenv("KFAILD_LAB_PORT_BASE", "25000")
    assert layout.host_of_port(25093) == "10.77.25.3"
    assert layout.host_of_port(25100) == "10.77.25.100"
    assert layout.host_of_port(4242) == "127.0.0.1"
