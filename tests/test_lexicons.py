"""Tests of the ``lexicons`` package on hand-written fixtures (tests/data/lexicon/); no shared data.

Every wn test uses a temporary wn data directory, never the user's ~/.wn_data.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from groc_base.errors import (
    CheckpointError,
    ConfigError,
    GrocError,
    InputError,
    LexiconDownloadError,
    LexiconError,
    LexiconFormatError,
    LexiconMissingError,
    ResourceMissingError,
)
from lexicons.protocol import Lexicon, dedupe_related, display_lemma, normalize_lang, to_iso3
from lexicons.service import CompiledForms, LexiconService, open_lexicon, vocab_fingerprint
from lexicons.tokenize import tokenize_gloss
from lexicons.tsv_backend import TsvLexicon, parse_tsv_lexicon, write_tsv_lexicon
from lexicons.wn_backend import WnLexicon, installed_lexicons, wn_data_dir
from tests.conftest import install_wordnets

DATA = Path(__file__).parent / "data" / "lexicon"
LMF = DATA / "mini-en-fr.xml"
ILI = DATA / "mini-ili.tsv"
TSV = DATA / "mini-en-fr.tsv"

DOG_GLOSS = tokenize_gloss("a member of the genus Canis that has been domesticated by man; occurs in many breeds")
EN_WORDS = [
    "canine", "canid", "dog", "domestic dog", "Canis familiaris", "puppy", "hound", "hound dog",
    "wolf", "frump", "chase", "chase after", "tail", "cat", "true cat", "goose",
]  # fmt: skip
FR_WORDS = ["canidé", "chien", "canis familiaris", "chiot", "chien de chasse", "chat", "loup-garou"]


@pytest.fixture(scope="module")
def wnlex(wn_dir: Path) -> WnLexicon:
    return WnLexicon(wn_dir=wn_dir)


@pytest.fixture(scope="module")
def tsvlex() -> TsvLexicon:
    return TsvLexicon(TSV)


# --------------------------------------------------------------------------------------------
# protocol helpers and tokenisation
# --------------------------------------------------------------------------------------------


def test_language_codes_normalise() -> None:
    assert normalize_lang("fra") == "fr"
    assert normalize_lang("en-US") == "en"
    assert normalize_lang("EN") == "en"
    assert normalize_lang("zsm") == "ms"
    assert normalize_lang("tgl") == "tl"
    assert to_iso3("fr") == "fra"
    assert to_iso3("xx") == "xx"


def test_dedupe_related_drops_the_word_and_repeats() -> None:
    assert dedupe_related("Dog", ["dog", "pup", "DOG", "pup", "", "hound"]) == ["pup", "hound"]
    assert display_lemma("hot_dog") == "hot dog"


def test_tokenize_gloss_uses_toktok_and_drops_punctuation() -> None:
    assert tokenize_gloss("a member of the genus Canis (probably); occurs") == [
        "a", "member", "of", "the", "genus", "Canis", "probably", "occurs",
    ]  # fmt: skip
    assert tokenize_gloss("  ") == []


# --------------------------------------------------------------------------------------------
# wn backend
# --------------------------------------------------------------------------------------------


def test_wn_backend_related_and_definition_english(wnlex: WnLexicon) -> None:
    assert isinstance(wnlex, Lexicon)
    assert wnlex.languages() == ["en", "fr"]
    assert wnlex.specs == ["test-en:1", "test-fr:1"]
    # synonyms then hyponyms of dog.n.1, then the other synsets (frump.n, chase.v); no "dog"
    assert wnlex.related("dog", "en") == [
        "domestic dog", "Canis familiaris", "puppy", "hound", "hound dog", "frump", "chase", "chase after", "tail",
    ]  # fmt: skip
    assert wnlex.definition("dog", "en") == DOG_GLOSS  # the FIRST synset's gloss only
    assert wnlex.related("canine", "en") == ["canid", "dog", "domestic dog", "Canis familiaris", "wolf"]
    assert wnlex.related("nonsense", "en") == [] and wnlex.definition("nonsense", "en") == []
    assert wnlex.related("dog", "de") == []  # a language the lexicon does not have


def test_wn_backend_lookup_is_case_insensitive_and_lemmatises_english(wnlex: WnLexicon) -> None:
    assert wnlex.related("Dog", "en") == wnlex.related("dog", "en")
    assert wnlex.related("dogs", "en")[0] == "dog"  # Morphy: dogs -> dog (noun and verb synsets)
    assert wnlex.definition("dogs", "en") == DOG_GLOSS
    assert wnlex.definition("geese", "en")[:2] == ["web-footed", "long-necked"]  # irregular form
    assert wnlex.related("hound_dog", "en") == ["hound"]  # WordNet-style multiword spelling
    assert WnLexicon(wn_dir=wnlex.wn_dir, lemmatize=False).related("dogs", "en") == []


def test_wn_backend_french_uses_ili_for_glosses(wnlex: WnLexicon) -> None:
    # hyponym chiot by a hyponym relation, chien de chasse only by the inverse of a hypernym one
    assert wnlex.related("chien", "fr") == ["canis familiaris", "chiot", "chien de chasse"]
    assert wnlex.definition("chien", "fr") == DOG_GLOSS  # no French gloss: English via ILI i9101
    assert wnlex.definition("chiot", "fr") == ["jeune", "chien"]  # own French gloss wins
    # neither a French nor an English gloss: the ILI file's definition
    assert wnlex.definition("loup-garou", "fr") == tokenize_gloss("a monster that is part man and part wolf")


def test_wn_backend_sql_and_api_loaders_agree(wn_dir: Path, wnlex: WnLexicon) -> None:
    api = WnLexicon(wn_dir=wn_dir, loader="api")
    for lang, words in (("en", EN_WORDS + ["dogs", "geese"]), ("fr", FR_WORDS)):
        for word in words:
            assert api.related(word, lang) == wnlex.related(word, lang), word
            assert api.definition(word, lang) == wnlex.definition(word, lang), word


def test_wn_backend_selection_and_errors(wn_dir: Path, tmp_path: Path) -> None:
    fr = WnLexicon("test-fr", wn_dir=wn_dir)
    assert fr.languages() == ["fr"]
    assert fr.specs == ["test-fr:1", "test-en:1"]  # English added for glosses (and cache keys)
    assert fr.definition("chien", "fr") == DOG_GLOSS
    assert WnLexicon(langs=["fra"], wn_dir=wn_dir).languages() == ["fr"]
    with pytest.raises(LexiconMissingError, match="lexicon import"):
        WnLexicon("omw-de:1.4", wn_dir=wn_dir)
    with pytest.raises(LexiconMissingError, match="no wordnet for language"):
        WnLexicon(langs=["de"], wn_dir=wn_dir)
    assert WnLexicon(langs=["fr", "de"], wn_dir=wn_dir, missing_ok=True).languages() == ["fr"]
    with pytest.raises(LexiconMissingError, match="no wordnet database"):
        WnLexicon(wn_dir=tmp_path / "empty")
    with pytest.raises(InputError):
        WnLexicon("test-en", langs=["en"], wn_dir=wn_dir)


def test_installed_lexicons_counts(wn_dir: Path) -> None:
    rows = {r["spec"]: r for r in installed_lexicons(wn_dir)}
    assert rows["test-en:1"]["language"] == "en"
    assert rows["test-en:1"]["synsets"] == 9
    assert rows["test-fr:1"]["words"] == len(FR_WORDS)


# --------------------------------------------------------------------------------------------
# TSV backend and parity with wn
# --------------------------------------------------------------------------------------------


def test_wn_and_tsv_backends_give_the_same_forms(wnlex: WnLexicon, tsvlex: TsvLexicon) -> None:
    assert tsvlex.languages() == wnlex.languages()
    for lang, words in (("en", EN_WORDS), ("fr", FR_WORDS)):
        assert sorted(tsvlex.words(lang)) == sorted(words)
        assert {w.lower() for w in wnlex.lemmas(lang)} == {w.lower() for w in words}
        for word in words:
            assert wnlex.related(word, lang) == tsvlex.related(word, lang), (lang, word)
            assert wnlex.definition(word, lang) == tsvlex.definition(word, lang), (lang, word)


def test_tsv_format_and_case_fallback(tmp_path: Path) -> None:
    path = tmp_path / "lex.tsv"
    path.write_text(
        "# comment\n\nfra\tMaison\trelated\tdemeure|logis\nfr\tMaison\trelated\tlogis|foyer_familial\n"
        "fr\tmaison\tdefinition\tbâtiment d'habitation.\n",
        encoding="utf-8",
    )
    lex = TsvLexicon(path)
    assert lex.languages() == ["fr"]
    assert lex.related("Maison", "fr") == ["demeure", "logis", "foyer familial"]
    assert lex.related("MAISON", "fr") == ["demeure", "logis", "foyer familial"]
    assert lex.definition("maison", "fr") == ["bâtiment", "d", "habitation"]
    assert lex.specs[0].startswith("tsv:lex.tsv@")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("en\tdog\trelated\n", "line 1: expected 4 tab-separated columns"),
        ("# c\nen\tdog\tsynonyms\tpup\n", "line 2: unknown record kind 'synonyms'"),
        ("en\tdog\trelated\tpup||hound\n", "line 1: empty item in related list"),
        ("en\tdog\tdefinition\ta\nen\tdog\tdefinition\tb\n", "line 2: second definition of 'dog'.*line 1"),
        ("e1\tdog\tdefinition\ta\n", "line 1: bad language code"),
        ("en\t\tdefinition\ta\n", "line 1: empty word"),
    ],
)
def test_tsv_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(LexiconFormatError, match=message):
        parse_tsv_lexicon(text, "x.tsv")


def test_tsv_file_errors(tmp_path: Path) -> None:
    with pytest.raises(LexiconMissingError, match="does not exist"):
        TsvLexicon(tmp_path / "missing.tsv")
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes("fr\tcafé\tdefinition\tboisson\n".encode("latin-1"))
    with pytest.raises(LexiconFormatError, match=r"tsv lexicon .*latin1.tsv: line 1 is not valid utf-8 .*iconv"):
        TsvLexicon(bad)


def test_write_tsv_roundtrip(tmp_path: Path, wnlex: WnLexicon) -> None:
    rows = [("en", w, wnlex.related(w, "en"), " ".join(wnlex.definition(w, "en"))) for w in EN_WORDS]
    lex = TsvLexicon(write_tsv_lexicon(rows, tmp_path / "frozen.tsv"))
    for w in EN_WORDS:
        assert lex.related(w, "en") == wnlex.related(w, "en")
        assert lex.definition(w, "en") == wnlex.definition(w, "en")


# --------------------------------------------------------------------------------------------
# service: compile, masks, coverage, ablations
# --------------------------------------------------------------------------------------------

VOCAB = ["dog", "chien", "puppy", "chiot", "cat", "chat", "wolf", "zzz", "hound", "canine"]
LANGS = [["en"], ["fr", "en"], ["en"], ["fr"], ["en", "fr"], ["fr"], ["en"], ["en"], ["en"], ["en"]]


def _expected(lex: Lexicon, word: str, langs: list[str]) -> tuple[list[str], list[str]]:
    for lang in langs:
        rel, dfn = lex.related(word, lang), lex.definition(word, lang)
        if rel or dfn:
            return rel, dfn
    return [], []


def test_compile_ids_and_masks_mark_exactly_the_forms(tsvlex: TsvLexicon) -> None:
    forms = LexiconService(tsvlex, extra_cap=None).compile(VOCAB, LANGS)
    assert forms.related_ids.shape == (len(VOCAB), 3) and forms.related_ids.dtype == np.int64
    assert forms.definition_mask.shape == (len(VOCAB), 10) and forms.definition_mask.dtype == np.bool_
    for i, word in enumerate(VOCAB):
        rel, dfn = _expected(tsvlex, word, LANGS[i])
        got = forms.forms_of(i, VOCAB)
        assert got.related == rel[:3], word
        assert got.definition == dfn[:10], word
        # masks are a prefix of True entries, exactly as long as the forms; pads are id 0
        assert forms.related_mask[i].sum() == len(got.related)
        assert not forms.related_mask[i, len(got.related) :].any()
        assert (forms.related_ids[i][~forms.related_mask[i]] == 0).all()
    # "chien" is French first; "chat" has only a French entry; "zzz" has none
    assert forms.forms_of(VOCAB.index("chiot"), VOCAB).definition == ["jeune", "chien"]
    assert not forms.related_mask[VOCAB.index("zzz")].any() and not forms.definition_mask[VOCAB.index("zzz")].any()
    # in-vocabulary forms point at the vocabulary, others at extra_words
    assert forms.forms_of(VOCAB.index("chien"), VOCAB).related == ["canis familiaris", "chiot", "chien de chasse"]
    assert forms.related_ids[VOCAB.index("chien"), 1] == VOCAB.index("chiot")
    assert set(forms.extra_words).isdisjoint(VOCAB)
    assert forms.coverage_stats["words"] == len(VOCAB)
    assert forms.coverage_stats["with_entry_pct"] == pytest.approx(90.0)


def masked_mean(table: np.ndarray, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The model's masked mean (the one implementation) applied to compiled forms."""
    import torch

    from polyglot_groc.model.surface import masked_mean as model_masked_mean

    return model_masked_mean(torch.from_numpy(table[ids]), torch.tensor(mask)).numpy()


