"""The public analysis workflows from Python (polyglot_groc.analysis.workflows).

Each function is keyword-only and documented, returns its frozen result, prints nothing, checks
its outputs before any work, and its ``to_dict()`` is the JSON the matching command prints
(every kind through evaluate and freq-bins: tests/test_scoring.py).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import typing
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from polyglot_groc.analysis import workflows
from polyglot_groc.analysis.neighbours import NeighboursResult, neighbours
from polyglot_groc.analysis.score import ScoreResult, score
from polyglot_groc.analysis.workflows import (
    AlignManyResult,
    AlignResult,
    CurvesResult,
    EvaluateResult,
    ExportResult,
    FreqBinsResult,
    LexiconCoverageResult,
    TuneCacheResult,
    WordSimilarityResult,
    align,
    align_many,
    curves,
    evaluate,
    export,
    freq_bins,
    lexicon_coverage,
    similarity,
    tune_cache,
)
from polyglot_groc.cli import app
from tests.test_scoring import LEXICON_TSV, train_runs

runner = CliRunner()

@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return train_runs(tmp_path_factory.mktemp("workflows"), ("groc", "lookup", "tied"))


@pytest.fixture
def quiet_root_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the CLI's stderr handler (a command run earlier in this process installs it), a
    library that printed would show in capsys; the library must not."""
    from polyglot_groc.commands._common import OneLineHandler

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [h for h in root.handlers if not isinstance(h, OneLineHandler)])


def _cli_json(*args: str | Path) -> dict:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):])


# -- the API's shape ------------------------------------------------------------------------------
FUNCTIONS = {evaluate: EvaluateResult, tune_cache: TuneCacheResult, freq_bins: FreqBinsResult, curves: CurvesResult,
             export: ExportResult, align: AlignResult, similarity: WordSimilarityResult,
             lexicon_coverage: LexiconCoverageResult, align_many: AlignManyResult, neighbours: NeighboursResult,
             score: ScoreResult}


def test_every_public_name_is_checked() -> None:
    names = {f.__name__ for f in FUNCTIONS} | {r.__name__ for r in FUNCTIONS.values()}
    assert names <= set(workflows.__all__)
    # load(run) takes the run positionally, as gensim's and fastText's load do (tests/test_model_api.py)
    assert {n for n in workflows.__all__ if n[0].islower()} - {"load"} == {f.__name__ for f in FUNCTIONS}


def _type_checking_names() -> dict[str, object]:
    """Names the alignment modules import for annotations only (``if TYPE_CHECKING``): they import
    torch, which aligning vector files never loads."""
    from polyglot_groc.analysis.export import Exported
    from polyglot_groc.model.bundle import ModelBundle

    return {"Exported": Exported, "ModelBundle": ModelBundle}


_TYPE_CHECKING_NAMES = _type_checking_names()


@pytest.mark.parametrize("fn", list(FUNCTIONS), ids=lambda f: f.__name__)
def test_workflows_are_keyword_only_typed_and_documented(fn: typing.Callable[..., object]) -> None:
    sig = inspect.signature(fn)
    assert sig.parameters and all(p.kind is p.KEYWORD_ONLY for p in sig.parameters.values())
    hints = typing.get_type_hints(fn, localns=_TYPE_CHECKING_NAMES)
    assert hints["return"] is FUNCTIONS[fn]  # type: ignore[index]
    assert all(name in hints for name in sig.parameters)
    doc = inspect.getdoc(fn) or ""
    assert all(section in doc for section in ("Args:", "Returns:", "Raises:"))
    documented = doc.split("Args:")[1].split("Returns:")[0]
    assert all(f"{name}:" in documented for name in sig.parameters), fn.__name__
    with pytest.raises(TypeError):
        fn("positional")
    result = FUNCTIONS[fn]  # type: ignore[index]
    assert dataclasses.is_dataclass(result) and result.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert callable(getattr(result, "to_dict", None))


