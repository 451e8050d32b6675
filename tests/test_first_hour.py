"""Issue 38, "the first hour": defaults that lose work or hide what happened, each sample with its kind.

Wall-clock checkpoints and a time left that honours ``max_minutes``; ``evaluate`` saying how many
scored words training never saw; ``prepare_language`` cleaning what downloaded text carries;
built-in languages by their ISO 639-3/639-2 codes and names; one specifier for one wordnet file;
options named per face (keywords from Python, flags from the command line); whole specifiers in
``lexicon info``; ``features`` saying what its zero columns are; ``train --help`` listing every kind.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from groc_base.checks import cli_face, option, setting
from groc_base.errors import InputError, UnknownLanguageError
from polyglot_groc.cli import app
from tests.conftest import SMALL_OVERRIDES, TINY, small_run_config

runner = CliRunner()


# -- options named per face ------------------------------------------------------------------------

def test_an_option_is_named_as_the_user_gives_it() -> None:
    assert (option("max_vocab"), option("knn", "fast"), option("overwrite", True)) == (
        "max_vocab", "knn='fast'", "overwrite=True")
    assert setting("data.vocab_mode", "open") == "overrides={'data.vocab_mode': 'open'}"
    with cli_face():
        assert (option("max_vocab"), option("knn", "fast"), option("overwrite", True), option("screen", False)) == (
            "--max-vocab", "--knn fast", "--overwrite", "--no-screen")
        assert setting("data.vocab_mode", "open") == "--vocab-mode open"
        assert setting("train.lr", 0.001) == "--set train.lr=0.001"


def test_python_errors_name_keywords_and_the_cli_names_flags(tmp_path: Path) -> None:
    import polyglot_groc as pg

    with pytest.raises(InputError) as py:
        pg.align(src=tmp_path / "missing.vec", tgt=tmp_path / "t.vec", train_dict=tmp_path / "d.txt", knn="fast")
    assert "knn='fast' is unknown" in str(py.value) and "--" not in str(py.value)
    with pytest.raises(InputError) as py_file:
        pg.align(src=tmp_path / "missing.vec", tgt=tmp_path / "t.vec", train_dict=tmp_path / "d.txt")
    assert str(py_file.value).startswith("src ") and "--src" not in str(py_file.value)
    with pytest.raises(InputError, match="already exists and holds other files; choose another out, or pass "
                                         "overwrite=True") as taken:
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "x").write_text("x")
        pg.train(out=tmp_path / "run", langs="en", data=TINY, overrides=SMALL_OVERRIDES, max_steps=1)
    assert "--" not in str(taken.value)
    cli = runner.invoke(app, ["align", "--src", str(tmp_path / "missing.vec"), "--tgt", "t.vec", "--knn", "fast"])
    assert cli.exit_code == 2 and "--knn fast is unknown" in cli.stderr


# -- languages by any of their names ---------------------------------------------------------------

def test_built_in_languages_by_iso_639_3_and_639_2_codes_and_names() -> None:
    from langpairs.registry import default_registry, parse_lang_spec

    reg = default_registry()
    assert parse_lang_spec("tgl,Tagalog,fre,ger", registry=reg) == ("tl", "fr", "de")
    assert parse_lang_spec("tl", "eng", registry=reg) == ("tl", "en")
    with pytest.raises(UnknownLanguageError, match=r"did you mean 'tl' \(Tagalog, ISO 639-3 tgl\)"):
        parse_lang_spec("tagalgo", registry=reg)
    with pytest.raises(UnknownLanguageError, match="did you mean 'tl'"):
        reg.get("tgl")  # the strict lookup suggests; parsing user input resolves


def test_lexicon_import_and_data_prepare_take_names_and_iso_codes(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's --langs of `lexicon import` and `data prepare` resolve as train's do; an unknown name
    without a languages file is left to the shared data's own message (what it has)."""
    import lexicons.omw_import
    from polyglot_groc.commands._common import language_codes

    assert language_codes("Tagalog, tgl,fre,en") == ["tl", "fr", "en"]
    assert language_codes("Klingon") == ["klingon"]
    asked: list[list[str]] = []
    monkeypatch.setattr(lexicons.omw_import, "import_omw",
                        lambda data, langs, wn_dir, force=False: asked.append(list(langs)) or [])
    res = runner.invoke(app, ["lexicon", "import", "--langs", "Tagalog,ukr", "--wn-dir", str(tmp_path / "wn")])
    assert res.exit_code == 0, res.output
    assert asked == [["tl", "uk"]]


# -- prepare_language: Leipzig ids, markup, header lines ----------------------------------------------

