"""Many languages in one space: map every language onto a pivot and score every pair with a dictionary.

:func:`align_many` is ``polyglot-groc align-many`` as a function.  Each non-pivot language ``L`` is
mapped onto the pivot ``P`` with the chosen method (:func:`eval.methods.fitting.fit_mapping`) from a
training dictionary ``L-P`` (or ``P-L``, read reversed); the pivot stays where it is (after the
``normalize`` chain).  All languages then share the pivot's space, so ANY two of them can be
compared: every evaluation dictionary ``A-B`` is scored on the mapped ``A`` and ``B`` (both
protocols, CSLS and nn, every baseline including no mapping), including pairs that never met in
training (e.g. fr-es through en), and reported as ``align`` reports one pair
(:func:`~polyglot_groc.analysis.alignment_report.report_lines`). A method that moves the target
space too (``vecmap``) cannot share one pivot and is refused here. Progress is logged per
language (INFO); a test dictionary that shares pairs with a training dictionary of its two
languages (either direction) is warned about, and refused above 5% unless ``allow_overlap``.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.methods.registry import FitContext, MethodConfig, build_config, get_method, method_names, resolve_normalize
from groc_base.checks import check_non_negative, check_output, check_positive, check_seed, in_cli, option
from groc_base.errors import InputError
from groc_base.fileio import atomic_output_dir, atomic_write, dumps_json, json_safe
from polyglot_groc.analysis.alignment import (
    Vectors,
    check_aligned,
    check_judged,
    read_pairs,
    read_side,
)
from polyglot_groc.analysis.alignment_starts import Start, StartInputs, get_start, method_for

logger = logging.getLogger(__name__)

__all__ = ["AlignManyResult", "align_many"]


@dataclass(frozen=True)
class AlignManyResult:
    """What :func:`align_many` found: per language its training dictionary and fit, per evaluated pair its P@k.

    ``pairs["A-B"]`` holds ``eval_dictionary`` (coverage counts, and ``train_overlap`` where a
    training dictionary links A and B) and ``protocols`` (MUSE's and fastText's P@k, nn and csls,
    each with its own identical-string, char 3-gram and no-mapping baselines and the identical /
    non-identical gold split, as ``align`` reports them).  The mapped spaces (``spaces``: words and
    vectors per language, all in the pivot's space) are in memory only; :meth:`to_dict` is the
    JSON the command prints.
    """

    pivot: str
    method: str
    normalize: str
    languages: dict[str, dict[str, Any]]
    pairs: dict[str, dict[str, Any]]
    out: str | None = None
    spaces: dict[str, tuple[list[str], np.ndarray]] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return json_safe({"pivot": self.pivot, "method": self.method, "normalize": self.normalize,  # type: ignore[return-value]
                          "languages": self.languages, "pairs": self.pairs, "out": self.out})

    def table(self) -> list[str]:
        """What ``align-many`` prints on stderr: a line per mapped language, then for every evaluated pair
        the report ``align`` prints (coverage as scored of asked, dropped pairs, the training overlap,
        each protocol's model and baselines, explained columns)."""
        from polyglot_groc.analysis.alignment_report import report_lines, verdict_lines

        lines = []
        for lang, info in self.languages.items():
            if info.get("pivot"):
                continue
            train = info["train_dictionary"]
            seed = (f"{train['found']} of {train['pairs']} training pairs" if "pairs" in train
                    else f"--dictionary-mode {train['seed']} ({train['found']} seed pairs)")
            lines.append(f"{lang}: mapped onto {self.pivot} ({self.method}) from {seed}; criterion "
                         f"{info['criterion']:.4f}")
            lines += ["  " + line for line in verdict_lines(info.get("verdict"))]
        for name, entry in self.pairs.items():
            a, b = name.split("-")
            lines.append(f"{name}: {a} -> {b}, both in {self.pivot}'s space")
            lines += ["  " + line for line in report_lines(entry["eval_dictionary"], entry["protocols"])]
        return lines


def _mapping_entry(name: str, key: str, value: str) -> str:
    """One entry of a mapping option as the user gives it: ``--vectors fr=FILE`` or ``vectors={'fr': FILE}``."""
    if in_cli():
        return f"{option(name)} {key}={value}"
    return f"{name}={{{key!r}: {value}}}"


def _pair_key(key: str, langs: set[str], name: str) -> tuple[str, str]:
    flag = option(name)
    parts = key.split("-")
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError(f"{flag} {key!r}: name the pair SRC-TGT, e.g. fr-en (a fr-en dictionary file)")
    unknown = [lang for lang in parts if lang not in langs]
    if unknown:
        raise InputError(f"{flag} {key!r}: no vectors for {unknown[0]!r}; add "
                         f"{_mapping_entry('vectors', unknown[0], 'FILE')} (languages given: "
                         f"{', '.join(sorted(langs))})")
    return parts[0], parts[1]


def align_many(
    *,
    vectors: Mapping[str, Vectors],
    pivot: str,
    train_dicts: Mapping[str, str | os.PathLike[str]] | None = None,
    eval_dicts: Mapping[str, str | os.PathLike[str]] | None = None,
    dictionary_mode: str | None = None,
    method: str | None = None,
    method_config: MethodConfig | None = None,
    random_seed: int = 0,
    require_aligned: bool = False,
    normalize: str | None = None,
    refine: int | None = None,
    max_vocab: int | None = 200_000,
    keep_case: bool = False,
    knn: str = "exact",
    lenient: bool = False,
    allow_overlap: bool = False,
    export_mapped: bool = False,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
) -> AlignManyResult:
    """Map several languages onto ``pivot``'s space and report P@k for every pair with an evaluation dictionary.

    Args:
        vectors: language -> its vectors (a word2vec file, or words and vectors in memory).
        pivot: the language whose space all others are mapped onto; must be in ``vectors``.
        train_dicts: ``"L-P"`` or ``"P-L"`` -> a MUSE dictionary, one per non-pivot language ``L``
            (a ``P-L`` dictionary is read reversed); a language without one starts from ``dictionary_mode``.
        eval_dicts: ``"A-B"`` -> a test dictionary, for any two languages of ``vectors``.
        dictionary_mode: the start of the languages without a training dictionary, as ``align``'s:
            ``identical``, ``lexicon``, or ``unsupervised``/``adversarial`` (no dictionary at all; then
            no ``train_dicts``).
        method: a method of :mod:`eval.methods` that leaves the target where it is: ``procrustes``,
            ``rcsls``, ``muse-adversarial``, or VecMap's self-learning methods, whose final map is then
            orthogonal (``vecmap`` moves the pivot too and is refused); None: ``procrustes``, or the
            start's own method (``vecmap-unsupervised`` for ``unsupervised``).
        method_config: the method's config (None: its reference's defaults).
        random_seed: the seed of a method that draws (as ``align``'s).
        require_aligned: refuse (UnalignedError, nothing written) any language whose map its method
            judges doubtful or failed.
        normalize: the chain of :func:`polyglot_groc.analysis.alignment.align`, applied to every language
            (None: the method's reference, as ``align``'s: none for procrustes, renorm for rcsls,
            renorm,center,renorm for VecMap's self-learning).
        refine: shorthand of ``ProcrustesConfig.refine`` (None: 5); refused with ``rcsls``.
        max_vocab: read at most N words per language.
        keep_case: keep every word as written (default lowercases, first occurrence wins).
        knn: CSLS ranking, ``exact`` or ``approximate``.
        lenient: skip malformed dictionary lines.
        allow_overlap: score a pair even when more than 5% of its test pairs are training pairs.
        export_mapped: also write ``<lang>.vec``, every language's vocabulary in the pivot's space
            (hundreds of MB for large vocabularies; the maps ``W-<lang>.npy`` are always written).
        out: output directory (``W-<lang>.npy``, ``result.json``, with ``export_mapped`` the
            ``<lang>.vec``), written all or none; None: write nothing.
        overwrite: replace an existing, non-empty ``out``.
        threads: CPU threads for the BLAS and OpenMP pools (None or 0: their default).

    Returns:
        An :class:`AlignManyResult`; its ``to_dict()`` is the JSON ``polyglot-groc align-many`` prints.

    Raises:
        InputError: fewer than two languages, a pivot without vectors, a language without a
            training dictionary to the pivot and no ``dictionary_mode``, a badly named pair, ``vecmap``,
            bad method options, too many test pairs that are training pairs, an existing ``out`` without
            ``overwrite``;
        UnalignedError: ``require_aligned`` and a language's verdict is doubtful or failed.
    """
    check_non_negative(threads=threads)  # the arguments' own checks before any about the inputs
    check_seed(random_seed=random_seed)
    plan = _plan(vectors, pivot, train_dicts or {}, eval_dicts, dictionary_mode, method, method_config, refine,
                 normalize, max_vocab, knn, require_aligned)
    if out is not None:
        check_output(Path(out), overwrite, directory=True)
    if threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)  # NumPy's BLAS and faiss: no torch here
    lower = not keep_case
    train = {lang: read_pairs(path, lower=lower, lenient=lenient, reverse=rev) for lang, (path, rev) in
             plan.train_for.items()}
    tests = {key: read_pairs(path, lower=lower, lenient=lenient, reverse=False)
             for key, (_, path) in plan.evals.items()}
    overlaps = _overlaps(plan, train, tests, allow_overlap)  # before any vectors: a refusal costs nothing
    context = FitContext(knn_mode=knn, criterion=True, supervised=not plan.starts, lowercase=lower,
                         max_vocab=max_vocab, seed=random_seed, normalize=plan.ops, keep_target=True)
    spaces, unmapped, maps, info = _map_languages(plan, vectors, train, context, lower, max_vocab, require_aligned)
    scored = _score_pairs(plan, tests, spaces, unmapped, overlaps, lower, knn)
    result = AlignManyResult(pivot=pivot, method=plan.method, normalize=",".join(plan.ops), languages=info,
                             pairs=scored, out=str(out) if out is not None else None, spaces=spaces)
    if out is not None:
        _write(Path(out), result, maps, overwrite, export_mapped)
    return result


@dataclass(frozen=True)
class _Plan:
    """An align-many call's options, checked before anything is read."""

    pivot: str
    method: str
    config: Any
    ops: tuple[str, ...]
    train_for: dict[str, tuple[Path, bool]]  # language -> (dictionary, read reversed)
    evals: dict[str, tuple[tuple[str, str], Path]]
    start: Start | None = None  # the languages without a training dictionary start here
    starts: tuple[str, ...] = ()  # those languages


def _plan(vectors: Mapping[str, Vectors], pivot: str, train_dicts: Mapping[str, Any], eval_dicts: Any,
          dictionary_mode: str | None, method: str | None, method_config: Any, refine: int | None,
          normalize: str | None,
          max_vocab: int | None, knn: str, require_aligned: bool) -> _Plan:
    """Every option checked before anything is read or written."""
    from eval.align import KNN_MODES
    from eval.methods.registry import Plan

    langs = set(vectors)
    if len(langs) < 2:
        raise InputError(f"align-many needs vectors of at least two languages: {option('vectors')} LANG=FILE, "
                         "one per language")
    if pivot not in langs:
        raise InputError(f"{option('pivot', pivot)} has no vectors; add {_mapping_entry('vectors', pivot, 'FILE')} "
                         f"or pick one of {', '.join(sorted(langs))}")
    start = get_start(dictionary_mode) if dictionary_mode is not None else None
    if start is not None and start.pairs is None and train_dicts:
        raise InputError(f"{option('dictionary_mode', start.name)} starts without a dictionary; drop "
                         f"{option('train_dicts')} (or the mode, to start from the dictionaries)")
    method = method or method_for(None, dictionary_mode, train_dicts or None)
    spec = get_method(method)
    config = build_config(method, method_config, {"refine": refine})
    if spec.check is not None:  # first: a method that can keep the pivot says which of its settings moves it
        spec.check(config, Plan(eval_dictionary=bool(eval_dicts), supervised=bool(train_dicts), pivot=True))
    if spec.moves(config, pivot=True):
        staying = method_names(where=lambda m: not m.moves_target or m.keeps_pivot is not None)
        raise InputError(f"{option('method', method)} moves the target space too, so languages cannot share one "
                         f"pivot; use {option('method', staying[0])} or {', '.join(staying[1:])} with align-many")
    check_judged(spec, require_aligned)
    ops = resolve_normalize(method, normalize)  # the chain the fit applies: the pivot sits in the space mapped into
    check_positive(max_vocab=max_vocab)
    if knn not in KNN_MODES:
        raise InputError(f"{option('knn', knn)} is unknown; use exact or approximate")
    train_for: dict[str, tuple[Path, bool]] = {}
    for key, path in train_dicts.items():
        a, b = _pair_key(key, langs, "train_dicts")
        if pivot not in (a, b):
            raise InputError(f"{option('train_dicts')} {key!r} does not involve the pivot {pivot!r}; align-many "
                             f"maps every language onto the pivot: give {a}-{pivot} or {pivot}-{a} dictionaries")
        other = b if a == pivot else a
        if other in train_for:
            raise InputError(f"two training dictionaries for {other!r}; give one per language")
        train_for[other] = (Path(path), a == pivot)
    missing = sorted(langs - {pivot} - set(train_for))
    if missing and start is None:
        raise InputError(f"no training dictionary for {missing[0]!r}; add "
                         f"{_mapping_entry('train_dicts', f'{missing[0]}-{pivot}', 'FILE')} or "
                         f"{option('dictionary_mode')} (identical, lexicon, unsupervised, adversarial)")
    if missing and spec.needs_dictionary != (start is not None and start.pairs is not None):
        words = "gives no dictionary" if spec.needs_dictionary else "gives seed pairs"
        raise InputError(f"{option('dictionary_mode', start.name)} {words} and {option('method', method)} "  # type: ignore[union-attr]
                         f"{'fits one' if spec.needs_dictionary else 'starts without one'}: drop {option('method')}")
    if train_for and not spec.needs_dictionary:
        raise InputError(f"{option('method', method)} starts without a dictionary; drop {option('train_dicts')}")
    evals = {key: (_pair_key(key, langs, "eval_dicts"), Path(path)) for key, path in (eval_dicts or {}).items()}
    return _Plan(pivot, method, config, ops, train_for, evals, start, tuple(missing))


def _overlaps(plan: _Plan, train: dict[str, list[tuple[str, str]]], tests: dict[str, list[tuple[str, str]]],
              allow: bool) -> dict[str, dict[str, Any]]:
    """Each test dictionary's overlap with the training dictionary of its two languages (when one links them:
    a pair through the pivot has none), counted in either direction; refused above the limit unless ``allow``."""
    from polyglot_groc.analysis.alignment_report import check_overlap

    found = {}
    for key, ((a, b), path) in plan.evals.items():
        lang = a if b == plan.pivot else b if a == plan.pivot else None
        if lang is None:
            continue
        train_path = plan.train_for[lang][0]
        found[key] = check_overlap(train[lang], tests[key], allow=allow,
                                   what=f"{option('eval_dicts')} {key} {path} and {option('train_dicts')} {train_path}")
    return found


def _map_languages(plan: _Plan, vectors: Mapping[str, Vectors], train: dict[str, list[tuple[str, str]]],
                   context: FitContext, lower: bool, max_vocab: int | None, require_aligned: bool
                   ) -> tuple[dict[str, tuple[list[str], np.ndarray]], dict[str, np.ndarray], dict[str, np.ndarray],
                              dict[str, dict[str, Any]]]:
    """Every language read and normalised, the others mapped onto the pivot one by one (logged as they go):
    the mapped spaces, the normalised ones before the mapping (the no-mapping baseline), the maps, the facts."""
    from eval.methods.fitting import fit_mapping
    from eval.normalize import normalize_embeddings

    order = [plan.pivot, *sorted(set(vectors) - {plan.pivot})]
    spaces: dict[str, tuple[list[str], np.ndarray]] = {}
    unmapped: dict[str, np.ndarray] = {}
    maps: dict[str, np.ndarray] = {}
    info: dict[str, dict[str, Any]] = {}
    dim = None
    for step, lang in enumerate(order, start=1):
        started = time.perf_counter()
        words, vecs = read_side(vectors[lang], None, None, "input", max_vocab, "vectors", lower)
        if dim is not None and vecs.shape[1] != dim:
            raise InputError(f"{lang} vectors have dimension {vecs.shape[1]} but the pivot's {dim}; "
                             "align embeddings of the same size")
        dim = vecs.shape[1]
        vn = np.ascontiguousarray(normalize_embeddings(vecs, plan.ops, inplace=True) if plan.ops else vecs,
                                  dtype=np.float32)  # (n, d)
        unmapped[lang] = vn
        if lang == plan.pivot:
            spaces[lang] = (words, vn)
            info[lang] = {"words": len(words), "pivot": True}
            logger.info("[%d/%d] read the pivot %s: %d words (%.1fs)", step, len(order), lang, len(words),
                        time.perf_counter() - started)
            continue
        indices, train_info = _seed_of(plan, lang, train, words, spaces[plan.pivot][0], lower)
        res = fit_mapping(vn, spaces[plan.pivot][1], indices, method=plan.method, config=plan.config,
                          normalize="none", context=context)
        if require_aligned:
            check_aligned(res.verdict, f"{lang} onto {plan.pivot}")
        spaces[lang] = (words, np.ascontiguousarray(vn @ res.W.T, dtype=np.float32))
        maps[lang] = np.asarray(res.W)
        info[lang] = {"words": len(words), "train_dictionary": train_info, "best_iteration": res.best_iteration,
                      "criterion": res.best_criterion}
        if res.verdict is not None:
            info[lang]["verdict"] = res.verdict
        logger.info("[%d/%d] mapped %s onto %s (%s, %d seed pairs, %d words; %.1fs)", step, len(order), lang,
                    plan.pivot, plan.method, 0 if indices is None else len(indices), len(words),
                    time.perf_counter() - started)
    return spaces, unmapped, maps, info


def _seed_of(plan: _Plan, lang: str, train: dict[str, list[tuple[str, str]]], words: list[str],
             pivot_words: list[str], lower: bool) -> tuple[np.ndarray | None, dict[str, Any]]:
    """A language's seed pairs onto the pivot ``(n, 2)`` (None: a start without a dictionary) and what the JSON
    says of them: its training dictionary, else the start's pairs."""
    from eval.align import pairs_to_indices

    if lang in plan.train_for:
        path, reverse = plan.train_for[lang]
        indices, stats = pairs_to_indices(train[lang], words, pivot_words, lower=lower)
        return indices, {"path": str(path), "reversed": reverse, **stats}
    assert plan.start is not None
    if plan.start.pairs is None:
        return None, {"seed": plan.start.name, "found": 0}
    pairs = plan.start.pairs(StartInputs(words, pivot_words, lang, plan.pivot))
    return pairs, {"seed": plan.start.name, "found": int(len(pairs))}


def _score_pairs(plan: _Plan, tests: dict[str, list[tuple[str, str]]], spaces: dict[str, tuple[list[str], np.ndarray]],
                 unmapped: dict[str, np.ndarray], overlaps: dict[str, dict[str, Any]], lower: bool,
                 knn: str) -> dict[str, dict[str, Any]]:
    """Every test dictionary scored in the shared space, with the no-mapping baseline by nn (as ``align`` does
    for vector files: a CSLS search over a large vocabulary costs as much as the model's)."""
    from polyglot_groc.analysis.alignment_report import Side, evaluate_protocols

    scored: dict[str, dict[str, Any]] = {}
    for step, (key, ((a, b), path)) in enumerate(plan.evals.items(), start=1):
        started = time.perf_counter()
        src, tgt = Side(*spaces[a], unmapped[a]), Side(*spaces[b], unmapped[b])
        stats, _, _, protocols = evaluate_protocols(tests[key], src, tgt, lower=lower, knn_mode=knn,  # type: ignore[arg-type]
                                                    no_mapping=("nn",))
        stats["path"] = str(path)
        if key in overlaps:
            stats["train_overlap"] = overlaps[key]
        scored[key] = {"eval_dictionary": stats, "protocols": protocols}
        logger.info("[%d/%d] scored %s: %d of %d test pairs (%.1fs)", step, len(plan.evals), key, stats["found"],
                    stats["pairs"], time.perf_counter() - started)
    return scored


def _save_npy(array: np.ndarray, f: Any) -> None:
    np.save(f, array)


def _write(out: Path, result: AlignManyResult, maps: dict[str, np.ndarray], overwrite: bool,
           export_mapped: bool) -> None:
    """``W-<lang>.npy``, ``result.json`` and, with ``export_mapped``, ``<lang>.vec`` (every language in the
    pivot's space): all or none."""
    from eval.vectors import write_vec

    text = dumps_json(result.to_dict(), indent=2) + "\n"
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        if export_mapped:
            for lang, (words, vecs) in result.spaces.items():
                write_vec(tmp / f"{lang}.vec", words, vecs)
        for lang, w in maps.items():
            atomic_write(tmp / f"W-{lang}.npy", functools.partial(_save_npy, w))
        atomic_write(tmp / "result.json", lambda f: f.write(text.encode("utf-8")))
