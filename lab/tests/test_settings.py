"""The environment variables that fix a lab's nodes, and `up --set`."""

import pytest

from kfaild_lab.errors import UsageError
from kfaild_lab.settings import (
    BROKERS,
    CONTROLLERS,
    NODES,
    broker_count,
    controller_count,
    is_controller,
    parse_settings,
    small_lab_settings,
)


def test_a_lab_has_three_brokers_and_one_controller_by_default() -> None:
    assert broker_count({}) == 3
    assert controller_count({}) == 1
    assert (CONTROLLERS, BROKERS) == ((100,), (1, 2, 3))
    assert NODES == (100, 1, 2, 3)


@pytest.mark.parametrize("value", ["1", "2", "3"])
def test_kfaild_lab_brokers_takes_one_to_three(value: str) -> None:
    assert broker_count({"KFAILD_LAB_BROKERS": value}) == int(value)


@pytest.mark.parametrize("value", ["0", "4", "two", ""])
def test_another_broker_count_stops_the_lab_with_the_variable_named(value: str) -> None:
    with pytest.raises(SystemExit, match="KFAILD_LAB_BROKERS"):
        broker_count({"KFAILD_LAB_BROKERS": value})


def test_kfaild_lab_controllers_is_one_or_three() -> None:
    assert controller_count({"KFAILD_LAB_CONTROLLERS": "3"}) == 3
    with pytest.raises(SystemExit, match="is not 1 or 3"):
        controller_count({"KFAILD_LAB_CONTROLLERS": "2"})


def test_a_three_broker_lab_keeps_kafkas_replication_defaults() -> None:
    assert small_lab_settings(3) == {}


def test_a_smaller_lab_fits_the_internal_topics_to_its_brokers() -> None:
    one = small_lab_settings(1)
    assert one["offsets.topic.replication.factor"] == "1"
    assert one["transaction.state.log.replication.factor"] == "1"
    assert one["transaction.state.log.min.isr"] == "1"
    assert small_lab_settings(2)["offsets.topic.replication.factor"] == "2"


def test_controllers_are_the_nodes_from_100() -> None:
    assert all(is_controller(n) for n in (100, 101, 102))
    assert not any(is_controller(n) for n in (1, 2, 3))


def test_set_pairs_become_settings_with_spaces_trimmed() -> None:
    pairs = ["broker.session.timeout.ms=3000", " log.retention.ms = 60000 ", "a.b="]
    assert parse_settings(pairs) == {
        "broker.session.timeout.ms": "3000",
        "log.retention.ms": "60000",
        "a.b": "",
    }
    assert parse_settings(None) == {}


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("broker.session.timeout.ms", "expected key=value"),
        ("-x=1", "expected key=value"),
        ("a b=1", "expected key=value"),
        ("a=1\n2", "on one line"),
        ("listeners=PLAINTEXT://:9092", "the lab sets listeners itself"),
        ("node.id=7", "the lab sets node.id itself"),
    ],
)
def test_a_bad_or_topology_setting_is_a_usage_error(pair: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_settings([pair])