def test_masked_mean_ignores_pads_and_zeroes_missing_forms(tsvlex: TsvLexicon) -> None:
    forms = LexiconService(tsvlex, extra_cap=None).compile(VOCAB, LANGS)
    rng = np.random.default_rng(0)
    table = rng.normal(size=(forms.num_forms, 4))
    mean = masked_mean(table, forms.related_ids, forms.related_mask)
    # garbage in the pad positions (any valid index) changes nothing
    noisy = np.where(forms.related_mask, forms.related_ids, rng.integers(0, forms.num_forms, forms.related_ids.shape))
    np.testing.assert_allclose(masked_mean(table, noisy, forms.related_mask), mean)
    for i in range(len(VOCAB)):
        ids = forms.related_ids[i][forms.related_mask[i]]
        expected = table[ids].mean(axis=0) if len(ids) else np.zeros(4)
        np.testing.assert_allclose(mean[i], expected)


def test_extra_words_are_capped_most_referenced_first(tsvlex: TsvLexicon) -> None:
    full = LexiconService(tsvlex, extra_cap=None).compile(VOCAB, LANGS)
    counts: dict[str, int] = {}
    for i in range(len(VOCAB)):
        ids = np.concatenate(
            [full.related_ids[i][full.related_mask[i]], full.definition_ids[i][full.definition_mask[i]]]
        )
        for j in ids[ids >= len(VOCAB)]:
            w = full.extra_words[j - len(VOCAB)]
            counts[w] = counts.get(w, 0) + 1
    assert full.extra_words == sorted(counts, key=lambda w: (-counts[w], w))
    capped = LexiconService(tsvlex, extra_cap=3).compile(VOCAB, LANGS)
    assert capped.extra_words == full.extra_words[:3]
    assert capped.coverage_stats["extra_dropped"] == len(full.extra_words) - 3
    assert capped.related_ids.max() < capped.num_forms and capped.definition_ids.max() < capped.num_forms
    # extra_cap=0 is the thesis: only forms inside the vocabulary, then the first max_*
    thesis = LexiconService(tsvlex, extra_cap=0).compile(VOCAB, LANGS)
    assert thesis.extra_words == [] and thesis.num_forms == len(VOCAB)
    assert thesis.forms_of(VOCAB.index("dog"), VOCAB).related == ["puppy", "hound"]


