"""Many languages in one space: map every language onto a pivot and score every pair with a dictionary.

:func:`align_many` is ``polyglot-groc align-many`` as a function.  Each non-pivot language ``L`` is
mapped onto the pivot ``P`` with the chosen method (:func:`eval.methods.fit_mapping`) from a
training dictionary ``L-P`` (or ``P-L``, read reversed); the pivot stays where it is (after the
``normalize`` chain).  All languages then share the pivot's space, so ANY two of them can be
compared: every evaluation dictionary ``A-B`` is scored on the mapped ``A`` and ``B`` (both
protocols, CSLS and nn), including pairs that never met in training (e.g. fr-es through en).
``vecmap`` moves the target space too, so it cannot share one pivot and is refused here.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import check_output, check_positive, in_cli, option
from groc_base.errors import InputError
from groc_base.fileio import atomic_output_dir, atomic_write, dumps_json, json_safe
from polyglot_groc.analysis.alignment import Vectors, read_side

logger = logging.getLogger(__name__)

__all__ = ["AlignManyResult", "align_many"]

KS = (1, 5, 10)


@dataclass(frozen=True)
class AlignManyResult:
    """What :func:`align_many` found: per language its training dictionary and fit, per evaluated pair its P@k.

    ``pairs["A-B"]`` holds ``eval_dictionary`` (coverage counts) and ``protocols`` (MUSE's and
    fastText's P@k, nn and csls, each with its own identical-string and char 3-gram baselines and
    the identical / non-identical gold split, as ``align`` reports them).  The mapped spaces
    (``spaces``: words and vectors per language, all in the pivot's space) are in memory only;
    :meth:`to_dict` is the JSON the command prints.
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
        """The P@k table printed on stderr: per evaluated pair and protocol, CSLS P@1/5/10 beside that
        protocol's own identical-string and char 3-gram baselines, and CSLS on the words whose gold
        is not the word itself."""
        def cell(res: dict[str, Any]) -> str:
            return " / ".join("  -  " if res[f"precision_at_{k}"] is None else f"{res[f'precision_at_{k}']:5.1f}"
                              for k in KS)

        lines = [f"{'pair':<9} {'protocol':<9} {'csls P@1/5/10':<21} {'identical string':<21} "
                 f"{'char 3-grams':<21} {'csls, other gold':<21} coverage"]
        for name, entry in self.pairs.items():
            for key, label in (("muse", "MUSE"), ("fasttext", "fastText")):
                proto = entry["protocols"][key]
                other = proto["split"]["non_identical_gold"]
                lines.append(f"{name:<9} {label:<9} {cell(proto['csls']):<21} "
                             f"{cell(proto['baselines']['identical_string']):<21} "
                             f"{cell(proto['baselines']['char_ngram']):<21} {cell(other['csls']):<21} "
                             f"{100 * proto.get('coverage', 1.0):5.1f}%")
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
    train_dicts: Mapping[str, str | os.PathLike[str]],
    eval_dicts: Mapping[str, str | os.PathLike[str]] | None = None,
    method: str = "procrustes",
    normalize: str = "",
    refine: int | None = None,
    max_vocab: int | None = 200_000,
    keep_case: bool = False,
    knn: str = "exact",
    lenient: bool = False,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    threads: int | None = None,
) -> AlignManyResult:
    """Map several languages onto ``pivot``'s space and report P@k for every pair with an evaluation dictionary.

    Args:
        vectors: language -> its vectors (a word2vec file, or words and vectors in memory).
        pivot: the language whose space all others are mapped onto; must be in ``vectors``.
        train_dicts: ``"L-P"`` or ``"P-L"`` -> a MUSE dictionary, one per non-pivot language ``L``
            (a ``P-L`` dictionary is read reversed).
        eval_dicts: ``"A-B"`` -> a test dictionary, for any two languages of ``vectors``.
        method: ``procrustes`` or ``rcsls`` (``vecmap`` moves the pivot too and is refused).
        normalize: the chain of :func:`polyglot_groc.analysis.alignment.align`, applied to every language.
        refine: ``procrustes`` refinement rounds (None: 5); refused with ``rcsls``.
        max_vocab: read at most N words per language.
        keep_case: keep every word as written (default lowercases, first occurrence wins).
        knn: CSLS ranking, ``exact`` or ``approximate``.
        lenient: skip malformed dictionary lines.
        out: output directory (``<lang>.vec`` in the shared space, ``W-<lang>.npy``, ``result.json``),
            written all or none; None: write nothing.
        overwrite: replace an existing, non-empty ``out``.
        threads: CPU threads for torch (None or 0: torch's default).

    Returns:
        An :class:`AlignManyResult`; its ``to_dict()`` is the JSON ``polyglot-groc align-many`` prints.

    Raises:
        InputError: fewer than two languages, a pivot without vectors, a language without a
            training dictionary to the pivot, a badly named pair, ``vecmap``, bad method options,
            an existing ``out`` without ``overwrite``.
    """
    from eval.align import KNN_MODES, pairs_to_indices
    from eval.methods import check_method_options, fit_mapping, resolve_normalize
    from eval.normalize import normalize_embeddings, parse_normalize
    from langpairs.dictionaries import read_dictionary
    from polyglot_groc.analysis.alignment_report import Side, evaluate_protocols

    # Every option is checked before anything is read or written.
    langs = set(vectors)
    if len(langs) < 2:
        raise InputError(f"align-many needs vectors of at least two languages: {option('vectors')} LANG=FILE, "
                         "one per language")
    if pivot not in langs:
        raise InputError(f"{option('pivot', pivot)} has no vectors; add {_mapping_entry('vectors', pivot, 'FILE')} "
                         f"or pick one of {', '.join(sorted(langs))}")
    if method == "vecmap":
        raise InputError(f"{option('method', 'vecmap')} moves the target space too, so languages cannot share one "
                         f"pivot; use {option('method', 'procrustes')} or rcsls with align-many")
    check_method_options(method, refine, "criterion")
    parse_normalize(normalize)
    check_positive(max_vocab=max_vocab)
    if knn not in KNN_MODES:
        raise InputError(f"{option('knn', knn)} is unknown; use exact or approximate")
    train_for: dict[str, tuple[Path, bool]] = {}  # language -> (dictionary, read reversed)
    for key, path in train_dicts.items():
        a, b = _pair_key(key, langs, "train_dicts")
        if pivot not in (a, b):
            raise InputError(f"{option('train_dicts')} {key!r} does not involve the pivot {pivot!r}; align-many "
                             f"maps every "
                             f"language onto the pivot: give {a}-{pivot} or {pivot}-{a} dictionaries")
        other = b if a == pivot else a
        if other in train_for:
            raise InputError(f"two training dictionaries for {other!r}; give one per language")
        train_for[other] = (Path(path), a == pivot)
    missing = sorted(langs - {pivot} - set(train_for))
    if missing:
        raise InputError(f"no training dictionary for {missing[0]!r}; add "
                         f"{_mapping_entry('train_dicts', f'{missing[0]}-{pivot}', 'FILE')}")
    evals = {key: (_pair_key(key, langs, "eval_dicts"), Path(path)) for key, path in (eval_dicts or {}).items()}
    if out is not None:
        check_output(Path(out), overwrite, directory=True)
    if threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)  # NumPy's BLAS and faiss: no torch here
    lower = not keep_case

    spaces: dict[str, tuple[list[str], np.ndarray]] = {}
    maps: dict[str, np.ndarray] = {}
    info: dict[str, dict[str, Any]] = {}
    words_p, vecs_p = read_side(vectors[pivot], None, None, "input", max_vocab, "vectors", lower)
    ops = resolve_normalize(method, normalize)  # the chain fit_mapping applies: the pivot sits in the space mapped into
    spaces[pivot] = (words_p, np.ascontiguousarray(normalize_embeddings(vecs_p, ops), dtype=np.float32))
    info[pivot] = {"words": len(words_p), "pivot": True}
    for lang in sorted(langs - {pivot}):
        words, vecs = read_side(vectors[lang], None, None, "input", max_vocab, "vectors", lower)
        if vecs.shape[1] != vecs_p.shape[1]:
            raise InputError(f"{lang} vectors have dimension {vecs.shape[1]} but the pivot's {vecs_p.shape[1]}; "
                             "align embeddings of the same size")
        path, reverse = train_for[lang]
        pairs = read_dictionary(path, lower=lower, lenient=lenient)
        if reverse:
            pairs = [(b, a) for a, b in pairs]
        indices, stats = pairs_to_indices(pairs, words, words_p, lower=lower)
        res = fit_mapping(vecs, vecs_p, indices, method=method, normalize=ops,  # type: ignore[arg-type]
                          refine=refine, dico_max_rank=10000, knn_mode=knn)  # type: ignore[arg-type]
        spaces[lang] = (words, np.ascontiguousarray(res.map_source(vecs), dtype=np.float32))
        maps[lang] = np.asarray(res.W)
        info[lang] = {"words": len(words), "train_dictionary": {"path": str(path), "reversed": reverse, **stats},
                      "best_iteration": res.best_iteration,
                      "criterion": res.history[res.best_iteration]["criterion"]}
        logger.info("mapped %s onto %s (%s, %d training pairs)", lang, pivot, method, len(indices))
    scored: dict[str, dict[str, Any]] = {}
    for key, ((a, b), path) in evals.items():
        pairs = read_dictionary(path, lower=lower, lenient=lenient)
        stats_e, _, _, protocols = evaluate_protocols(pairs, Side(*spaces[a]), Side(*spaces[b]), lower=lower,
                                                      knn_mode=knn)  # type: ignore[arg-type]
        stats_e["path"] = str(path)
        scored[key] = {"eval_dictionary": stats_e, "protocols": protocols}
    result = AlignManyResult(pivot=pivot, method=method, normalize=",".join(ops), languages=info, pairs=scored,
                             out=str(out) if out is not None else None, spaces=spaces)
    if out is not None:
        _write(Path(out), result, maps, overwrite)
    return result


def _save_npy(array: np.ndarray, f: Any) -> None:
    np.save(f, array)


def _write(out: Path, result: AlignManyResult, maps: dict[str, np.ndarray], overwrite: bool) -> None:
    """``<lang>.vec`` (every language in the pivot's space), ``W-<lang>.npy``, ``result.json``: all or none."""
    from eval.vectors import write_vec

    text = dumps_json(result.to_dict(), indent=2) + "\n"
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        for lang, (words, vecs) in result.spaces.items():
            write_vec(tmp / f"{lang}.vec", words, vecs)
        for lang, w in maps.items():
            atomic_write(tmp / f"W-{lang}.npy", functools.partial(_save_npy, w))
        atomic_write(tmp / "result.json", lambda f: f.write(text.encode("utf-8")))
