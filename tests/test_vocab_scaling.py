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
