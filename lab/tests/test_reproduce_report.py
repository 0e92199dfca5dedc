"""What docs/REPRODUCTION.md's generator (kfaild_repro.report) computes itself on hand-made drill
results: times after the fault, the comparison table's rows, and the figures inside its notes."""

from typing import Any

from kfaild_repro.report import (
    after_fault,
    comparison_rows,
    failed_sends_note,
    kill_single_note,
    leadership_note,
    notes_for,
    sole_early_note,
)
from kfaild_repro.results import figures

FAULT_US = 1_000_000_000


def at(s: float) -> int:
    """s seconds after the fault, in the drill JSON's µs."""
    return FAULT_US + round(s * 1e6)


def single(stall_end_s: float, resume_s: float, node_back_s: float) -> dict[str, Any]:
    """`single` p0 stalled from the fault to stall_end_s."""
    stall = {"start_us": at(0.0), "end_us": at(stall_end_s)}
    return {
        "topic": "single",
        "partition": 0,
        "role": "sole_replica",
        "ack": {"outcome": "stall", "stall": stall, "longest_gap": stall},
        "phases": {"node_back_us": round(node_back_s * 1e6), "resume_us": round(resume_s * 1e6)},
        "failed": 0,
        "lost": 0,
        "unresolved": 0,
        "settled": True,
    }


def orders_p0(failed: int = 0) -> dict[str, Any]:
    stall = {"start_us": at(0.0), "end_us": at(9.5)}
    return {
        "topic": "orders",
        "partition": 0,
        "role": "leader",
        "ack": {"outcome": "stall", "stall": stall, "longest_gap": stall},
        "phases": {},
        "failed": failed,
        "lost": 0,
        "unresolved": 0,
        "settled": True,
    }


def drill(label: str, drill_id: int, *partitions: dict[str, Any], **run: Any) -> dict[str, Any]:
    return {
        "label": label,
        "drill": {
            "id": drill_id,
            "runs": [{"fault_us": FAULT_US, **run, "analysis": {"partitions": list(partitions)}}],
        },
    }


def test_a_run_time_is_shown_in_seconds_after_the_fault_or_as_a_dash() -> None:
    run = {"fault_us": FAULT_US, "observe_end_us": at(5.0123), "recovered_us": None}
    assert after_fault(run, "observe_end_us") == "5.012"
    assert after_fault(run, "recovered_us") == "–"
    assert after_fault(run, "window_end_us") == "–"
    assert after_fault({"observe_end_us": at(1)}, "observe_end_us") == "–"


def test_the_comparison_has_eleven_rows_and_the_last_is_p0s_leadership() -> None:
    f = figures({})
    rows = comparison_rows(f, {"leader": 2, "replicas": [1, 2, 3], "isr": [1, 2, 3]})
    assert len(rows) == 11
    assert rows[-1][2] == "p0 leader 2 (replicas [1, 2, 3], ISR [1, 2, 3])"
    assert comparison_rows(f, None)[-1][2] == "n/a"
    assert rows[0][2] == "n/a"  # no kill, no detection figure


def test_the_failed_sends_note_ranges_orders_and_single_separately() -> None:
    recs = {
        "kill-1": drill("kill-1", 1, orders_p0(failed=0), single(16.6, 0.85, 15.77)),
        "kill-2": drill("kill-2", 2, orders_p0(failed=3), single(18.0, 0.5, 17.0)),
    }
    (note,) = failed_sends_note(figures(recs))
    assert note.startswith("- **Failed sends** (orders: 0–3 per run; `single`: 0): ")
    assert "#" not in note


def test_no_drill_no_failed_sends_note() -> None:
    assert failed_sends_note(figures({})) == []


def test_single_under_sigkill_spans_observe_end_and_the_restart_to_full_isr() -> None:
    recs = {
        "kill-1": drill(
            "kill-1",
            1,
            orders_p0(),
            single(16.62, 0.85, 15.77),
            observe_end_us=at(9.02),
            recovered_us=at(14.34),
        ),
        "kill-2": drill(
            "kill-2",
            2,
            orders_p0(),
            single(20.17, 0.9, 19.27),
            observe_end_us=at(10.82),
            recovered_us=at(21.16),
        ),
    }
    (note,) = kill_single_note(recs, figures(recs))
    assert "(16.62–20.17 s; fault → node back 15.77–19.27 s)" in note
    assert "once `orders` has resumed (9.02–10.82 s after the kill" in note
    assert "back in every ISR took 5.32–10.34 s." in note


def test_single_acked_before_full_isr_is_reported_in_milliseconds_before_recovered() -> None:
    recs = {
        "stop-1": drill(
            "stop-1", 41, orders_p0(), single(12.18, 0.26, 11.95), recovered_us=at(12.2375)
        ),
        # Acked after recovered_us: not early.
        "stop-2": drill("stop-2", 42, orders_p0(), single(13.0, 0.3, 12.6), recovered_us=at(12.9)),
    }
    (note,) = sole_early_note(recs)
    assert note.endswith(
        "stop-1 (drill 41): acked 57.5 ms before `recovered_us`, `resume` 0.260 s."
    )
    assert "stop-2" not in note


def test_leadership_says_whether_it_returned_to_broker_1() -> None:
    (moved,) = leadership_note({"leader": 2, "replicas": [1, 2, 3], "isr": [1, 2, 3]})
    assert "is broker 2 (replicas [1, 2, 3], ISR [1, 2, 3]): broker 1 is back" in moved
    (back,) = leadership_note({"leader": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3]})
    assert "is broker 1 (replicas [1, 2, 3], ISR [1, 2, 3]). `auto.leader" in back
    assert leadership_note(None) == []


def test_with_no_results_only_the_reading_note_is_left() -> None:
    notes = notes_for({}, figures({}), None)
    assert len(notes) == 1
    assert notes[0].startswith("- **Reading the per-run table**")
