"""The arithmetic of the reproduction report's figures (kfaild_repro.results) on hand-made drill
results: seconds from microseconds, ranges and their rounding, stall summaries, send counts, and
the per-figure lists that figures() collects from kills and stops."""

from typing import Any

import pytest

from kfaild_repro.results import (
    cell,
    counts,
    counts_cell,
    dur,
    end_rel,
    exit_after_s,
    figures,
    first,
    fmt3,
    followers_cell,
    kind,
    leader_after,
    load_range,
    rel_s,
    rng,
    single_cell,
    stall_s,
    stalls_of,
    summary,
    us,
)

FAULT_US = 1_000_000_000


def gap(start_s: float, end_s: float) -> dict[str, int]:
    """An interval from start_s to end_s seconds after the fault, in the drill JSON's µs."""
    return {"start_us": FAULT_US + round(start_s * 1e6), "end_us": FAULT_US + round(end_s * 1e6)}


def stalled(start_s: float, end_s: float) -> dict[str, Any]:
    return {"outcome": "stall", "stall": gap(start_s, end_s), "longest_gap": gap(start_s, end_s)}


def not_significant(gap_s: float, noise_s: float) -> dict[str, Any]:
    return {
        "outcome": "none",
        "stall": None,
        "longest_gap": gap(0.0, gap_s),
        "baseline": gap(-3.0, -3.0 + noise_s),
    }


def inconclusive(reason: str) -> dict[str, Any]:
    return {"outcome": "inconclusive", "reason": reason}


def partition(
    topic: str, number: int, ack: dict[str, Any], *, phases: dict[str, Any] | None = None, **more
) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": number,
        "role": more.pop("role", "follower"),
        "ack": ack,
        "receive": ack,
        "phases": phases or {},
        "failed": 0,
        "lost": 0,
        "unresolved": 0,
        "settled": True,
        **more,
    }


def drill(label: str, *partitions: dict[str, Any], **run: Any) -> dict[str, Any]:
    """A saved drill of one run whose fault is at FAULT_US."""
    return {
        "label": label,
        "drill": {"runs": [{"fault_us": FAULT_US, **run, "analysis": {"partitions": partitions}}]},
    }


def test_microseconds_become_seconds_and_an_interval_its_length() -> None:
    assert us(None) is None
    assert us(9_150_000) == pytest.approx(9.15)
    assert dur(None) is None
    assert dur(gap(0.05, 9.45)) == pytest.approx(9.4)


def test_a_range_is_min_to_max_of_the_values_present_rounded_to_two_decimals() -> None:
    assert rng([9.534, None, 7.356, 8.0]) == "7.36–9.53 s"
    assert rng([]) == "n/a"
    assert rng([None, None]) == "n/a"


def test_a_range_whose_ends_round_alike_is_one_figure() -> None:
    assert rng([9.401, 9.399]) == "9.40 s"
    assert rng([0, 0, 0], "{:d}", "") == "0"
    assert rng([0, 3], "{:d}", "") == "0–3"


def test_three_decimals_or_a_dash() -> None:
    assert fmt3(None) == "–"
    assert fmt3(0.0444) == "0.044"
    assert fmt3(12.7565) == "12.757"


def test_only_a_stall_outcome_gives_a_stall_figure() -> None:
    assert stall_s(partition("orders", 0, stalled(0.05, 9.45))) == pytest.approx(9.4)
    assert stall_s(partition("orders", 1, not_significant(0.06, 0.05))) is None
    assert stall_s(partition("orders", 2, inconclusive("probe held back"))) is None


def test_a_result_without_an_outcome_is_inconclusive_and_keeps_its_old_stall_as_longest_gap() -> (
    None
):
    old = {"ack": {"stall": gap(0.1, 9.0)}}
    r = kind(old)
    assert r["outcome"] == "inconclusive"
    assert "no outcome field" in r["reason"]
    assert r["longest_gap"] == gap(0.1, 9.0)
    assert stall_s(old) is None


def test_a_table_cell_is_a_bold_stall_a_gap_against_its_noise_or_the_reason() -> None:
    assert cell(None) == "–"
    assert cell(partition("orders", 0, stalled(0.05, 9.45))) == "**9.400**"
    assert (
        cell(partition("orders", 2, not_significant(0.044, 0.039)))
        == "none (gap 0.044, noise 0.039)"
    )
    assert cell(partition("orders", 1, inconclusive("the window did not settle"))) == (
        "inconclusive: the window did not settle"
    )
    assert cell(partition("orders", 1, {"outcome": "inconclusive"})) == (
        "inconclusive: no reason given"
    )


