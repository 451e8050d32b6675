"""A run scored directly (``align --run``, ``similarity --run``) and through its export (``export --vocab``,
then ``align --src/--tgt`` / ``similarity --vectors``) gives the same words and the same numbers.

Both routes apply MUSE's vocabulary rule: lowercase, the first (most frequent) casing wins,
``--max-vocab`` counts distinct words; ``--keep-case`` keeps every casing on both routes.  The
corpus here has casing variants ranked both ways (``The`` above ``the``, ``paris`` above
``Paris``), which the direct route used to keep as separate rows while reporting
``"lowercased": true``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import first_occurrences, read_vec
from polyglot_groc.analysis.export import vocabulary_vectors, vocabulary_words
from polyglot_groc.cli import app
from polyglot_groc.model.bundle import load_bundle
from tests.conftest import SMALL

runner = CliRunner()

# (word, weight): casing variants in both frequency orders, shared names, plain words.
EN = [("The", 9), ("the", 6), ("cat", 5), ("Cat", 2), ("dog", 5), ("DOG", 1), ("house", 4), ("House", 3),
      ("paris", 4), ("Paris", 2), ("river", 3), ("big", 3), ("small", 3), ("sees", 4), ("likes", 4), ("a", 5)]
FR = [("Le", 8), ("le", 7), ("chat", 5), ("Chat", 3), ("chien", 5), ("CHIEN", 1), ("maison", 4), ("Maison", 2),
      ("Paris", 4), ("paris", 3), ("rivière", 3), ("grand", 3), ("petit", 3), ("voit", 4), ("aime", 4), ("un", 5)]
PAIRS = [("the", "le"), ("cat", "chat"), ("dog", "chien"), ("house", "maison"), ("paris", "paris"),
         ("river", "rivière"), ("big", "grand"), ("small", "petit"), ("sees", "voit"), ("likes", "aime"),
         ("a", "un")]


def _corpus(root: Path) -> Path:
    rng = random.Random(0)
    for lang, table in (("en", EN), ("fr", FR)):
        words, weights = zip(*table, strict=True)
        (root / lang).mkdir(parents=True)
        for split, n in (("train", 80), ("valid", 10), ("test", 10)):
            lines = [" ".join(rng.choices(words, weights, k=7)) + " ." for _ in range(n)]
            (root / lang / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def cased(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cased")
    data = _corpus(root / "data")
    sets = [x for s in SMALL for x in ("--set", s)]
    runs = {}
    for kind in ("groc", "lookup"):
        res = runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(data), "--out", str(root / kind),
                                  "--max-steps", "2", "--model", kind, "--seed", "3", *sets])
        assert res.exit_code == 0, res.output
        runs[kind] = root / kind
    (root / "train.txt").write_text("".join(f"{a} {b}\n" for a, b in PAIRS[:6]), encoding="utf-8")
    (root / "eval.txt").write_text("".join(f"{a}\t{b}\n" for a, b in PAIRS), encoding="utf-8")
    runs["root"] = root
    return runs


def _drop_no_mapping_csls(node: object) -> int:
    """Remove every no-mapping csls entry from a result; how many there were."""
    count = 0
    if isinstance(node, dict):
        nomap = node.get("no_mapping")
        if isinstance(nomap, dict) and "csls" in nomap:
            del nomap["csls"]
            count += 1
        count += sum(_drop_no_mapping_csls(v) for v in node.values())
    return count


def _result(out: Path) -> dict:
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    for section in ("train_dictionary", "eval_dictionary"):
        result.get(section, {}).pop("path", None)
    return result


@pytest.mark.parametrize("kind", ["groc", "lookup"])
@pytest.mark.parametrize("extra", [[], ["--max-vocab", "6"], ["--keep-case"], ["--keep-case", "--max-vocab", "9"],
                                   ["--side", "output", "--max-vocab", "11"]])
def test_align_run_equals_align_of_the_export(cased: dict[str, Path], tmp_path: Path, kind: str,
                                              extra: list[str]) -> None:
    root, run = cased["root"], cased[kind]
    side = extra[extra.index("--side") + 1] if "--side" in extra else "input"
    for lang in ("en", "fr"):
        res = runner.invoke(app, ["export", str(run), "--lang", lang, "--vocab", "--side", side,
                                  "--out", str(tmp_path / f"{lang}.vec")])
        assert res.exit_code == 0, res.output
    # the test pairs include the training pairs: both routes must agree, honest P@k is not the point here
    common = ["--train-dict", str(root / "train.txt"), "--eval-dict", str(root / "eval.txt"), "--refine", "2",
              "--dico-max-rank", "20", "--allow-dictionary-overlap"]
    direct = runner.invoke(app, ["align", "--run", str(run), "--src-lang", "en", "--tgt-lang", "fr", *common,
                                 *extra, "--out", str(tmp_path / "direct")])
    assert direct.exit_code == 0, direct.output
    file_extra = [x for x in extra if x not in ("--side", "output")]
    exported = runner.invoke(app, ["align", "--src", str(tmp_path / "en.vec"), "--tgt", str(tmp_path / "fr.vec"),
                                   *common, *file_extra, "--out", str(tmp_path / "exported")])
    assert exported.exit_code == 0, exported.output
    a, b = _result(tmp_path / "direct"), _result(tmp_path / "exported")
    assert a["lowercased"] is ("--keep-case" not in extra)
    # Only the run can compose the test words its vocabulary lacks: that figure is the run's own.
    composed = a["protocols"].pop("composed")
    assert "composed" not in b["protocols"] and composed["n_queries"] == a["protocols"]["fasttext"]["n_queries"]
    # Where the vectors came from: the run's languages and side, or files (apply_alignment reads it).
    assert [a.pop(k) for k in ("src_lang", "tgt_lang", "side")] == ["en", "fr", side]
    assert [b.pop(k) for k in ("src_lang", "tgt_lang", "side")] == [None, None, None]
    # Both sides from one run share its encoder: the no-mapping baseline is then also scored by csls
    # (files get nn only; a csls search over the vocabulary costs as much as the model's).
    assert _drop_no_mapping_csls(a) == 6 and _drop_no_mapping_csls(b) == 0  # MUSE and fastText: all and 2 halves
    assert a == b  # words, dictionaries found, history, P@k with nn and csls, baselines: all of it
    for name in ("src.aligned.vec", "tgt.vec"):
        wa, va = read_vec(tmp_path / "direct" / name)
        wb, vb = read_vec(tmp_path / "exported" / name)
        assert wa == wb
        np.testing.assert_array_equal(va, vb)
    words = read_vec(tmp_path / "direct" / "src.aligned.vec")[0]
    if "--keep-case" in extra:
        assert "The" in words and words.index("The") < words.index("the")
    else:
        assert words == [w for w in dict.fromkeys(w.lower() for w in words)] and "The" not in words
    if "--max-vocab" in extra:
        assert len(words) == int(extra[extra.index("--max-vocab") + 1])


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("max_vocab", [None, 1, 5, 12])
def test_vocabulary_vectors_is_read_vec_of_the_export(cased: dict[str, Path], tmp_path: Path, lower: bool,
                                                      max_vocab: int | None) -> None:
    bundle, _ = load_bundle(cased["groc"], "best", "cpu")
    res = runner.invoke(app, ["export", str(cased["groc"]), "--lang", "fr", "--vocab", "--device", "cpu",
                              "--out", str(tmp_path / "fr.vec")])
    assert res.exit_code == 0, res.output
    words, vecs = read_vec(tmp_path / "fr.vec", max_vocab=max_vocab, lower=lower)
    got = vocabulary_vectors(bundle, "fr", "input", max_vocab, lower)
    assert got.words == words == first_occurrences(vocabulary_words(bundle, "fr"), lower, max_vocab)[0]
    np.testing.assert_array_equal(got.vectors, vecs)
    # small batches: a prefix of the vocabulary in whole batches, still the exported vectors
    small = vocabulary_vectors(bundle, "fr", "input", max_vocab, lower, batch_size=3)
    assert small.words == words
    np.testing.assert_allclose(small.vectors, vecs, atol=1e-6)


@pytest.mark.parametrize("case", [[], ["--keep-case"]])
def test_similarity_run_equals_similarity_of_the_export(cased: dict[str, Path], tmp_path: Path,
                                                        case: list[str]) -> None:
    ds = tmp_path / "sim.txt"
    ds.write_text("the cat 3\ncat dog 8\nhouse paris 2\nriver big 1\nsmall likes 4\nthe a 5\nsees dog 6\n"
                  "house the 2\nparis a 1\n", encoding="utf-8")
    run = cased["groc"]
    res = runner.invoke(app, ["export", str(run), "--lang", "en", "--vocab", "--out", str(tmp_path / "en.vec")])
    assert res.exit_code == 0, res.output
    differs = 0
    for max_vocab in [[]] + [["--max-vocab", str(n)] for n in range(2, 17)]:
        extra = [*case, *max_vocab]
        direct = runner.invoke(app, ["similarity", "--run", str(run), "--lang", "en", "--dataset", str(ds), *extra])
        exported = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "en.vec"), "--dataset", str(ds),
                                       *extra])
        assert direct.exit_code == 0, direct.output  # the run also scores all pairs, composed
        a = json.loads(direct.stdout)["datasets"]["sim.txt"]["in_vocabulary"]
        if exported.exit_code == 2:  # too few pairs in the file's vectors for a rho: refused, saying how many
            assert a["rho"] is None and f"only {a['found']} of its 9 pairs" in exported.stderr, exported.output
            differs += 1
            continue
        assert exported.exit_code == 0, exported.output
        b = json.loads(exported.stdout)["datasets"]["sim.txt"]
        assert a == {k: b[k] for k in ("rho", "found", "not_found")}, extra
        differs += a["found"] != 9
    assert differs  # some --max-vocab leaves pairs out: the cut is where the routes used to part
