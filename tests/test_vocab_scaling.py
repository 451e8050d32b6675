"""benchmarks/vocab_scaling.py's repeats: interleaved order, medians with spreads, per-repeat ratios."""

from __future__ import annotations

from typing import Any


def _row(step_s: float, tok: float, eval_tok: float) -> dict[str, Any]:
    return {"median_step_s": step_s, "train_tokens_per_s": tok, "eval_tokens_per_s": eval_tok,
            "peak_memory_mib": 100.0, "vocab": 10, "softmax": {"largest_vocab": 10}, "step_seconds": [step_s]}


def test_repeats_run_interleaved_with_the_order_rotated() -> None:
    from benchmarks.vocab_scaling import interleaved

    order = interleaved(["a", "b", "c"], 3)
    assert order == [(0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a"), (2, "c"), (2, "a"), (2, "b")]
    assert interleaved(["a"], 2) == [(0, "a"), (1, "a")]


def test_combined_rows_give_medians_spreads_and_per_repeat_ratios() -> None:
    from benchmarks.vocab_scaling import combine, summarise

    tied = combine([_row(1.0, 100.0, 50.0), _row(1.2, 80.0, 40.0), _row(0.9, 110.0, 60.0)])
    groc = combine([_row(2.0, 50.0, 45.0), _row(2.4, 40.0, 44.0), _row(1.8, 55.0, 30.0)])
    assert tied["train_tokens_per_s"] == 100.0 and tied["train_tokens_per_s_spread"] == [80.0, 110.0]
    assert len(tied["repeats"]) == 3
    summary = summarise("10k", {"tied_sampled": tied, "groc_sampled": groc})["summary"]
    assert summary["groc_sampled_over_tied_sampled_train"] == 0.5  # medians 50 / 100
    assert summary["groc_sampled_over_tied_sampled_train_per_repeat"] == [0.5, 0.5, 0.5]
    assert summary["groc_over_tied_eval_per_repeat"] == [0.9, 1.1, 0.5]
    # One repeat: the row as it is, no spread.
    one = _row(1.0, 100.0, 50.0)
    assert combine([one]) is one


def test_a_validation_between_steps_is_not_counted_in_any_step() -> None:
    """The third-step spike (issue 43): the trainer's first wall-clock checkpoint validated one minute in,
    and its time landed in the next timed step. The timer leaves every validation out of the steps."""
    from benchmarks.vocab_scaling import _Timer

    now = iter([0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 15.0]).__next__
    timer = _Timer(now)
    timer.on_start(None, {"vocab": 10, "softmax": None})  # 0
    timer.on_step(None)  # 1
    timer.on_step(None)  # 2
    timer.on_eval({"step": 2})  # 10: a checkpoint validation of 8 s
    timer.on_step(None)  # 11
    timer.on_step(None)  # 12
    timer.on_eval({"step": 4})  # 15: the final validation
    assert timer.step_s == [1.0, 1.0, 1.0, 1.0]
    assert timer.eval_s == 3.0 and timer.eval_record == {"step": 4}