def test_coverage_drops_whole_entries_deterministically(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(400)]
    rows = [("en", w, ["x", "y"], "some gloss") for w in words]
    lex = TsvLexicon(write_tsv_lexicon(rows, tmp_path / "many.tsv"))
    langs = [["en"]] * len(words)
    full = LexiconService(lex, extra_cap=None).compile(words, langs)
    half = LexiconService(lex, extra_cap=None, coverage=0.5).compile(words, langs)
    again = LexiconService(lex, extra_cap=None, coverage=0.5).compile(words, langs)
    np.testing.assert_array_equal(half.related_mask, again.related_mask)
    kept_rel, kept_def = half.related_mask.any(axis=1), half.definition_mask.any(axis=1)
    assert 0.4 < kept_rel.mean() < 0.6 and 0.4 < kept_def.mean() < 0.6
    assert (kept_rel != kept_def).any()  # relations and definitions are dropped independently
    # whole entries: a kept entry is complete
    np.testing.assert_array_equal(half.related_mask[kept_rel], full.related_mask[kept_rel])
    assert half.coverage_stats["with_relations_pct"] == pytest.approx(100 * kept_rel.mean())
    none = LexiconService(lex, coverage=0.0).compile(words, langs)
    assert not none.related_mask.any() and not none.definition_mask.any()


