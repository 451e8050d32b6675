"""What a run directory records, so that commands run later (anywhere, any environment) see the same run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from polyglot_groc.model.bundle import load_bundle
from tests.conftest import SMALL, TINY

runner = CliRunner()


def _sets(*extra: str) -> list[str]:
    return [arg for s in (*SMALL, *extra) for arg in ("--set", s)]


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


def test_relative_paths_are_stored_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config and --set paths, relative to where train ran, still work from another directory."""
    work = tmp_path / "work"
    shutil.copytree(TINY, work / "corpus")
    (work / "vec.txt").write_text("2 16\nthe " + " ".join(["0.1"] * 16) + "\n. " + " ".join(["0.2"] * 16) + "\n",
                                  encoding="utf-8")
    (work / "c.toml").write_text('[data]\nroot = "corpus"\n', encoding="utf-8")
    monkeypatch.chdir(work)
    res = runner.invoke(app, ["train", "--langs", "en", "--config", "c.toml", "--out", "runs/a", "--max-steps", "1",
                              *_sets('model.init_input="vec.txt"'), "--model", "untied"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["train", "--langs", "en", "--out", "runs/b", "--max-steps", "1",
                              *_sets('data.root="corpus"')])
    assert res.exit_code == 0, res.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("a", "b"):
        run = work / "runs" / name
        cfg = load_config(run / "config.toml")
        assert cfg.data.root == str(work / "corpus")
        assert load_bundle(run)[0].cfg.data.root == str(work / "corpus")  # the checkpoint's config too
        ev = runner.invoke(app, ["evaluate", str(run)])
        assert ev.exit_code == 0, ev.output
        assert _json(ev)["perplexity"]["en"] > 1
    assert load_config(work / "runs" / "a" / "config.toml").model.init_input == str(work / "vec.txt")
    assert json.loads((work / "runs" / "a" / "result.json").read_text())["run_dir"] == str(work / "runs" / "a")


# --------------------------------------------------------------------------- groc-lex: the run's lexicon

TRAIN_TEXT = "the dog chases the wolf .\na puppy is a young dog .\nthe dog sees a puppy .\n" * 3
#: Words the training text lacks, with lexicon entries: their forms come from the lexicon at evaluation.
OTHER_TEXT = "the hound sees the canine .\nthe cat sees the goose .\na dog chases a cat .\n" * 2


def _corpus(root: Path, text: str) -> Path:
    (root / "en").mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (root / "en" / f"{split}.txt").write_text(text, encoding="utf-8")
    return root


def _other_wordnet(folder: Path) -> Path:
    """Another version of the English test wordnet, with other glosses and no hyponyms: what the
    environment's default wordnet folder might hold."""
    from tests.conftest import MINI_ILI, MINI_LMF, install_wordnets

    xml = MINI_LMF.read_text(encoding="utf-8")
    head, tail = xml.split('<Lexicon id="test-fr"', 1)
    head = head.replace('version="1">', 'version="2">', 1).replace('relType="hyponym"', 'relType="also"')
    for gloss in ("feline mammal usually having thick soft fur", "any of several breeds of dog used for hunting",
                  "web-footed long-necked typically gregarious migratory aquatic birds"):
        head = head.replace(gloss, "a puppy that chases the wolf")
    lmf = folder.parent / f"{folder.name}.xml"
    lmf.write_text(head + '<Lexicon id="test-fr"' + tail, encoding="utf-8")
    return install_wordnets(folder, MINI_ILI, lmf)


@pytest.fixture
def lex_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    from tests.conftest import MINI_ILI, MINI_LMF, install_wordnets

    wn_a = install_wordnets(tmp_path / "wn-a", MINI_ILI, MINI_LMF)
    paths = {"wn_a": wn_a, "wn_b": _other_wordnet(tmp_path / "wn-b"), "empty": tmp_path / "wn-empty",
             "data": _corpus(tmp_path / "data", TRAIN_TEXT), "other": _corpus(tmp_path / "other", OTHER_TEXT),
             "run": tmp_path / "run"}
    paths["empty"].mkdir()
    monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(wn_a))  # the lexicon is chosen by the environment
    res = runner.invoke(app, ["train", "--model", "groc-lex", "--langs", "en", "--data", str(paths["data"]),
                              "--out", str(paths["run"]), "--max-steps", "3",
                              *_sets("train.batch_size=2", "train.bptt=4", "train.eval_batch_size=1")])
    assert res.exit_code == 0, res.output
    return paths


def _open_ppl(run: Path, other: Path, *extra: str) -> float:
    res = runner.invoke(app, ["evaluate", str(run), "--data", str(other), *extra])
    assert res.exit_code == 0, res.output
    return float(_json(res)["languages"]["en"]["perplexity"])


def test_groc_lex_run_records_its_lexicon(lex_setup: dict[str, Path]) -> None:
    run = lex_setup["run"]
    lex = load_config(run / "config.toml").model.lexicon
    assert lex.wn_dir == str(lex_setup["wn_a"].resolve())
    assert lex.specs == ("test-en:1",) and lex.gloss_specs == ("test-en:1",)  # as resolved: id:version
    assert load_bundle(run)[0].cfg.model.lexicon == lex  # the checkpoint's config too
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    assert result["lexicon"]["specs"] == ["test-en:1"] and result["lexicon"]["settings"]["backend"] == "wn"