def test_a_summary_ranges_the_stalls_and_counts_nones_and_inconclusives_apart() -> None:
    items = [
        ("stop-1", partition("orders", 0, not_significant(0.22, 0.26)), "ack"),
        ("stop-2", partition("orders", 0, not_significant(0.46, 0.42)), "ack"),
        ("stop-3", partition("orders", 0, stalled(0.06, 1.39)), "ack"),
    ]
    assert summary(items) == (
        "1.33 s (stall in 1 of 3); none in 2 of 3 (longest gap 0.22–0.46 s against a noise of "
        "0.26–0.42 s: not significant)"
    )


def test_a_summary_of_stalls_only_is_their_range() -> None:
    items = [
        ("kill-1", partition("orders", 0, stalled(0.05, 9.66)), "ack"),
        ("kill-2", partition("orders", 0, stalled(0.02, 7.48)), "ack"),
    ]
    assert summary(items) == "7.46–9.61 s"
    assert summary([]) == "n/a"


def test_a_summary_names_the_inconclusive_drills_once_each_with_distinct_reasons() -> None:
    items = [
        ("kill-2", partition("orders", 0, inconclusive("probe held back")), "ack"),
        ("kill-1", partition("orders", 0, inconclusive("probe held back")), "ack"),
        ("kill-3", partition("orders", 0, stalled(0.0, 9.0)), "ack"),
    ]
    assert summary(items) == (
        "9.00 s (stall in 1 of 3); inconclusive in 2 of 3 (kill-1, kill-2): probe held back"
    )


def test_the_summary_of_receive_stalls_reads_the_receive_result() -> None:
    p = partition("orders", 0, stalled(0.0, 2.0))
    p["receive"] = stalled(0.0, 2.5)
    assert summary([("kill-1", p, "receive")]) == "2.50 s"
    assert stalls_of([("kill-1", p, "ack"), ("kill-1", p, "receive")]) == [
        pytest.approx(2.0),
        pytest.approx(2.5),
    ]


def test_followers_are_summarised_per_partition_in_order() -> None:
    items = [
        ("stop-1", partition("orders", 2, not_significant(0.06, 0.05)), "ack"),
        ("stop-1", partition("orders", 1, stalled(0.38, 1.39)), "ack"),
    ]
    assert followers_cell(items) == (
        "p1: 1.01 s; p2: none in 1 of 1 (longest gap 0.06 s against a noise of 0.05 s: "
        "not significant)"
    )


def test_send_counts_add_up_over_partitions_and_settle_only_when_all_did() -> None:
    ps = [
        partition("orders", 0, stalled(0, 1), failed=2, lost=1, unresolved=0),
        partition("orders", 1, stalled(0, 1), failed=1, lost=0, unresolved=3, settled=False),
    ]
    assert counts(ps) == (3, 1, 3, False)
    assert counts(ps[:1]) == (2, 1, 0, True)


def test_the_failed_sends_cell_says_unresolved_messages_or_that_every_message_settled() -> None:
    assert counts_cell([]) == "n/a"
    assert counts_cell([(0, 0, 0, True), (0, 0, 0, True)]) == "0 (every message settled)"
    assert counts_cell([(0, 0, 0, True), (2, 0, 0, False)]) == "0–2"
    assert counts_cell([(1, 0, 0, True), (1, 0, 2, False)]) == (
        "1 (+ 0–2 unresolved: no fate when the analysis settled)"
    )


def test_a_single_cell_adds_its_two_phases_when_kfaild_measured_them() -> None:
    items = [("stop-1", partition("single", 0, stalled(0.0, 12.18)), "ack")]
    assert single_cell(items, [(None, None, "sole_replica")]) == "12.18 s"
    assert single_cell(items, [(11.95, 0.26, "sole_replica"), (13.07, 0.71, "sole_replica")]) == (
        "12.18 s (fault → node back 11.95–13.07 s; node back → first ack 0.26–0.71 s)"
    )


def test_times_relative_to_the_fault() -> None:
    run = {"fault_us": FAULT_US, "observe_end_us": FAULT_US + 5_010_000, "recovered_us": None}
    assert rel_s(run, "observe_end_us") == pytest.approx(5.01)
    assert rel_s(run, "recovered_us") is None
    assert rel_s(None, "observe_end_us") is None
    assert rel_s({"observe_end_us": 5}, "observe_end_us") is None
    assert end_rel(run, gap(0.2, 1.44)) == pytest.approx(1.44)
    assert end_rel(run, None) is None


def test_the_exit_time_comes_from_the_injectors_detail() -> None:
    assert exit_after_s({"fault_detail": "SIGTERM to pid 27112, exited after 2636 ms"}) == 2.636
    assert exit_after_s({"fault_detail": "SIGKILL to pid 27112"}) is None
    assert exit_after_s(None) is None


def test_the_load_range_reads_the_first_figure_of_each_load_and_skips_what_is_not_one() -> None:
    recs = {
        "kill-1": {"load_before": "3.12 2.00 1.50", "load_after": "5.64 3.00 2.00"},
        "kill-2": {"load_before": "4.00", "load_after": ""},
        "kill-3": {"load_before": "n/a"},
    }
    assert load_range(recs) == "3.1 to 5.6"
    assert load_range({}) == "n/a"


