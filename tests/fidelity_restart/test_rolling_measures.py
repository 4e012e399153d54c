"""What the rolling runs measure and pick, on their own: the swap's pause from output arrival times, and which
generated cases have output on both sides of the move."""

from __future__ import annotations

from tests.fidelity_restart.driver import swap_pause
from tests.fidelity_restart.strategies import Case, has_output_around_move


def test_swap_pause_splits_the_close_and_the_resume() -> None:
    # output at 1.0 and 2.0 s, the first instance closing from 3.0 to 4.5 s, the next output at 7.0 and 7.5 s
    pause = swap_pause([1.0, 2.0, 7.0, 7.5], leaving=3.0, gone=4.5)
    assert pause == {"close": 1.5, "resume": 2.5, "first_after": 4.0, "gap": 5.0}


def test_swap_pause_counts_what_the_leaving_instance_committed_as_it_closed_as_before() -> None:
    pause = swap_pause([3.5, 6.0], leaving=3.0, gone=4.0)
    assert pause["gap"] == 2.5 and pause["first_after"] == 3.0


def test_swap_pause_without_output_after_the_move() -> None:
    assert swap_pause([1.0], leaving=3.0, gone=4.0) == {"close": 1.0, "resume": None, "first_after": None,
                                                        "gap": None}
    assert swap_pause([5.0], leaving=3.0, gone=4.0)["gap"] is None


def _case(phase1: int, total: int) -> Case:
    return {"phase1": phase1, "inputs": [["in", "a", "1", t] for t in range(total)]}


def test_output_around_the_move_needs_both_sides() -> None:
    case = _case(10, 16)  # phase 2: 10..15, its first slice 10..11, the move after it
    assert has_output_around_move(case, [3, 12])
    assert not has_output_around_move(case, [3, 9, 11])  # nothing after the first slice of phase 2
    assert not has_output_around_move(case, [12, 15])  # nothing in phase 1
    assert not has_output_around_move(case, [])
