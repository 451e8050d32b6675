"""Cross-lingual seed pairs from a wordnet (``WnLexicon.translation_pairs``, ``align --dictionary-mode lexicon``).

Hand-written fixture (tests/data/lexicon/mini-en-fr.xml): English and French synsets share ILI
ids, e.g. en ``dog`` / ``domestic dog`` / ``Canis familiaris`` and fr ``chien`` /
``canis familiaris`` are both i9101.  Every wn test uses a temporary wn data directory.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import write_vec
from groc_base.errors import InputError, LexiconMissingError
from lexicons.wn_backend import WnLexicon
from polyglot_groc.cli import app

DATA = Path(__file__).parent / "data" / "lexicon"
runner = CliRunner()


@pytest.fixture(scope="module")
def lex(wn_dir: Path) -> WnLexicon:
    return WnLexicon(wn_dir=wn_dir)


EN = ["the", "dog", "Dog", "puppy", "canine", "cat", "hound", "dogs", "wolf", "Canis_familiaris", "geese"]
FR = ["le", "chiot", "chien", "Chat", "canidé", "canis familiaris", "chien de chasse", "loup-garou"]


def test_pairs_share_an_ili_synset_in_input_and_sense_order(lex: WnLexicon) -> None:
    assert lex.translation_pairs(EN, "en", FR, "fr") == [
        ("dog", "chien"), ("dog", "canis familiaris"),  # i9101; chien comes first in FR
        ("Dog", "chien"), ("Dog", "canis familiaris"),  # case-insensitive, returned as given
        ("puppy", "chiot"), ("canine", "canidé"), ("cat", "Chat"), ("hound", "chien de chasse"),
        ("Canis_familiaris", "chien"), ("Canis_familiaris", "canis familiaris"),  # '_' read as a space
    ]  # fmt: skip
    # the other direction; ISO 639-3 codes normalise; wolf has no French synset
    assert lex.translation_pairs(FR, "fra", EN, "eng", max_per_word=1) == [
        ("chiot", "puppy"), ("chien", "dog"), ("Chat", "cat"), ("canidé", "canine"),
        ("canis familiaris", "dog"), ("chien de chasse", "hound"),
    ]  # fmt: skip


def test_inflected_forms_match_only_on_request(lex: WnLexicon) -> None:
    # "dogs" has no sense of its own; Morphy (dogs -> dog) and irregular forms (geese) are opt-in
    assert not any(s in ("dogs", "geese") for s, _ in lex.translation_pairs(EN, "en", FR, "fr"))
    inflected = lex.translation_pairs(["dogs", "geese"], "en", ["chien", "oie"], "fr", inflected=True)
    assert inflected == [("dogs", "chien")]


def test_sense_order_and_cap_within_one_language(lex: WnLexicon) -> None:
    # "dog": dog.n (domestic dog, Canis familiaris), frump.n (frump), chase.v (chase, tail): the
    # backend's sense order, whatever the target order; the word itself (any case) is never paired
    targets = ["tail", "frump", "DOG", "chase", "Canis familiaris", "dog"]
    assert lex.translation_pairs(["dog"], "en", targets, "en", max_per_word=None) == [
        ("dog", "Canis familiaris"), ("dog", "frump"), ("dog", "tail"), ("dog", "chase"),
    ]  # fmt: skip
    assert lex.translation_pairs(["dog"], "en", targets, "en", max_per_word=2) == [
        ("dog", "Canis familiaris"), ("dog", "frump"),
    ]  # fmt: skip
    assert lex.translation_pairs(["dog"], "en", targets, "en") == lex.translation_pairs(
        ["dog"], "en", targets, "en", max_per_word=3
    )
    # duplicates in the inputs give each pair once
    assert lex.translation_pairs(["cat", "cat"], "en", ["chat", "chat"], "fr") == [("cat", "chat")]
    assert lex.translation_pairs([], "en", FR, "fr") == []


def test_errors_are_one_line(wn_dir: Path, lex: WnLexicon) -> None:
    with pytest.raises(LexiconMissingError, match="no wordnet for language 'de'") as info:
        lex.translation_pairs(EN, "en", ["Hund"], "de")
    assert "\n" not in str(info.value) and "import_omw(langs=['de'])" in str(info.value)  # the Python face's way
    # only French selected: English (loaded for glosses) does not count as selected
    with pytest.raises(LexiconMissingError, match=r"'en' among the selected lexicons \(test-fr:1\)"):
        WnLexicon("test-fr", wn_dir=wn_dir).translation_pairs(EN, "en", FR, "fr")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(InputError, match="max_per_word"):
            lex.translation_pairs(EN, "en", FR, "fr", max_per_word=bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# through the CLI: polyglot-groc align --dictionary-mode lexicon
# --------------------------------------------------------------------------------------------

EN_VEC = ["dog", "puppy", "cat", "canine", "wolf", "goose", "frump", "the"]
FR_VEC = ["chien", "chiot", "chat", "canidé", "le", "la", "loup-garou", "et"]


def _vectors(tmp_path: Path) -> np.ndarray:
    """en/fr .vec files where the four lexicon pairs are an exact rotation ``q`` of each other."""
    rng = np.random.default_rng(0)
    d = 4
    src = rng.standard_normal((len(EN_VEC), d))
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    tgt = rng.standard_normal((len(FR_VEC), d))
    tgt[:4] = src[:4] @ q.T  # dog/chien, puppy/chiot, cat/chat, canine/canidé
    write_vec(tmp_path / "en.vec", EN_VEC, src.astype(np.float32))
    write_vec(tmp_path / "fr.vec", FR_VEC, tgt.astype(np.float32))
    return q


def _align(tmp_path: Path, *extra: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "en.vec"), "--tgt", str(tmp_path / "fr.vec"),
                              "--dictionary-mode", "lexicon", "--refine", "0", "--out", str(tmp_path / "out"), *extra])
    return res.exit_code, res.stdout, res.stderr


def test_align_with_lexicon_seed(tmp_path: Path, wn_dir: Path) -> None:
    q = _vectors(tmp_path)
    code, out, err = _align(tmp_path, "--src-lang", "en", "--tgt-lang", "fr", "--wn-dir", str(wn_dir))
    assert code == 0, out + err
    result = json.loads(out[out.index("{"):])
    assert result["train_dictionary"] == {"seed": "lexicon", "found": 4}
    np.testing.assert_allclose(np.load(tmp_path / "out" / "W.npy"), q, atol=1e-4)  # the rotation, from 4 pairs
    # the same lexicons named by spec (repeatable --lexicon)
    code, out, err = _align(tmp_path, "--src-lang", "en", "--tgt-lang", "fr", "--wn-dir", str(wn_dir),
                            "--lexicon", "test-en:1", "--lexicon", "test-fr", "--overwrite")
    assert code == 0, out + err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--src-lang", "en", "--tgt-lang", "de"], "no wordnet for language 'de'"),
        (["--src-lang", "en", "--tgt-lang", "fr", "--lexicon", "test-fr"], "no wordnet for language 'en'"),
        (["--src-lang", "en", "--tgt-lang", "fr", "--lexicon", "omw-fr:1.4"], "'omw-fr:1.4' is not installed"),
        (["--tgt-lang", "fr"], "needs --src-lang and --tgt-lang"),
    ],
)
def test_align_lexicon_seed_errors_exit_2(tmp_path: Path, wn_dir: Path, args: list[str], message: str) -> None:
    _vectors(tmp_path)
    code, out, err = _align(tmp_path, *args, "--wn-dir", str(wn_dir))
    assert code == 2, out + err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], err
    assert not (tmp_path / "out" / "result.json").exists()


def test_align_lexicon_seed_default_wn_dir_is_the_env_one(tmp_path: Path) -> None:
    # Without --wn-dir the lexicon comes from $POLYGLOT_GROC_WN_DIR (here: an empty folder).
    _vectors(tmp_path)
    code, out, err = _align(tmp_path, "--src-lang", "en", "--tgt-lang", "fr")
    assert code == 2 and "no wordnet database" in err, out + err