def test_the_run_access_keywords_are_one_text_and_one_check(tmp_path: Path) -> None:
    """checkpoint/device/threads: every workflow that loads a run shows RUN_ACCESS_ARGS and checks them
    before any work (a bad checkpoint fails before the output is looked at or the run is read)."""
    from groc_base.errors import CheckpointError
    from polyglot_groc.analysis.export import export
    from polyglot_groc.analysis.similarity import similarity
    from polyglot_groc.model.access import RUN_ACCESS_ARGS, run_access_doc

    for fn in (workflows.evaluate, workflows.freq_bins, workflows.tune_cache, export, similarity):
        doc = inspect.getdoc(fn) or ""
        assert all(line in doc for line in RUN_ACCESS_ARGS.splitlines()) and "{run_access}" not in doc, fn
    with pytest.raises(CheckpointError, match="checkpoint 'middle' is unknown; use best or last"):
        workflows.evaluate(run=tmp_path / "no-such-run", checkpoint="middle")
    with pytest.raises(TypeError, match="no {run_access} line"):
        run_access_doc(lambda: None)


# -- each workflow from Python: nothing printed, the CLI's JSON ------------------------------------
def test_evaluate_from_python_is_the_command(runs: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                             quiet_root_logger: None) -> None:
    closed = evaluate(run=runs["groc"], split="valid", device="cpu")
    opened = evaluate(run=runs["lookup"], data=runs["unseen"], cache="unigram", device="cpu")
    assert capsys.readouterr() == ("", "")
    assert isinstance(closed, EvaluateResult) and isinstance(opened, EvaluateResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        closed.split = "test"  # type: ignore[misc]
    assert closed.to_dict() == _cli_json("evaluate", runs["groc"], "--split", "valid", "--device", "cpu")
    assert opened.to_dict() == _cli_json("evaluate", runs["lookup"], "--data", runs["unseen"], "--cache", "unigram",
                                         "--device", "cpu")
    assert opened.perplexity["en"] == opened.languages["en"]["perplexity"]  # type: ignore[index]


def test_evaluate_open_honours_batch_size_and_screen(runs: dict[str, Path]) -> None:
    one = evaluate(run=runs["groc"], data=runs["unseen"], device="cpu").languages["en"]  # type: ignore[index]
    four = evaluate(run=runs["groc"], data=runs["unseen"], batch_size=4, device="cpu").languages["en"]  # type: ignore[index]
    assert four["tokens"] < one["tokens"]  # four streams: each stream's first token is no target
    cli = _cli_json("evaluate", runs["groc"], "--data", runs["unseen"], "--batch-size", "4", "--no-screen",
                    "--device", "cpu")
    unscreened = evaluate(run=runs["groc"], data=runs["unseen"], batch_size=4, screen=False, device="cpu")
    assert cli == unscreened.to_dict() and cli["languages"]["en"]["tokens"] == four["tokens"]


def test_evaluate_open_loads_the_run_once(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import polyglot_groc.analysis.evaluate as ev

    calls: list[object] = []
    real = ev.load_bundle

    def counting(*args: object, **kwargs: object) -> object:
        calls.append((args, kwargs))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ev, "load_bundle", counting)
    evaluate(run=runs["groc"], cache="unigram", device="cpu")  # open vocabulary on the run's own data
    assert len(calls) == 1 and "cpu" in calls[0][0]  # type: ignore[index]


def test_tune_cache_and_freq_bins_from_python_are_the_commands(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_root_logger: None) -> None:
    tuned = tune_cache(run=runs["groc"], data=runs["unseen"], cache="neural", thetas=[0.0, 0.5], lambdas=[0.8, 0.9],
                       new_word_weights=[0.5, 1.0], out=tmp_path / "py.png", device="cpu")
    binned = freq_bins(run_a=runs["groc"], run_b=runs["tied"], data=runs["other"], out=tmp_path / "fb.png",
                       bin_width=5, bins=3, device="cpu")
    assert capsys.readouterr() == ("", "")
    assert isinstance(tuned, TuneCacheResult) and isinstance(binned, FreqBinsResult)
    cli = _cli_json("tune-cache", runs["groc"], "--data", runs["unseen"], "--thetas", "0,0.5", "--lambdas",
                    "0.8,0.9", "--new-word-weights", "0.5,1", "--out", tmp_path / "cli.png", "--device", "cpu")
    assert cli == {**tuned.to_dict(), "png": str(tmp_path / "cli.png")}
    assert (tmp_path / "py.png").read_bytes()[:4] == b"\x89PNG"
    cli = _cli_json("analyze", "freq-bins", runs["groc"], runs["tied"], "--data", runs["other"], "--out",
                    tmp_path / "cli-fb.png", "--bin-width", "5", "--bins", "3", "--device", "cpu")
    assert cli == {**binned.to_dict(), "png": str(tmp_path / "cli-fb.png"), "json": str(tmp_path / "cli-fb.json")}
    assert json.loads((tmp_path / "fb.json").read_text(encoding="utf-8")) == binned.to_dict()
    # Without a figure nothing is written.
    plain = tune_cache(run=runs["lookup"], data=runs["unseen"], cache="unigram", lambdas=[0.9], plot=False,
                       device="cpu")
    assert plain.png is None and "png" not in plain.to_dict()
    assert not (runs["lookup"] / "tune-cache-unigram.png").exists()


def test_outputs_are_refused_before_any_work(runs: dict[str, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from groc_base.errors import InputError
    from polyglot_groc.model import bundle as bundle_mod

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded before the output was checked")

    monkeypatch.setattr(bundle_mod, "load_bundle", no_model)
    (tmp_path / "taken.png").write_bytes(b"x")
    (tmp_path / "taken.vec").write_text("x", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "W.npy").write_bytes(b"x")
    with pytest.raises(InputError, match="already exists"):
        tune_cache(run=runs["groc"], data=runs["unseen"], out=tmp_path / "taken.png")
    with pytest.raises(InputError, match="already exists"):
        freq_bins(run_a=runs["groc"], run_b=runs["tied"], data=runs["other"], out=tmp_path / "taken.png")
    with pytest.raises(InputError, match="does not end in .png"):
        freq_bins(run_a=runs["groc"], run_b=runs["tied"], data=runs["other"], out=tmp_path / "fig.json")
    with pytest.raises(InputError, match="already exists"):
        export(run=runs["groc"], lang="en", vocab=True, out=tmp_path / "taken.vec")
    with pytest.raises(InputError, match="not empty"):
        align(run=runs["groc"], src_lang="en", tgt_lang="en", dictionary_mode="identical", out=tmp_path / "full")
    with pytest.raises(InputError, match="already exists"):
        curves(runs=[runs["groc"]], out=tmp_path / "taken.png")


def test_curves_from_python_is_the_command(runs: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], quiet_root_logger: None) -> None:
    drawn = curves(runs=[runs["groc"], runs["tied"]], out=tmp_path / "py-curves.png")
    assert capsys.readouterr() == ("", "")
    assert isinstance(drawn, CurvesResult)
    cli = _cli_json("analyze", "curves", runs["groc"], runs["tied"], "--out", tmp_path / "cli-curves.png")
    assert cli == {**drawn.to_dict(), "png": str(tmp_path / "cli-curves.png")}


def test_export_align_similarity_from_python_are_the_commands(
        runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet_root_logger: None) -> None:
    words = tmp_path / "words.txt"
    words.write_text("cat\nzebra\nriver\n", encoding="utf-8")
    sim = tmp_path / "EN_tiny.txt"
    sim.write_text("cat dog 8\ncat river 2\nold dog 3\nzebra cat 7\nriver dog 1\n", encoding="utf-8")
    exported = export(run=runs["groc"], lang="en", words=words, out=tmp_path / "py.vec", side="output", device="cpu")
    listed = export(run=runs["lookup"], lang="en", words=["cat", "zebra"], out=tmp_path / "list.vec", device="cpu")
    aligned = align(run=runs["groc"], src_lang="en", tgt_lang="en", dictionary_mode="identical", refine=1,
                    eval_dict=None, out=tmp_path / "py-align", device="cpu")
    scored = similarity(datasets=[sim], run=runs["groc"], lang="en", device="cpu")
    assert capsys.readouterr() == ("", "")
    assert isinstance(exported, ExportResult) and isinstance(aligned, AlignResult)
    assert isinstance(scored, WordSimilarityResult)
    assert exported.composed_unseen == 1 and listed.missing == 1 and listed.missing_examples == ["zebra"]

    cli = _cli_json("export", runs["groc"], "--lang", "en", "--words", words, "--out", tmp_path / "cli.vec",
                    "--side", "output", "--device", "cpu")
    assert cli == {**exported.to_dict(), "out": str(tmp_path / "cli.vec")}
    assert (tmp_path / "cli.vec").read_bytes() == (tmp_path / "py.vec").read_bytes()
    cli = _cli_json("align", "--run", runs["groc"], "--src-lang", "en", "--tgt-lang", "en", "--dictionary-mode",
                    "identical", "--refine", "1", "--out", tmp_path / "cli-align", "--device", "cpu")
    assert cli == aligned.to_dict()
    assert json.loads((tmp_path / "py-align" / "result.json").read_text(encoding="utf-8")) == cli
    assert np.array_equal(np.load(tmp_path / "py-align" / "W.npy"), np.load(tmp_path / "cli-align" / "W.npy"))
    assert aligned.W.shape == (16, 16) and len(aligned.source_words) == aligned.src_words
    assert _cli_json("similarity", "--dataset", sim, "--run", runs["groc"], "--lang", "en",
                     "--device", "cpu") == scored.to_dict()
    assert "all_pairs_composed" in scored.datasets["EN_tiny.txt"]


def test_align_and_similarity_take_vectors_in_memory(runs: dict[str, Path], tmp_path: Path) -> None:
    from eval.vectors import write_vec
    from polyglot_groc.analysis.export import vocabulary_vectors
    from polyglot_groc.model.bundle import load_bundle

    bundle, _ = load_bundle(runs["groc"], device="cpu")
    vocab = vocabulary_vectors(bundle, "en")
    write_vec(tmp_path / "en.vec", vocab.words, vocab.vectors)
    in_memory = align(src=vocab, tgt=vocab, dictionary_mode="identical", refine=0)
    from_files = align(src=tmp_path / "en.vec", tgt=tmp_path / "en.vec", dictionary_mode="identical", refine=0)
    from_run = align(run=bundle, src_lang="en", tgt_lang="en", dictionary_mode="identical", refine=0)
    assert (from_run.src_lang, from_run.tgt_lang, from_run.side) == ("en", "en", "input")  # where it came from
    assert in_memory.to_dict() == from_files.to_dict() == {**from_run.to_dict(), "src_lang": None,
                                                           "tgt_lang": None, "side": None}
    sim = tmp_path / "s.txt"
    sim.write_text("cat dog 8\ncat river 2\nold dog 3\n", encoding="utf-8")
    assert (similarity(datasets=[sim], vectors=vocab).datasets
            == similarity(datasets=[sim], vectors=tmp_path / "en.vec").datasets)
    given = similarity(datasets=[sim], run=bundle, lang="en", vectors=vocab)
    assert given.to_dict() == {**similarity(datasets=[sim], run=runs["groc"], lang="en", device="cpu").to_dict(),
                               "run": None}


def test_lexicon_coverage_from_python_is_the_command(runs: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                                     quiet_root_logger: None) -> None:
    res = lexicon_coverage(data=runs["data"], langs=["en"], backend="tsv", tsv=LEXICON_TSV)
    assert capsys.readouterr() == ("", "")
    assert isinstance(res, LexiconCoverageResult) and res.coverage[0]["lang"] == "en"
    assert 0 < res.coverage[0]["entry_pct"] <= 100
    cli = _cli_json("lexicon", "coverage", "--data", runs["data"], "--langs", "en", "--backend", "tsv", "--tsv",
                    LEXICON_TSV, "--json")

    def timeless(d: dict) -> dict:
        return {**d, "coverage": [{k: v for k, v in row.items() if k != "seconds"} for row in d["coverage"]]}

    assert timeless(cli) == timeless(res.to_dict())