def test_groc_lex_evaluation_ignores_the_environment(lex_setup: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """New words get their forms from the recorded lexicon, whatever POLYGLOT_GROC_WN_DIR says."""
    run, other = lex_setup["run"], lex_setup["other"]
    ppl = {}
    for env in ("wn_a", "wn_b", "empty"):
        monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(lex_setup[env]))
        ppl[env] = _open_ppl(run, other)
    assert ppl["wn_a"] == ppl["wn_b"] == ppl["empty"]
    assert not [r for r in caplog.records if r.levelname == "WARNING" and "lexicon" in r.getMessage()]
    # export composes unseen words with the same forms
    monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(lex_setup["wn_b"]))
    words = other / "words.txt"
    words.write_text("hound\ncat\ngoose\n", encoding="utf-8")
    vecs = []
    for env in ("wn_a", "wn_b"):
        monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(lex_setup[env]))
        out = other / f"{env}.vec"
        res = runner.invoke(app, ["export", str(run), "--lang", "en", "--words", str(words), "--out", str(out)])
        assert res.exit_code == 0, res.output
        vecs.append(out.read_text(encoding="utf-8"))
    assert vecs[0] == vecs[1]


def test_groc_lex_missing_or_changed_lexicon_is_reported(lex_setup: dict[str, Path],
                                                         caplog: pytest.LogCaptureFixture) -> None:
    run, other, wn_a = lex_setup["run"], lex_setup["other"], lex_setup["wn_a"]
    with_lexicon = _open_ppl(run, other)
    moved = wn_a.with_name("wn-a-moved")
    wn_a.rename(moved)
    caplog.clear()
    without = _open_ppl(run, other)
    assert without != with_lexicon  # new words lose their forms: said loudly, naming the recorded folder
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("unavailable" in w and str(wn_a.resolve()) in w for w in warnings), warnings
    # Recompiling every word's forms (--lexicon-coverage) cannot do without it: exit 2, one line.
    res = runner.invoke(app, ["evaluate", str(run), "--lexicon-coverage", "0.5"])
    assert res.exit_code == 2 and str(wn_a.resolve()) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    # Another version installed where the run's was: reported as missing, not silently used.
    shutil.copytree(lex_setup["wn_b"], wn_a)
    caplog.clear()
    assert _open_ppl(run, other) == without
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("test-en:1" in w and "unavailable" in w for w in warnings), warnings
    # The recorded one back: the numbers are the run's again.
    shutil.rmtree(wn_a)
    moved.rename(wn_a)
    assert _open_ppl(run, other) == with_lexicon


def test_edited_tsv_lexicon_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.test_lexforms import TSV

    tsv = tmp_path / "lex.tsv"
    shutil.copyfile(TSV, tsv)
    data, other = _corpus(tmp_path / "data", TRAIN_TEXT), _corpus(tmp_path / "other", OTHER_TEXT)
    run = tmp_path / "run"
    sets = _sets('model.lexicon.backend="tsv"', f'model.lexicon.tsv_path="{tsv}"', "train.batch_size=2",
                 "train.bptt=4", "train.eval_batch_size=1")
    res = runner.invoke(app, ["train", "--model", "groc-lex", "--langs", "en", "--data", str(data), "--out", str(run),
                              "--max-steps", "2", *sets])
    assert res.exit_code == 0, res.output
    assert load_config(run / "config.toml").model.lexicon.tsv_path == str(tsv.resolve())
    caplog.clear()
    _open_ppl(run, other)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    with tsv.open("a", encoding="utf-8") as fh:
        fh.write("en\tgoose\trelated\tgander|wolf\n")
    _open_ppl(run, other)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("differs" in w and "tsv:lex.tsv@" in w for w in warnings), warnings


def test_old_run_without_recorded_lexicon_says_so(lex_setup: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A run from before runs recorded their lexicon still evaluates, with the environment's, and says so."""
    from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint

    run = lex_setup["run"]
    payload = load_checkpoint(run / "best.pt")
    lex = payload["bundle"]["config"]["model"]["lexicon"]
    lex.update(specs=[], wn_dir="", gloss_specs=[])
    del payload["bundle"]["lexicon_info"]["settings"]
    save_checkpoint(run / "best.pt", {k: v for k, v in payload.items() if k != "format_version"})
    monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(lex_setup["wn_b"]))
    caplog.clear()
    _open_ppl(run, lex_setup["other"])
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("did not record its wordnet folder" in w and str(lex_setup["wn_b"]) in w for w in warnings), warnings
    assert any("differs" in w and "test-en:1" in w and "test-en:2" in w for w in warnings), warnings


def test_forms_cache_never_serves_another_folders_wordnet(tmp_path: Path) -> None:
    """Two folders with the same lexicon id:version but other content: each compiles its own forms."""
    from polyglot_groc.config import LexiconConfig
    from polyglot_groc.model.lexforms import compile_forms
    from polyglot_groc.model.vocab import Vocab
    from tests.conftest import MINI_ILI, MINI_LMF, install_wordnets

    same_version = tmp_path / "b.xml"
    same_version.write_text(MINI_LMF.read_text(encoding="utf-8").replace("a young dog", "a small wolf"),
                            encoding="utf-8")
    a = install_wordnets(tmp_path / "a", MINI_ILI, MINI_LMF)
    b = install_wordnets(tmp_path / "b", MINI_ILI, same_version)
    from collections import Counter

    vocab = Vocab.build({"en": Counter(["puppy", "dog", "small", "young", "wolf"])})
    out = {}
    for name, folder in (("a", a), ("b", b), ("a again", a)):
        compiled = compile_forms(LexiconConfig(specs=("test-en",), wn_dir=str(folder)), vocab, tmp_path / "cache")
        assert compiled.config.specs == ("test-en:1",) and compiled.config.wn_dir == str(folder.resolve())
        puppy = vocab.id("puppy")
        out[name] = compiled.forms.definition_ids[puppy][compiled.forms.definition_mask[puppy]].tolist()
    assert out["a"] == out["a again"] != out["b"]
