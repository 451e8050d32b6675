"""Real PWN 3.0 + OMW French, imported offline into a temporary wn directory (needs shared data).

Skipped unless ``POLYGLOT_GROC_DATA`` points at the shared data root.  About a minute: the import
of English + French is most of it.
"""

from __future__ import annotations

import gzip
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from lexicons.service import LexiconService
from lexicons.tokenize import tokenize_gloss
from lexicons.wn_backend import WnLexicon, installed_lexicons

DATA_ROOT = os.environ.get("POLYGLOT_GROC_DATA")
pytestmark = pytest.mark.skipif(
    not DATA_ROOT, reason="POLYGLOT_GROC_DATA is not set; these tests need the shared PWN 3.0 / OMW data"
)
DOG = "02084071-n"


@pytest.fixture(scope="module")
def lexicon(wordnet_en_fr: tuple[Path, list[str]]) -> WnLexicon:
    return WnLexicon(wordnet_en_fr[1], wn_dir=wordnet_en_fr[0])


@pytest.fixture(scope="module")
def pwn():  # type: ignore[no-untyped-def]
    from lexicons.omw_import import read_pwn

    return read_pwn(Path(DATA_ROOT or "") / "wordnet" / "pwn-3.0-wndb-lf.tar.xz")


def test_import_installs_english_and_french(wordnet_en_fr: tuple[Path, list[str]]) -> None:
    wn_dir, specs = wordnet_en_fr  # the session's one import (conftest); read only
    assert [s.split(":")[0] for s in specs] == ["omw-en", "omw-fr"]
    rows = {r["spec"]: r for r in installed_lexicons(wn_dir)}
    assert rows[specs[0]]["synsets"] == 117659  # all of PWN 3.0
    assert rows[specs[1]]["language"] == "fr" and rows[specs[1]]["synsets"] > 50000
    assert (wn_dir / "lmf" / f"{specs[0].replace(':', '-')}.xml").is_file()
    from lexicons.omw_import import import_omw

    t0 = time.perf_counter()
    assert import_omw(DATA_ROOT, ["fr"], wn_dir) == specs  # same data: nothing to do
    assert time.perf_counter() - t0 < 10


def test_english_dog(lexicon: WnLexicon, pwn) -> None:  # type: ignore[no-untyped-def]
    assert lexicon.definition("dog", "en") == tokenize_gloss(pwn.synsets[DOG].definition)
    assert lexicon.definition("dog", "en")[:6] == ["a", "member", "of", "the", "genus", "Canis"]
    related = lexicon.related("dog", "en")
    assert related[:2] == ["domestic dog", "Canis familiaris"] and "puppy" in related
    assert lexicon.related("dogs", "en")[:3] == ["dog", "domestic dog", "Canis familiaris"]


def test_french_chien_relates_to_dogs_synset_and_hyponyms(lexicon: WnLexicon, pwn) -> None:  # type: ignore[no-untyped-def]
    from lexicons.omw_import import read_tab

    tab = read_tab(Path(DATA_ROOT or "") / "omw" / "tab" / "fra" / "wn-data-fra.tab", "fra")
    hyponyms = [t for rel, t in pwn.synsets[DOG].pointers if rel == "hyponym"]
    expected = {w for key in [DOG, *hyponyms] for w in tab.lemmas.get(key, [])} - {"chien"}
    related = lexicon.related("chien", "fr")
    assert related[0] in expected  # dog's synset comes first
    assert "canis familiaris" in related and "chiot" in related
    # no French gloss in WOLF: the English one of the ILI-linked synset
    assert lexicon.definition("chien", "fr") == lexicon.definition("dog", "en")
    assert lexicon.definition("chat", "fr")[:2] == ["feline", "mammal"]  # the most frequent sense first


def test_ptb_vocabulary_coverage(lexicon: WnLexicon, tmp_path: Path) -> None:
    ptb = Path(DATA_ROOT or "") / "text" / "ptb" / "ptb.train.txt.gz"
    if not ptb.is_file():
        pytest.skip(f"no {ptb}")
    with gzip.open(ptb, "rt", encoding="utf-8") as fh:
        counts = Counter(tok for line in fh for tok in line.split())
    words = sorted(counts, key=lambda w: (-counts[w], w))
    service = LexiconService(lexicon, extra_cap=0, cache_dir=tmp_path)
    forms = service.compile(words, [["en"]] * len(words))
    stats = forms.coverage_stats
    # seed 004 Table 4.1 reports 78% / 85.8% for penn (relations / definitions, in-vocabulary forms)
    assert 80 < stats["with_definitions_pct"] < 90
    assert 55 < stats["with_relations_pct"] < 80
    t0 = time.perf_counter()
    again = service.compile(words, [["en"]] * len(words))
    assert time.perf_counter() - t0 < 1.0 and again.fingerprint == forms.fingerprint


def test_nltk_backend_agrees_with_wn(lexicon: WnLexicon, tmp_path_factory: pytest.TempPathFactory) -> None:
    from lexicons.nltk_backend import NltkLexicon, build_nltk_data

    nltk_dir = build_nltk_data(DATA_ROOT or "", tmp_path_factory.mktemp("nltk_data"), ["en", "fr"])
    nltk_lex = NltkLexicon(nltk_dir)
    assert nltk_lex.languages() == ["en", "fr"]
    words = [
        "dog", "dogs", "cat", "house", "run", "ran", "bank", "banks", "good", "better", "children", "geese",
        "computer", "market", "price", "prices", "company", "year", "stock", "buy", "sold", "new", "quickly",
    ]  # fmt: skip
    same_rel = sum(lexicon.related(w, "en") == nltk_lex.related(w, "en") for w in words)
    same_def = sum(lexicon.definition(w, "en") == nltk_lex.definition(w, "en") for w in words)
    assert same_rel >= len(words) - 2 and same_def >= len(words) - 2
    assert set(nltk_lex.related("chien", "fr")) == set(lexicon.related("chien", "fr"))


def test_cli_names_what_import_installed(wordnet_en_fr: tuple[Path, list[str]]) -> None:
    """`lexicon import` installs omw-<lang>:3.0+<hash>; omw-fr and omw-fr:3.0 name it, omw-fr:1.4 does not."""
    import json

    from typer.testing import CliRunner

    from polyglot_groc.commands.lexicon import app

    wn_dir, specs = wordnet_en_fr  # the session's one import (conftest); read only
    runner = CliRunner()
    for name in ("omw-fr", "omw-fr:3.0", specs[1]):
        res = runner.invoke(app, ["lookup", "chien", "--specs", name, "--wn-dir", str(wn_dir), "--json"])
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        # the given lexicon is the one used, in its own language (no --lang: the spec's languages)
        assert out["lang"] == "fr" and out["lexicons"] == [specs[1]] and out["gloss_lexicons"] == [specs[0]]
        assert "canis familiaris" in out["related"] and out["definition_lang"] == "en"
    res = runner.invoke(app, ["lookup", "dog", "--specs", "omw-en:1.4", "--wn-dir", str(wn_dir)])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line
    assert f"installed: {specs[0]}, {specs[1]}" in line and "pass omw-en" in line