def test_the_first_run_of_a_drill_and_its_partitions_by_topic_and_number() -> None:
    p0 = partition("orders", 0, stalled(0, 1))
    run, analysis, by_key = first(drill("kill-1", p0, observe_end_us=FAULT_US + 1))
    assert run["fault_us"] == FAULT_US
    assert analysis["partitions"] == (p0,)
    assert by_key == {("orders", 0): p0}
    assert first({"drill": {"runs": []}}) == (None, {}, {})


def test_leadership_after_a_drill_is_read_from_its_cluster_snapshot() -> None:
    p0 = {"partition": 0, "leader": 2, "replicas": [1, 2, 3], "isr": [1, 2, 3]}
    rec = {
        "cluster_after": {
            "topics": [
                {"name": "single", "partitions": [{"partition": 0, "leader": 1}]},
                {"name": "orders", "partitions": [p0]},
            ]
        }
    }
    assert leader_after(rec) == p0
    assert leader_after(rec, "orders", 1) is None


def kill(label: str, detection_s: float, fenced_s: float, client_s: float) -> dict[str, Any]:
    phases = {
        "detection_us": round(detection_s * 1e6),
        "fenced_at_us": FAULT_US + round(fenced_s * 1e6),
        "client_update_at_us": FAULT_US + round(client_s * 1e6),
    }
    single_phases = {"node_back_us": 15_770_000, "resume_us": 850_000}
    return drill(
        label,
        partition("orders", 0, stalled(0.0, client_s + 0.1), phases=phases, role="leader"),
        partition("orders", 1, stalled(0.0, fenced_s + 0.05), failed=1),
        partition("single", 0, stalled(0.0, 16.62), phases=single_phases, role="sole_replica"),
    )


def stop(label: str, new_leader_s: float, client_s: float) -> dict[str, Any]:
    phases = {
        "new_leader_at_us": FAULT_US + round(new_leader_s * 1e6),
        "client_update_at_us": FAULT_US + round(client_s * 1e6),
    }
    return drill(
        label,
        partition("orders", 0, stalled(0.0, 1.33), phases=phases, role="leader"),
        partition("orders", 2, not_significant(0.06, 0.05)),
    )


def test_kill_figures_are_detection_and_fenced_to_client_update() -> None:
    f = figures(
        {"kill-1": kill("kill-1", 9.15, 9.15, 9.30), "kill-2": kill("kill-2", 7.36, 7.4, 7.6)}
    )
    assert f["kill_labels"] == ["kill-1", "kill-2"]
    assert f["detection"] == [pytest.approx(9.15), pytest.approx(7.36)]
    assert f["fence_to_client"] == [pytest.approx(0.15), pytest.approx(0.2)]
    assert [label for label, _, _ in f["kill_p0"]] == ["kill-1", "kill-2"]
    assert [(label, p["partition"]) for label, p, _ in f["kill_fol"]] == [
        ("kill-1", 1),
        ("kill-2", 1),
    ]
    assert f["kill_counts"] == [(1, 0, 0, True), (1, 0, 0, True)]
    assert f["kill_single_phases"] == [
        (pytest.approx(15.77), pytest.approx(0.85), "sole_replica"),
        (pytest.approx(15.77), pytest.approx(0.85), "sole_replica"),
    ]
    assert f["stop_labels"] == []


def test_stop_figures_are_new_leader_and_client_update_after_the_sigterm() -> None:
    f = figures({"stop-1": stop("stop-1", 0.094, 0.37)})
    assert f["stop_new_leader"] == [pytest.approx(0.094)]
    assert f["stop_client"] == [pytest.approx(0.37)]
    assert f["detection"] == []
    assert f["stop_single"] == []


def test_the_short_plan_counts_the_stop_without_election_as_a_graceful_stop() -> None:
    recs = {
        "stop-1": stop("stop-1", 0.09, 0.3),
        "stop-no-election": stop("stop-no-election", 0.1, 0.4),
    }
    assert figures(recs)["stop_labels"] == ["stop-1", "stop-no-election"]
    full = {f"stop-{i}": stop(f"stop-{i}", 0.09, 0.3) for i in (1, 2, 3)}
    full["stop-no-election"] = stop("stop-no-election", 0.1, 0.4)
    assert figures(full)["stop_labels"] == ["stop-1", "stop-2", "stop-3"]


def test_a_run_without_orders_p0_adds_no_figure() -> None:
    rec = drill("kill-1", partition("orders", 1, stalled(0, 9)))
    f = figures({"kill-1": rec})
    assert f["kill_labels"] == []
    assert f["kill_fol"] == []
