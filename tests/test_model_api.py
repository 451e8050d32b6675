"""A trained run in memory (``pg.load`` -> ``Model``): its vectors are export's, its log-probabilities
evaluate's, its neighbours a brute-force ranking's and, after an alignment, the aligned export's."""

from __future__ import annotations

import json
import logging
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import read_vec
from polyglot_groc.analysis.loaded_run import Model, load
from polyglot_groc.analysis.text_scoring import text_pieces
from polyglot_groc.cli import app
from polyglot_groc.config import MODEL_KINDS
from polyglot_groc.training.trainer import Trainer
from tests.conftest import CLOSED_TRAIN, TEST_ONLY, one_error_line, small_run_config
from tests.test_scoring import TEXT

runner = CliRunner()
#: A seed dictionary for the tiny en/fr corpus.
EN_FR = ("the le\ndog chien\nhouse maison\nfish poisson\nriver rivière\nteacher professeur\nour notre\n"
         "old vieille\nsmall petite\ngarden jardin\nbird oiseau\na un\nsees voit\nneighbour voisin\n")


@pytest.fixture(scope="module")
def runs(kind_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every kind on :data:`TEXT` (the session's runs, as test_scoring reads them), and a polyglot en/fr GroC
    run on the tiny corpus."""
    root = tmp_path_factory.mktemp("model-api")
    Trainer(small_run_config("groc", "en,fr", ["train.max_steps=3"]), root / "enfr").fit()
    return {**kind_runs, "enfr": root / "enfr"}


def _brute_cosine(q: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit @ (q / np.linalg.norm(q))  # (n,)


# ----------------------------------------------------------------------------------- vectors


def test_vectors_are_the_exported_rows_bit_for_bit(runs: dict[str, Path], tmp_path: Path) -> None:
    from polyglot_groc.analysis.workflows import export

    run = runs["enfr"]
    words = ["chien", "maisonnette", "le", "chiens", "rivières", "poisson"]  # seen and unseen (composed)
    for side in ("input", "output"):
        res = export(run=run, lang="fr", words=words, side=side, out=tmp_path / f"{side}.vec", device="cpu")
        assert res.composed_unseen == 3
        got, vecs = read_vec(tmp_path / f"{side}.vec")
        model = load(run, device="cpu")
        assert got == words and np.array_equal(model.vectors(words, "fr", side), vecs)
        assert np.array_equal(model.vector("maisonnette", "fr", side), vecs[1])  # from the cache
    export(run=run, lang="en", vocab=True, out=tmp_path / "vocab.vec", device="cpu")
    got, vecs = read_vec(tmp_path / "vocab.vec")
    model = load(run, device="cpu")
    assert got == model.words("en") and np.array_equal(model.vectors(got, "en"), vecs)
    # Repeats and order are kept; the cache answers the second call with the same rows.
    again = model.vectors(["the", "dog", "the"], "en")
    assert np.array_equal(again[0], again[2]) and np.array_equal(again[1], vecs[got.index("dog")])


def test_lookup_vectors_and_the_errors_of_words_it_cannot_embed(runs: dict[str, Path]) -> None:
    from groc_base.errors import InputError

    groc, tied = load(runs["enfr"], device="cpu"), load(runs["tied"], device="cpu")
    assert tied.kind == "tied" and not tied.composes("input") and groc.composes("output")
    assert groc.languages == ("en", "fr") and groc.config.model.kind == "groc" and groc.dim == 16
    assert tied.vectors(["cat", "dog"], "en").shape == (2, 16)
    with pytest.raises(InputError, match=r"'zebra'.*lookup table.*compositional run"):
        tied.vector("zebra", "en")
    with pytest.raises(InputError, match="only of characters this model never saw"):
        groc.vector("собака", "en")
    with pytest.raises(InputError, match="language 'de' is not in this run; it has en, fr"):
        groc.vector("dog", "de")
    with pytest.raises(InputError, match="empty or contains whitespace"):
        groc.vectors(["dog", "hot dog"], "en")
    with pytest.raises(InputError, match="takes a list of words"):
        groc.vectors("dog", "en")


# ----------------------------------------------------------------------------------- neighbours


def test_most_similar_is_a_brute_force_cosine_and_csls_ranking(runs: dict[str, Path]) -> None:
    model = load(runs["enfr"], device="cpu")
    en, fr = model.words("en"), model.words("fr")
    v_en, v_fr = model.vectors(en, "en"), model.vectors(fr, "fr")
    for word in ("dog", "teacher"):
        cos = _brute_cosine(v_en[en.index(word)], v_en)
        order = [i for i in np.argsort(-cos, kind="stable") if en[i] != word][:5]  # not its own neighbour
        got = model.most_similar(word, "en", 5)
        assert [w for w, _ in got] == [en[i] for i in order]
        assert np.allclose([s for _, s in got], cos[order], atol=1e-5)
    # An unseen word is composed; among another language of a polyglot run: the shared space.
    q = model.vector("doggy", "en")
    cos = _brute_cosine(q, v_fr)
    got = model.most_similar("doggy", "en", 4, among="fr")
    assert [w for w, _ in got] == [fr[i] for i in np.argsort(-cos, kind="stable")[:4]]
    # A vector query, and a word list (composed where unseen).
    assert [w for w, _ in model.most_similar(q, "en", 4, among="fr")] == [w for w, _ in got]
    pool = ["chien", "chat", "maison", "zèbre"]
    cos = _brute_cosine(q, model.vectors(pool, "fr"))
    listed = model.most_similar("doggy", "en", 2, among=pool, among_lang="fr")
    assert [w for w, _ in listed] == [pool[i] for i in np.argsort(-cos, kind="stable")[:2]]
    # CSLS: 2 cos(x, y) - r_fr(x) - r_en(y), r the mean cosine of the 3 nearest of the other vocabulary.
    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
    sims = unit(v_fr) @ unit(v_en).T  # (fr, en)
    r_y = np.sort(sims, axis=1)[:, -3:].mean(axis=1)  # (fr,)
    r_x = np.sort(_brute_cosine(q, v_fr))[-3:].mean()
    csls = 2 * _brute_cosine(q, v_fr) - r_x - r_y
    got = model.most_similar("doggy", "en", 4, among="fr", method="csls", knn=3)
    assert [w for w, _ in got] == [fr[i] for i in np.argsort(-csls, kind="stable")[:4]]
    assert np.allclose([s for _, s in got], np.sort(csls)[::-1][:4], atol=1e-5)
    assert model.similarity("dog", "chien", "en", "fr") == pytest.approx(
        float(_brute_cosine(v_en[en.index("dog")], v_fr[[fr.index("chien")]])[0]), abs=1e-6)


def test_to_keyed_vectors_round_trips_through_gensim(runs: dict[str, Path], tmp_path: Path) -> None:
    from gensim.models import KeyedVectors

    model = load(runs["enfr"], device="cpu")
    kv = model.to_keyed_vectors("en")
    assert kv.index_to_key == model.words("en")
    kv.save(str(tmp_path / "en.kv"))
    kv.save_word2vec_format(str(tmp_path / "en.vec"))
    for back in (KeyedVectors.load(str(tmp_path / "en.kv")),
                 KeyedVectors.load_word2vec_format(str(tmp_path / "en.vec"))):
        assert back.index_to_key == model.words("en")
        assert np.array_equal(back.vectors, model.vectors(model.words("en"), "en"))
    assert [w for w, _ in kv.most_similar("dog", topn=5)] == [w for w, _ in model.most_similar("dog", "en", 5)]
    some = model.to_keyed_vectors("fr", words=["chien", "chiots"], side="output")
    assert np.array_equal(some["chiots"], model.vector("chiots", "fr", "output"))


def test_cross_language_neighbours_after_an_alignment_are_the_aligned_exports(
        runs: dict[str, Path], tmp_path: Path) -> None:
    from groc_base.errors import InputError
    from polyglot_groc.analysis.workflows import align

    (tmp_path / "dict.txt").write_text(EN_FR, encoding="utf-8")
    res = align(run=runs["enfr"], src_lang="en", tgt_lang="fr", train_dict=tmp_path / "dict.txt", refine=1,
                normalize="renorm,center,renorm", out=tmp_path / "al", device="cpu")
    assert (res.src_lang, res.tgt_lang, res.side) == ("en", "fr", "input")
    src_words, src = read_vec(tmp_path / "al" / "src.aligned.vec")
    tgt_words, tgt = read_vec(tmp_path / "al" / "tgt.vec")
    for applied in (load(runs["enfr"], device="cpu").apply_alignment(tmp_path / "al"),
                    load(runs["enfr"], device="cpu").apply_alignment(res)):
        for word in ("dog", "the", "garden"):
            for method in ("cosine", "csls"):
                cos = _brute_cosine(src[src_words.index(word)], tgt)
                if method == "csls":  # MUSE's CSLS over the two exported files, knn 10
                    unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
                    knn = min(10, len(src_words))
                    r_t = np.sort(unit(tgt) @ unit(src).T, axis=1)[:, -knn:].mean(axis=1)
                    r_s = np.sort(cos)[-min(10, len(tgt_words)):].mean()
                    cos = 2 * cos - r_s - r_t
                got = applied.most_similar(word, "en", 5, among="fr", method=method)
                assert [w for w, _ in got] == [tgt_words[i] for i in np.argsort(-cos, kind="stable")[:5]]
                assert np.allclose([s for _, s in got], np.sort(cos)[::-1][:5], atol=1e-5)
        # A vector of the run's space is mapped as align maps: a vocabulary word's raw vector lands
        # on its aligned row, so an unseen word is mapped by the same map.
        raw = applied.vector("dog", "en")
        assert [w for w, _ in applied.most_similar(raw, "en", 5, among="fr")] == \
            [w for w, _ in applied.most_similar("dog", "en", 5, among="fr")]
        assert len(applied.most_similar("doggy", "en", 3, among="fr")) == 3
        assert applied.similarity("dog", "chien", "en", "fr") == pytest.approx(
            float(_brute_cosine(src[src_words.index("dog")], tgt[[tgt_words.index("chien")]])[0]), abs=1e-5)
        with pytest.raises(InputError, match="aligns the input side"):
            applied.most_similar("dog", "en", among="fr", side="output")
    # An alignment of other vectors (another run, side or language) is refused, as are unknown languages.
    import dataclasses

    with pytest.raises(InputError, match="not this run's input vectors mapped"):
        load(runs["enfr"], device="cpu").apply_alignment(dataclasses.replace(res, mapped=res.mapped * 1.01))
    with pytest.raises(InputError, match="words are not this run's fr vocabulary"):
        load(runs["enfr"], device="cpu").apply_alignment(res, src_lang="fr", tgt_lang="en")
    with pytest.raises(InputError, match="'de' is not in this run"):
        load(runs["enfr"], device="cpu").apply_alignment(res, tgt_lang="de")


# ----------------------------------------------------------------------------------- probabilities


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_log_prob_over_a_split_is_evaluates_nll(runs: dict[str, Path], kind: str) -> None:
    from polyglot_groc.analysis.workflows import evaluate

    run = runs[kind]
    model = load(run, device="cpu")
    text = (runs["data"] / "en" / "test.txt").read_text(encoding="utf-8")
    ev = evaluate(run=run, split="test", batch_size=1, device="cpu")
    assert ev.details is not None
    nll, n = ev.details["en"]["nll"], ev.details["en"]["n_tokens"]
    scored = model.token_log_probs(text, "en", start=None, streams=1)  # the split as evaluate reads it
    assert len(scored.tokens) == n
    assert -scored.log_prob == pytest.approx(nll * n, rel=1e-6)
    assert scored.perplexity == pytest.approx(ev.perplexity["en"], rel=1e-6)
    # Text with new words: GroC composes them, a lookup output needs the uniform share; either way
    # evaluate's open-vocabulary figure on the same text.
    unseen = (runs["unseen"] / "en" / "test.txt").read_text(encoding="utf-8")
    weight = None if model.composes("output") else 0.01
    opened = evaluate(run=run, data=runs["unseen"], split="test", batch_size=1, uniform_weight=weight, device="cpu")
    got = model.perplexity(unseen, "en", start=None, streams=1, uniform_weight=weight)
    assert got == pytest.approx(opened.perplexity["en"], rel=1e-6)


def test_default_reading_scores_every_token_once_and_lines_alone(runs: dict[str, Path]) -> None:
    from groc_base.errors import InputError

    model = load(runs["groc"], device="cpu")
    text = TEXT[:200]
    n_tokens = sum(len(line.split()) + 1 for line in text.splitlines() if line.strip())
    whole = model.token_log_probs(text, "en", streams=1)
    parts = model.token_log_probs(text, "en", streams=3)  # three pieces side by side, cut at sentence ends
    assert len(whole.tokens) == len(parts.tokens) == n_tokens and whole.tokens == parts.tokens
    assert np.isfinite(parts.log_probs).all() and parts.log_prob == pytest.approx(whole.log_prob, rel=0.05)
    # Lines side by side in padded batches score as each line alone (here: no new word in the input,
    # so every line is scored over the same vocabulary).
    lines = [line for line in TEXT.splitlines()[:6]] + ["", "our old dog likes a cat . the river sees the cat ."]
    batched = model.score_lines(lines, "en")
    assert batched[6].tokens == 0 and batched[6].log_prob is None and batched[7].tokens == 14
    for line, got in zip([*lines[:6], lines[7]], [*batched[:6], batched[7]], strict=True):
        assert got.log_prob == pytest.approx(model.log_prob(line, "en", streams=1), rel=1e-6, abs=1e-6)
        assert got.perplexity == pytest.approx(math.exp(-got.log_prob / got.tokens))
    # New words join the vocabulary the input is scored over (evaluate's rule for a file).
    assert model.score_lines(["the zebra sees a dog .", "a zebra ."], "en")[0].new_words == 1
    with pytest.raises(InputError, match="the text is empty"):
        model.log_prob(" \n\n", "en")
    tied = load(runs["tied"], device="cpu")
    with pytest.raises(InputError, match=r"'zebra'.*probability 0.*uniform_weight"):
        tied.log_prob("the zebra sees a dog .", "en")
    assert math.isfinite(tied.log_prob("the zebra sees a dog .", "en", uniform_weight=0.01))


def test_text_pieces_cover_every_target_once() -> None:
    tokens = "<eos> a b <eos> c <eos> d e f <eos> g <eos>".split()
    for streams in (1, 2, 3, 5, 50):
        pieces = text_pieces(tokens, streams)
        targets = np.concatenate([np.arange(a + 1, b) for a, b in pieces])
        assert np.array_equal(targets, np.arange(1, len(tokens)))
        assert all(tokens[a] == "<eos>" for a, _ in pieces[1:]) and len(pieces) <= streams


# ----------------------------------------------------------------------------------- words training never saw


def test_a_lookup_run_refuses_the_words_its_training_never_saw(closed_runs: dict[str, Path]) -> None:
    """A closed vocabulary holds the test split's words; a tied run's rows of them are untrained: refused
    by name, left out of the words searched, served only when allowed."""
    from groc_base.errors import InputError

    tied = load(closed_runs["tied"], device="cpu")
    trained = set(CLOSED_TRAIN.split())
    assert set(tied.words()) == trained and TEST_ONLY <= set(tied.words(allow_untrained=True))
    assert "Home-Scale" not in tied and "cat" in tied and len(tied) == len(trained)
    said = (r"'Home-Scale' is a word of this tied run's vocabulary but was never seen in training: "
            r".*allow_untrained=True")
    for ask in (lambda: tied["Home-Scale"], lambda: tied.vector("Home-Scale", "en"),
                lambda: tied.similarity("cat", "Home-Scale"), lambda: tied.most_similar("Home-Scale"),
                lambda: tied.most_similar("cat", among=["dog", "Home-Scale"]),
                lambda: tied.to_keyed_vectors(words=["cat", "Home-Scale"])):
        with pytest.raises(InputError, match=said) as err:
            ask()
        assert isinstance(err.value, KeyError) and len(str(err.value).splitlines()) == 1
    # Allowed, the untrained row is served (and its cached copy does not leak into a later refusal).
    row = tied.vector("Home-Scale", allow_untrained=True)
    assert row.shape == (16,) and np.array_equal(row, tied.vectors(["Home-Scale"], allow_untrained=True)[0])
    with pytest.raises(InputError, match=said):
        tied["Home-Scale"]
    # Neighbours come from the words training saw, unless asked otherwise.
    assert {w for w, _ in tied.most_similar("cat", topn=50)} == trained - {"cat"}
    assert TEST_ONLY <= {w for w, _ in tied.most_similar("cat", topn=50, allow_untrained=True)}
    assert tied.to_keyed_vectors().index_to_key == tied.words()


def test_a_compositional_run_composes_the_test_words_of_its_closed_vocabulary(closed_runs: dict[str, Path]) -> None:
    """GroC has no untrained rows: a closed vocabulary's test words are composed, queries and answers alike."""
    groc = load(closed_runs["groc"], device="cpu")
    assert TEST_ONLY <= set(groc.words()) and "Home-Scale" in groc and groc.words() == groc.words(allow_untrained=True)
    assert groc["Home-Scale"].shape == (16,)
    assert TEST_ONLY <= {w for w, _ in groc.most_similar("cat", topn=50)}
    assert "Home-Scale" not in {w for w, _ in groc.most_similar("Home-Scale", topn=50)}


def test_a_run_saved_before_training_counts_were_recorded_reads_them_from_its_corpus(
        closed_runs: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Backward compatibility: a checkpoint without ``train_counts`` is read against its corpus's training
    split; where that text is gone, a warning, and every word counts as seen (as before)."""
    from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint

    data = shutil.copytree(closed_runs["data"], tmp_path / "data")
    run = shutil.copytree(closed_runs["tied"], tmp_path / "tied")
    payload = load_checkpoint(run / "best.pt")
    assert "train_counts" in payload["bundle"]["vocab"]
    del payload["bundle"]["vocab"]["train_counts"]
    payload["bundle"]["config"]["data"]["root"] = str(data)
    save_checkpoint(run / "best.pt", payload)
    old = load(run, device="cpu")
    assert old.bundle.vocab.train_counts is None
    assert old.words() == load(closed_runs["tied"], device="cpu").words()
    with pytest.raises(KeyError, match="never seen in training"):
        old["Home-Scale"]
    shutil.rmtree(data)
    with caplog.at_level(logging.WARNING):
        gone = load(run, device="cpu")
        assert gone["Home-Scale"].shape == (16,) and TEST_ONLY <= set(gone.words())
    assert any("every word counts as seen in training" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------------- gensim's hand


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def test_the_model_reads_like_gensim(closed_runs: dict[str, Path], runs: dict[str, Path]) -> None:
    from groc_base.errors import InputError

    groc = load(closed_runs["groc"], device="cpu")  # one language: no lang anywhere
    assert groc.lang == "en" and np.array_equal(groc["cat"], groc.vector("cat", "en"))
    assert np.array_equal(groc[["cat", "dog"]], groc.vectors(["cat", "dog"], "en"))
    assert list(groc) == groc.words() and len(groc) == len(groc.words()) and "<eos>" not in groc
    # positive/negative: gensim's mean of unit vectors, made unit; the query words are left out.
    words = groc.words()
    unit = _unit(groc.vectors(words))
    at = {w: i for i, w in enumerate(words)}
    q = _unit((unit[at["cat"]] + unit[at["river"]] - unit[at["dog"]]) / 3)
    cos = unit @ q
    order = [i for i in np.argsort(-cos, kind="stable") if words[i] not in ("cat", "river", "dog")][:4]
    got = groc.most_similar(positive=["cat", "river"], negative=["dog"], topn=4)
    assert [w for w, _ in got] == [words[i] for i in order] and np.allclose([v for _, v in got], cos[order], atol=1e-5)
    kv = groc.to_keyed_vectors()
    assert [w for w, _ in kv.most_similar(positive=["cat", "river"], negative=["dog"], topn=4)] == [w for w, _ in got]
    # A vector term is used as given (and is not left out: only words are); a single word is the query itself.
    cos = unit @ _unit(groc["cat"] + unit[at["river"]])
    order = [i for i in np.argsort(-cos, kind="stable") if words[i] != "river"][:3]
    assert [w for w, _ in groc.most_similar(positive=[groc["cat"], "river"], topn=3)] == [words[i] for i in order]
    assert groc.most_similar("cat", topn=3) == groc.most_similar(positive=["cat"], topn=3)
    with pytest.raises(InputError, match="cancel out"):
        groc.most_similar(positive=["cat"], negative=["cat"])
    with pytest.raises(InputError, match="needs a query"):
        groc.most_similar()
    # A polyglot run: a default language, or lang in the call.
    enfr = load(runs["enfr"], device="cpu")
    with pytest.raises(InputError, match=r"2 languages \(en, fr\).*model.lang = 'en'"):
        enfr["dog"]
    assert len(enfr) == len(set(enfr.words("en")) | set(enfr.words("fr")))
    enfr.lang = "fr"
    assert np.array_equal(enfr["chien"], enfr.vector("chien", "fr")) and len(enfr) == len(enfr.words("fr"))
    assert load(runs["enfr"], device="cpu", lang="en").most_similar("dog", topn=3) == \
        enfr.most_similar("dog", "en", 3)
    with pytest.raises(InputError, match="language 'de' is not in this run"):
        load(runs["enfr"], device="cpu", lang="de")


def test_keyed_vectors_keep_composing_and_save_as_gensim_s_own(closed_runs: dict[str, Path], tmp_path: Path) -> None:
    from gensim.models import KeyedVectors

    groc = load(closed_runs["groc"], device="cpu")
    kv = groc.to_keyed_vectors()
    assert isinstance(kv, KeyedVectors) and kv.index_to_key == groc.words()
    # A word the keys lack is composed through the run (FastTextKeyedVectors' contract).
    assert "kompyuter" in kv and "kompyuter" not in kv.key_to_index and not kv.has_index_for("kompyuter")
    assert np.array_equal(kv["kompyuter"], groc["kompyuter"])
    assert np.allclose(kv.get_vector("kompyuter", norm=True), _unit(groc["kompyuter"]))
    composed = groc.most_similar("kompyuter", topn=3)
    assert [w for w, _ in kv.most_similar("kompyuter", topn=3)] == [w for w, _ in composed]
    assert kv.similarity("kompyuter", "cat") == pytest.approx(groc.similarity("kompyuter", "cat"), abs=1e-6)
    assert "собака" not in kv  # an unseen script: no vector
    # Saved, it is a plain KeyedVectors of its keys.
    kv.save(str(tmp_path / "en.kv"))
    back = KeyedVectors.load(str(tmp_path / "en.kv"))
    assert type(back) is KeyedVectors and back.index_to_key == kv.index_to_key
    assert np.array_equal(back.vectors, kv.vectors) and "kompyuter" not in back
    # A lookup side composes nothing: a word outside the keys is a KeyError.
    tied = load(closed_runs["tied"], device="cpu").to_keyed_vectors()
    assert "kompyuter" not in tied and "Home-Scale" not in tied
    with pytest.raises(KeyError, match="outside this tied run's vocabulary"):
        tied["kompyuter"]
    with pytest.raises(KeyError, match="never seen in training"):
        tied["Home-Scale"]


def test_the_first_vocabulary_wide_search_says_what_it_builds(closed_runs: dict[str, Path],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    groc = load(closed_runs["groc"], device="cpu")
    with caplog.at_level(logging.INFO, logger="polyglot_groc.analysis.neighbour_search"):
        groc.most_similar("cat")
        groc.most_similar("dog", method="csls")
    notes = [r.getMessage() for r in caplog.records if "once" in r.getMessage()]
    assert notes == [f"composing the {len(groc):,} words of en's vocabulary (input side) once; later searches "
                     "reuse them"]


def test_one_name_per_option_with_the_old_names_still_read(runs: dict[str, Path], tmp_path: Path) -> None:
    from groc_base.errors import InputError

    run = runs["enfr"]
    with pytest.warns(FutureWarning, match="which= is deprecated and will be removed in the next release; "
                                           "use checkpoint=") as caught:
        assert load(run, which="last", device="cpu").checkpoint == "last"
    assert caught[0].filename == __file__  # the warning points at the caller's line
    with pytest.raises(InputError, match="disagree"):
        load(run, checkpoint="last", which="best", device="cpu")
    new = runner.invoke(app, ["neighbours", str(run), "dog", "--lang", "en", "--among", "fr", "--topn", "3"])
    old = runner.invoke(app, ["neighbours", str(run), "dog", "--lang", "en", "--in", "fr", "--topn", "3"])
    assert new.exit_code == old.exit_code == 0 and json.loads(new.stdout) == json.loads(old.stdout)
    assert old.stderr.strip() == "warning: --in is deprecated and will be removed in the next release; use --among"
    gone = runner.invoke(app, ["neighbours", str(run), "dog", "--lang", "en", "--among", "fr", "--align",
                               str(tmp_path / "none")])
    assert gone.exit_code == 2
    assert "warning: --align is deprecated and will be removed in the next release; use --alignment" in gone.stderr


def test_the_neighbours_command_on_a_closed_vocabulary(closed_runs: dict[str, Path]) -> None:
    tied = str(closed_runs["tied"])
    line = one_error_line(runner.invoke(app, ["neighbours", tied, "Home-Scale"]))
    assert "'Home-Scale' is a word of this tied run's vocabulary but was never seen in training" in line
    assert "--allow-untrained" in line and "allow_untrained=" not in line
    res = runner.invoke(app, ["neighbours", tied, "cat", "--topn", "50"])  # a one-language run: no --lang
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["lang"] == "en" and not out["allow_untrained"]
    assert {n["word"] for n in out["neighbours"]} == set(CLOSED_TRAIN.split()) - {"cat"}
    res = runner.invoke(app, ["neighbours", tied, "Home-Scale", "--allow-untrained", "--topn", "3"])
    assert res.exit_code == 0 and json.loads(res.stdout)["allow_untrained"]


# ----------------------------------------------------------------------------------- the CLI


def test_neighbours_and_score_commands(runs: dict[str, Path], tmp_path: Path) -> None:
    run = runs["enfr"]
    res = runner.invoke(app, ["neighbours", str(run), "doggy", "--lang", "en", "--among", "fr", "--topn", "3"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    expected = load(run, device="cpu").most_similar("doggy", "en", 3, among="fr")
    assert out["composed"] and [n["word"] for n in out["neighbours"]] == [w for w, _ in expected]
    (tmp_path / "in.txt").write_text("the dog sees the garden .\n\nthe zebra .\n", encoding="utf-8")
    res = runner.invoke(app, ["score", str(run), "--lang", "en", "--input", str(tmp_path / "in.txt")])
    assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3] and records[1]["log_prob"] is None
    model = Model(load(run, device="cpu").bundle)
    expected = model.score_lines(["the dog sees the garden .", "", "the zebra ."], "en")
    assert [r["log_prob"] for r in records] == [s.log_prob for s in expected] and records[2]["new_words"] == 1
    piped = runner.invoke(app, ["score", str(run), "--lang", "en"], input="the dog sees the garden .\n")
    assert piped.exit_code == 0
    assert json.loads(piped.stdout)["log_prob"] == pytest.approx(model.log_prob("the dog sees the garden .", "en"))
    # Bad input: one line, exit 2.
    assert "'de' is not in this run" in one_error_line(runner.invoke(app, ["neighbours", str(run), "dog",
                                                                           "--lang", "de"]))
    assert "csls" in one_error_line(runner.invoke(app, ["neighbours", str(run), "dog", "--lang", "en",
                                                        "--method", "dot"]))
    assert "never saw" in one_error_line(runner.invoke(app, ["neighbours", str(run), "собака", "--lang", "en"]))
    assert "empty" in one_error_line(runner.invoke(app, ["score", str(run), "--lang", "en"], input="\n \n"))
    assert "no such file" in one_error_line(runner.invoke(app, ["score", str(run), "--lang", "en",
                                                                "--input", str(tmp_path / "nope.txt")]))
    assert "probability 0" in one_error_line(runner.invoke(app, ["score", str(runs["tied"]), "--lang", "en"],
                                                           input="the zebra .\n"))


def test_the_model_is_in_the_public_api() -> None:
    import polyglot_groc as pg

    assert pg.load.__wrapped__ is load and pg.Model is Model  # type: ignore[attr-defined]
    assert pg.neighbours.__module__ == "polyglot_groc.analysis.neighbours"