def test_prepare_language_strips_leipzig_ids_and_reports_markup(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    import polyglot_groc as pg

    leipzig = tmp_path / "eng_news_2020_10K-sentences.txt"
    leipzig.write_text("".join(f"{i}\t{i * 10} years of the war ended here .\n" for i in range(1, 41)),
                       encoding="utf-8")
    prep = pg.prepare_language(lang="en", inputs=[leipzig], out=tmp_path / "c")
    train = (tmp_path / "c" / "en" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert train[0] == "10 years of the war ended here ."  # the id is gone, the sentence's own number stays
    assert prep.to_dict()["inputs"][0]["cleaning"] == {"removed": {"ids": 40}, "kept": {}}

    html = tmp_path / "scraped.txt"
    html.write_text("Title: Ang Aklat\n\n" + "".join(f"<b>{i}</b> Ang bata ay &quot;masaya&quot; .\n"
                                                      for i in range(40)), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        kept = pg.prepare_language(lang="tl", inputs=[html], out=tmp_path / "c")
    assert ("holds 1 metadata header lines (e.g. 'Title: Ang Aklat'); 160 HTML/XML tags or entities (e.g. '<b>'), "
            "kept as text; remove them with clean='ids,markup,headers'") in caplog.text  # the keyword, from Python
    assert kept.to_dict()["inputs"][0]["cleaning"]["kept"] == {"headers": 1, "markup": 160}
    cleaned = pg.prepare_language(lang="tl", inputs=[html], out=tmp_path / "c", clean="all", overwrite=True)
    text = (tmp_path / "c" / "tl" / "train.txt").read_text(encoding="utf-8")
    assert "<b>" not in text and "&quot;" not in text and "Title" not in text and '"' in text
    assert cleaned.to_dict()["clean"] == ["ids", "markup", "headers"]
    with pytest.raises(InputError, match="clean='html': 'html' is unknown"):
        pg.prepare_language(lang="tl", inputs=[html], out=tmp_path / "c", clean="html", overwrite=True)


# -- wordnets: one specifier per file; whole specifiers ------------------------------------------------

def test_a_wiktionary_tab_file_has_the_same_id_from_a_path_and_from_the_data_bundle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lexicons.omw_import import _find_tab, lexicon_id, tab_source
    from lexicons.user_import import import_wordnet_file

    root = tmp_path / "data"
    (root / "omw" / "wikt").mkdir(parents=True)
    tab = root / "omw" / "wikt" / "wn-wikt-tgl.tab"
    tab.write_text("# Wiktionary Tagalog\ttgl\thttp://example.org\tCC BY-SA\n00007846-n\ttgl:lemma\ttao\n",
                   encoding="utf-8")
    ili = root / "omw" / "ili-map-pwn30.tab"
    ili.write_text("i35562\t00007846-n\n", encoding="utf-8")
    _, source = _find_tab(root, "tl")  # what `lexicon import --langs tl` picks in the data bundle
    got = import_wordnet_file(path=tab, wn_dir=tmp_path / "wn", ili_map=ili)  # the same file by its path
    assert got.specs[0].split(":")[0] == lexicon_id("tl", source) == lexicon_id("tl", tab_source(tab)) == "wikt-tl"

    import io

    from rich.console import Console

    import polyglot_groc.commands.lexicon as lexicon_cli

    narrow = Console(width=40, file=io.StringIO())
    monkeypatch.setattr(lexicon_cli, "console", narrow)
    res = runner.invoke(app, ["lexicon", "info", "--wn-dir", str(tmp_path / "wn")])
    assert res.exit_code == 0, res.output
    assert got.specs[0] in narrow.file.getvalue()  # type: ignore[attr-defined]  # whole, however narrow the terminal


# -- training: wall-clock checkpoints, the time left -------------------------------------------------------

def test_wall_clock_checkpoints_keep_work_without_changing_the_run(tmp_path: Path) -> None:
    """With checkpoint_minutes tiny a checkpoint is due after every step (spaced only by nine times the
    last validation's duration): each validates and saves last.pt between the schedule's evaluations,
    and the trained weights are those of a run without them."""
    from polyglot_groc.training.trainer import Trainer

    base = {"train.max_steps": 6, "train.eval_every": 0, "train.max_epochs": 5}
    timed = Trainer(small_run_config(extra={**base, "train.checkpoint_minutes": 1e-9}), tmp_path / "timed")
    timed.fit()
    plain = Trainer(small_run_config(extra={**base, "train.checkpoint_minutes": 0.0}), tmp_path / "plain")
    plain.fit()
    records = [json.loads(line) for line in (tmp_path / "timed" / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["step"] == 1 and not records[0]["scheduled"]  # the first due at once here
    assert len((tmp_path / "plain" / "metrics.jsonl").read_text().splitlines()) < len(records)
    for (name, a), (_, b) in zip(timed.model.state_dict().items(), plain.model.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, msg=name)


def test_the_time_left_honours_max_minutes() -> None:
    from polyglot_groc.training.progress import eta_seconds, format_eta

    # 100 steps in 60 s, 10000 to go: 100 minutes by the steps, 4 by a 5-minute limit
    assert eta_seconds(100, 10_100, 0, 60.0, max_minutes=5) == pytest.approx(240.0)
    assert eta_seconds(100, 10_100, 0, 60.0) == pytest.approx(6000.0)
    assert eta_seconds(0, 100, 0, 0.0) is None and format_eta(None) == "?" and format_eta(3725) == "1:02:05"
    assert eta_seconds(50, None, 40, 60.0, max_minutes=2) == pytest.approx(60.0)  # resumed at 40, no step budget


# -- evaluate: what a closed vocabulary hides -------------------------------------------------------------

def test_evaluate_reports_test_words_training_never_saw(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import polyglot_groc as pg

    data = tmp_path / "corpus"
    (data / "en").mkdir(parents=True)
    for split in ("train", "valid"):
        (data / "en" / f"{split}.txt").write_text((TINY / "en" / f"{split}.txt").read_text(encoding="utf-8"))
    # the tiny test split plus two lines of words training never saw: a closed vocabulary holds them
    test_text = (TINY / "en" / "test.txt").read_text(encoding="utf-8") + "zebras juggle quietly .\nthe zebras sleep .\n"
    (data / "en" / "test.txt").write_text(test_text, encoding="utf-8")
    pg.train(out=tmp_path / "run", langs="en", data=data, overrides=SMALL_OVERRIDES, max_steps=2)
    train = set((data / "en" / "train.txt").read_text(encoding="utf-8").split())
    lines = [line.split() for line in test_text.splitlines() if line.split()]
    tokens = [w for line in lines for w in [*line, "<eos>"]]  # <eos> ends every line, and training saw it
    expected = float(np.mean([w not in train and w != "<eos>" for w in tokens]))
    with caplog.at_level(logging.WARNING):
        inside_json = pg.evaluate(run=tmp_path / "run", split="test").to_dict()
        other_json = pg.evaluate(run=tmp_path / "run", data=data, split="test").to_dict()
        inside, other = inside_json["details"]["en"], other_json["languages"]["en"]
    for said in (inside_json, other_json):  # an evaluation says it is exact (a sampled training loss is not)
        assert said["scoring"].startswith("exact: the full softmax over each language's own vocabulary")
    for res in (inside, other):
        assert res["oov_rate"] == 0.0  # the closed vocabulary holds the test words ...
        assert expected > 0.0 and res["unseen_in_training_rate"] == pytest.approx(expected)  # ... training never saw
        assert "overrides={'data.vocab_mode': 'open'}" in res["note"]
    assert "never occur in the run's training text" in caplog.text
    assert caplog.records[-1].getMessage().endswith("train with overrides={'data.vocab_mode': 'open'}")
    # The command line's warning speaks its own face (the JSON's note keeps both spellings).
    res = runner.invoke(app, ["evaluate", str(tmp_path / "run"), "--split", "test"])
    assert res.exit_code == 0, res.output
    warning = next(line for line in res.stderr.splitlines() if "never occur" in line)
    assert warning.endswith("train with --vocab-mode open") and "overrides=" not in warning


# -- help and warnings ----------------------------------------------------------------------------------

def test_train_help_lists_every_model_kind() -> None:
    from polyglot_groc.config import MODEL_KINDS

    res = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "400"})
    assert all(kind in res.stdout for kind in MODEL_KINDS), res.stdout


def test_a_bilm_prefix_runs_without_torchs_projection_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch warns (once a process) that oneDNN lacks LSTMs with projections: the prefix silences that
    warning around its own LSTM calls. The LSTM is made to warn on every call here, so the check does
    not depend on whether this process has warned already."""
    import warnings

    from polyglot_groc.config import PrefixConfig
    from polyglot_groc.model.prefix import LSTMPrefix

    real = torch.nn.LSTM.forward

    def warning_forward(self: torch.nn.LSTM, *args: object, **kwargs: object) -> object:
        warnings.warn("LSTM with projections is not supported with oneDNN. Using default implementation.",
                      UserWarning, stacklevel=2)
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.nn.LSTM, "forward", warning_forward)
    prefix = LSTMPrefix(PrefixConfig(hidden=12, n_layers=2), 4, project=True)
    state = [(torch.zeros(1, 2, 4), torch.zeros(1, 2, 12)) for _ in range(2)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs, _ = prefix.layer_outputs(torch.zeros(2, 3, 4), state)
        prefix.layers[0](torch.zeros(2, 3, 4))  # outside the prefix's own calls it still warns
    assert len(outs) == 2 and [str(w.message)[:28] for w in caught] == ["LSTM with projections is not"]