def test_ablations_give_empty_masks(tsvlex: TsvLexicon) -> None:
    no_rel = LexiconService(tsvlex, use_relations=False).compile(VOCAB, LANGS)
    no_def = LexiconService(tsvlex, use_definitions=False).compile(VOCAB, LANGS)
    assert not no_rel.related_mask.any() and no_rel.definition_mask.any()
    assert not no_def.definition_mask.any() and no_def.related_mask.any()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_related": -1}, ConfigError),
        ({"coverage": 1.5}, ConfigError),
        ({"extra_cap": -3}, ConfigError),
    ],
)
def test_service_rejects_bad_settings(tsvlex: TsvLexicon, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        LexiconService(tsvlex, **kwargs)


def test_compile_rejects_bad_vocabularies(tsvlex: TsvLexicon) -> None:
    service = LexiconService(tsvlex)
    with pytest.raises(InputError, match="occurs twice"):
        service.compile(["dog", "dog"], [["en"], ["en"]])
    with pytest.raises(InputError, match="language lists"):
        service.compile(["dog"], [])
    with pytest.raises(InputError, match="give a list"):
        service.compile(["dog"], ["en"])


def test_state_roundtrip_with_numpy_and_torch(tsvlex: TsvLexicon) -> None:
    forms = LexiconService(tsvlex).compile(VOCAB, LANGS)
    state = forms.to_state()
    back = CompiledForms.from_state(state)
    for name in ("related_ids", "related_mask", "definition_ids", "definition_mask"):
        np.testing.assert_array_equal(getattr(back, name), getattr(forms, name))
    assert back.extra_words == forms.extra_words and back.fingerprint == forms.fingerprint
    torch = pytest.importorskip("torch")
    as_tensors = {k: torch.as_tensor(v) if isinstance(v, np.ndarray) else v for k, v in state.items()}
    np.testing.assert_array_equal(CompiledForms.from_state(as_tensors).related_ids, forms.related_ids)
    with pytest.raises(CheckpointError):
        CompiledForms.from_state({k: v for k, v in state.items() if k != "related_ids"})
    with pytest.raises(ValueError):
        forms.related_ids[0, 0] = 5  # frozen arrays


# --------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------


class _Counting:
    """Wraps a lexicon and counts lookups, to tell cache hits from recompiles."""

    def __init__(self, inner: Lexicon) -> None:
        self.inner, self.calls = inner, 0

    @property
    def specs(self) -> list[str]:
        return self.inner.specs

    def languages(self) -> list[str]:
        return self.inner.languages()

    def related(self, word: str, lang: str) -> list[str]:
        self.calls += 1
        return self.inner.related(word, lang)

    def definition(self, word: str, lang: str) -> list[str]:
        return self.inner.definition(word, lang)


def test_cache_hits_and_is_invalidated_by_vocabulary_lexicon_and_settings(tmp_path: Path) -> None:
    lex_file = tmp_path / "lex.tsv"
    lex_file.write_text(TSV.read_text(encoding="utf-8"), encoding="utf-8")
    cache = tmp_path / "cache"
    lex = _Counting(TsvLexicon(lex_file))
    first = LexiconService(lex, cache_dir=cache).compile(VOCAB, LANGS)
    assert lex.calls > 0 and len(list(cache.glob("lexforms-*.npz"))) == 1
    lex.calls = 0
    hit = LexiconService(lex, cache_dir=cache).compile(VOCAB, LANGS)
    assert lex.calls == 0  # served from disk
    assert hit.fingerprint == first.fingerprint and hit.extra_words == first.extra_words
    np.testing.assert_array_equal(hit.definition_ids, first.definition_ids)

    # a changed vocabulary (or a changed language order) recompiles
    changed = LexiconService(lex, cache_dir=cache).compile(VOCAB + ["wolves"], LANGS + [["en"]])
    assert lex.calls > 0 and changed.fingerprint != first.fingerprint
    lex.calls = 0
    LexiconService(lex, cache_dir=cache).compile(VOCAB, [list(reversed(x)) for x in LANGS])
    assert lex.calls > 0
    # a changed setting recompiles
    lex.calls = 0
    LexiconService(lex, cache_dir=cache, max_related=2).compile(VOCAB, LANGS)
    assert lex.calls > 0
    # a changed lexicon file changes the specs and recompiles, with the new forms
    lex_file.write_text(lex_file.read_text(encoding="utf-8") + "en\tzzz\trelated\tdog\n", encoding="utf-8")
    edited = _Counting(TsvLexicon(lex_file))
    new = LexiconService(edited, cache_dir=cache).compile(VOCAB, LANGS)
    assert edited.calls > 0 and new.fingerprint != first.fingerprint
    assert new.forms_of(VOCAB.index("zzz"), VOCAB).related == ["dog"]


def test_cache_key_changes_with_wn_lexicon_version(tmp_path: Path, wn_dir: Path) -> None:
    v2 = tmp_path / "v2.xml"
    v2.write_text(
        LMF.read_text(encoding="utf-8")
        .replace('id="test-en" label="Test English"', 'id="test-en" label="Test English v2"')
        .replace(
            'version="1">\n\n    <LexicalEntry id="test-en-canine-n">',
            'version="2">\n\n    <LexicalEntry id="test-en-canine-n">',
        )
        .replace("a young dog", "a young domestic dog"),
        encoding="utf-8",
    )
    own = install_wordnets(tmp_path / "wn", ILI, LMF)
    install_wordnets(own, v2)
    one = LexiconService(WnLexicon("test-en:1", wn_dir=own), cache_dir=tmp_path / "c").cache_key(["puppy"], [["en"]])
    two_lex = WnLexicon("test-en:2", wn_dir=own)
    two = LexiconService(two_lex, cache_dir=tmp_path / "c").cache_key(["puppy"], [["en"]])
    assert one != two
    assert two_lex.definition("puppy", "en") == ["a", "young", "domestic", "dog"]
    with pytest.raises(LexiconError, match="ambiguous"):
        WnLexicon("test-en", wn_dir=own)


def test_damaged_cache_is_recomputed(tmp_path: Path, tsvlex: TsvLexicon, caplog: pytest.LogCaptureFixture) -> None:
    service = LexiconService(tsvlex, cache_dir=tmp_path)
    first = service.compile(VOCAB, LANGS)
    npz = next(tmp_path.glob("lexforms-*.npz"))
    npz.write_bytes(b"not a zip")
    with caplog.at_level(logging.WARNING, logger="lexicons.service"):
        again = service.compile(VOCAB, LANGS)
    assert "ignoring unreadable lexicon cache" in caplog.text
    np.testing.assert_array_equal(again.related_ids, first.related_ids)
    meta = json.loads(next(tmp_path.glob("lexforms-*.json")).read_text(encoding="utf-8"))
    assert meta["fingerprint"] == first.fingerprint
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries


def test_vocab_fingerprint_depends_on_order_and_languages() -> None:
    a = vocab_fingerprint(["a", "b"], [["en"], ["fr"]])
    assert a == vocab_fingerprint(["a", "b"], [["en"], ["fr"]])
    assert a != vocab_fingerprint(["b", "a"], [["fr"], ["en"]])
    assert a != vocab_fingerprint(["a", "b"], [["en"], ["fr", "en"]])


def test_open_lexicon(wn_dir: Path) -> None:
    assert open_lexicon("tsv", tsv=TSV).languages() == ["en", "fr"]
    assert open_lexicon("wn", specs=(), langs=["fr", "tl"], wn_dir=wn_dir).languages() == ["fr"]
    assert open_lexicon("wn", specs=["test-en:1"], wn_dir=wn_dir).languages() == ["en"]
    with pytest.raises(ConfigError, match="unknown lexicon backend"):
        open_lexicon("bogus")
    with pytest.raises(ConfigError, match="needs a file"):
        open_lexicon("tsv", tsv="")


# --------------------------------------------------------------------------------------------
# importer pieces and download (no shared data needed)
# --------------------------------------------------------------------------------------------

DOG_LINE = (
    "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 004 @ 02083346 n 0000 @ 01317541 n 0000 "
    "~ 01322604 n 0000 %p 02158846 n 0000 | a member of the genus Canis (probably descended from the common "
    'wolf) that has been domesticated by man since prehistoric times; occurs in many breeds; "the dog barked all night"'
)


def test_parse_wndb_data_line() -> None:
    from lexicons.omw_import import _parse_data_line, split_gloss

    synset = _parse_data_line(DOG_LINE, "n")
    assert synset.key == "02084071-n" and synset.words == ["dog", "domestic_dog", "Canis_familiaris"]
    assert synset.pointers == [("hypernym", "02083346-n"), ("hypernym", "01317541-n"), ("hyponym", "01322604-n")]
    assert synset.definition.endswith("since prehistoric times; occurs in many breeds")
    assert synset.examples == ["the dog barked all night"]
    assert split_gloss('x; "a; b"--Someone; y') == ("x; y", ["a; b"])


def test_read_tab_handles_both_label_formats(tmp_path: Path) -> None:
    from lexicons.omw_import import read_tab

    tab = tmp_path / "wn-data-ita.tab"
    tab.write_text(
        "# Test\tita\turl\tCC\n02084071-n\tita:lemma\tcane\n02084071-n\tlemma\tcane\n"
        "02084071-n\tita:def\t0\tanimale domestico\n00001740-s\tita:lemma\tcapace\n02084071-n\tspa:lemma\tperro\n",
        encoding="utf-8",
    )
    data = read_tab(tab, "ita")
    assert data.lemmas == {"02084071-n": ["cane"], "00001740-a": ["capace"]}
    assert data.definitions == {"02084071-n": [(0, "animale domestico")]}
    tab.write_text("bad-key\tita:lemma\tx\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1: bad synset key"):
        read_tab(tab, "ita")


def test_write_lmf_is_atomic_and_loadable(tmp_path: Path) -> None:
    import wn

    from lexicons.omw_import import LmfEntry, LmfLexicon, write_lmf

    lex = LmfLexicon(
        id="mini", version="1", language="en", label="mini", license="CC0",
        entries=[LmfEntry("dog", "n", ["dogs"], ["1-n"], [1]), LmfEntry("puppy", "n", [], ["2-n"], [1])],
        synsets=["1-n", "2-n"], ss_type={"1-n": "n", "2-n": "n"}, ili={"1-n": "i1"},
        definitions={"1-n": "a <domestic> & loyal animal"}, examples={},
        relations={"1-n": [("hyponym", "2-n")]},
    )  # fmt: skip
    path = write_lmf([lex], tmp_path / "lmf" / "mini.xml")
    assert path.is_file() and not list(path.parent.glob(".*.tmp"))
    with wn_data_dir(tmp_path / "wn"):
        wn.add(path, progress_handler=None)
    mini = WnLexicon("mini", wn_dir=tmp_path / "wn")
    assert mini.related("dogs", "en") == ["dog", "puppy"]
    assert mini.definition("dog", "en") == tokenize_gloss("a <domestic> & loyal animal")  # escaped + read back


def test_download_offline_fails_with_one_line_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import wn

    from lexicons.omw_import import download

    def offline(*args: object, **kwargs: object) -> None:
        raise OSError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(wn, "download", offline)
    with pytest.raises(LexiconDownloadError) as info:
        download("omw-en:1.4", tmp_path / "wn")
    message = str(info.value)
    assert "\n" not in message and "polyglot-groc lexicon import" in message
    assert isinstance(info.value, ResourceMissingError) and isinstance(info.value, LexiconMissingError)
    assert isinstance(info.value, GrocError)


def test_import_without_data_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lexicons.omw_import import import_omw

    monkeypatch.delenv("POLYGLOT_GROC_DATA", raising=False)
    with pytest.raises(LexiconMissingError, match="POLYGLOT_GROC_DATA"):
        import_omw(None, ["en"], tmp_path / "wn")
    with pytest.raises(LexiconMissingError, match="no princeton wordnet"):
        import_omw(tmp_path, ["en"], tmp_path / "wn")
