"""Token features from a run's layers (AllenNLP's ``elmo`` command layout), word-type anchors, per-layer maps.

Layers (seed 004 §3.6, Peters et al. 2018): layer 0 is the input embedding of each token (the
char-CNN output for the character kinds), layer j the output of LSTM layer j. A ``bilm`` run's
layer j is ``[forward_j; backward_j]`` and its layer 0 ``[x; x]`` (the embedding duplicated to
the LSTM width, as ELMo does), so every layer is 2d wide. A forward-only run's layers are its
forward states; layers narrower than the widest (a plain prefix's middle layers are ``hidden``
wide) are zero-padded to it so that the layers stack.

Each sentence is read on its own from a zero state: forward as ``<eos> w1 .. wn`` (the boundary
the training text had before the line), backward as ``<eos> wn .. w1``; token i's state is the
one after reading w_i. Words outside the run's vocabulary are embedded from their spelling by
the character kinds; a lookup kind maps them to ``<unk>`` (or refuses without one).

Anchors (Schuster et al. 2019): a word type's anchor in layer j is the mean of its layer-j
vectors over a corpus. ``align`` on two runs' ``layer{j}.vec`` gives ``W(j)``; ``features
--align DIR`` maps layer j by ``h @ W(j).T`` (DIR/layer{j}/W.npy) before any mixing.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from groc_base.checks import check_output, check_positive, option
from groc_base.errors import InputError, ResourceMissingError
from groc_base.fileio import atomic_output_dir, dumps_json, write_then_rename
from groc_base.wording import agree, counted
from polyglot_groc.model.access import run_access_doc
from polyglot_groc.model.bundle import ModelBundle, load_bundle
from polyglot_groc.model.checkpoint import atomic_write_text
from polyglot_groc.model.device import use_threads
from polyglot_groc.model.vocab import EOS, UNK

log = logging.getLogger(__name__)

__all__ = ["AnchorsResult", "FeaturesResult", "LayerAlignResult", "align_layers", "anchors", "features",
           "layer_maps", "mix_layers", "read_sentences", "sentence_layers"]

PathLike = str | os.PathLike[str]
LAYER_CHOICES = ("all", "top", "average")


# --------------------------------------------------------------------------- reading


def read_sentences(path: PathLike, max_sentences: int | None = None) -> list[list[str]]:
    """Sentences of a plain-text file (one a line, whitespace-tokenised; blank lines skipped) or of a
    CoNLL-U file (``.conllu``/``.conllu.gz``: syntactic words, multiword ranges and empty nodes skipped)."""
    from groc_base.errors import CorpusError
    from langpairs.corpus import read_split

    path = Path(path)
    if not path.is_file():
        raise InputError(f"input {path} does not exist or is not a file; give a text or CoNLL-U file")
    try:
        sentences = [s[:-1] for s in read_split(path)]  # read_split appends <eos>
    except CorpusError as exc:
        raise InputError(str(exc)) from exc
    return sentences[:max_sentences] if max_sentences is not None else sentences


# --------------------------------------------------------------------------- the layers


def _ids(bundle: ModelBundle, sentences: Sequence[Sequence[str]], lang: str) -> tuple[ModelBundle, dict[str, int]]:
    """A bundle that holds every word of ``sentences`` (character kinds embed new words) and its index."""
    words = list(dict.fromkeys(w for s in sentences for w in s))
    unseen = [w for w in words if w not in bundle.vocab]
    view = bundle
    if unseen and bundle.model.compositional_input:
        view = bundle.with_new_words({lang: unseen})
    elif unseen and UNK not in bundle.vocab:
        raise InputError(f"{counted(len(unseen), 'word')} (e.g. {unseen[0]!r}) {agree(len(unseen), 'is', 'are')} "
                         f"outside the {bundle.model.kind} model's "
                         "vocabulary, which has no <unk>; use a character-level run (bilm, elmo, groc)")
    index = {w: i for i, w in enumerate(view.vocab.words)}
    return view, index


def _check_lang(bundle: ModelBundle, lang: str | None) -> str:
    langs = list(bundle.vocab.langs)
    if lang is None:
        if len(langs) > 1:
            raise InputError(f"this run has several languages ({', '.join(langs)}); pass {option('lang')}")
        return langs[0]
    if lang not in langs:
        raise InputError(f"language {lang!r} is not in this run; it has {', '.join(langs)}")
    return lang


def sentence_layers(bundle: ModelBundle, sentences: Sequence[Sequence[str]], lang: str | None = None,
                    batch_size: int = 32, progress: Callable[[int], None] | None = None,
                    widths: list[int] | None = None) -> Iterator[np.ndarray]:
    """Each sentence's layers, in input order: float32 ``(n_layers, T, D)`` (see the module doc).

    Sentences are batched by length (``batch_size`` a batch), on the model's device, without gradients.
    ``widths``, when given, receives each layer's own width before the zero padding to ``D``.
    """
    check_positive(batch_size=batch_size)
    lang = _check_lang(bundle, lang)
    if any(len(s) == 0 for s in sentences):
        raise InputError("an input sentence is empty; remove blank sentences")
    view, index = _ids(bundle, sentences, lang)
    model = view.model
    dev = model.device
    eos = index[EOS] if EOS in index else 0
    unk = index.get(UNK, 0)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    done: dict[int, np.ndarray] = {}
    nxt = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                T = max(len(sentences[i]) for i in rows)
                ids = np.full((len(rows), T + 1), eos, dtype=np.int64)  # (B, 1 + T): <eos> w1 .. wn, padded
                lengths = np.array([len(sentences[i]) for i in rows])
                for b, i in enumerate(rows):
                    ids[b, 1 : 1 + lengths[b]] = [index.get(w, unk) for w in sentences[i]]
                batch = torch.from_numpy(ids).to(dev)
                fwd = [t[:, 1:] for t in model.layer_outputs(batch, "forward")]  # each (B, T, size)
                layers = fwd
                if model.bidirectional:
                    # <eos> wn .. w1 per row: reverse each row's words within its length.
                    steps = np.arange(T)[None, :]
                    src = np.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)  # (B, T)
                    back_ids = ids.copy()
                    back_ids[:, 1:] = np.take_along_axis(ids[:, 1:], src, axis=1)
                    back = model.layer_outputs(torch.from_numpy(back_ids).to(dev), "backward")
                    gather = torch.from_numpy(src).to(dev).unsqueeze(-1)
                    back = [t[:, 1:].gather(1, gather.expand(-1, -1, t.shape[-1])) for t in back]  # reading order
                    layers = [torch.cat([f, b], dim=-1) for f, b in zip(fwd, back, strict=True)]
                width = max(t.shape[-1] for t in layers)
                if widths is not None and not widths:
                    widths.extend(int(t.shape[-1]) for t in layers)
                stacked = torch.stack([torch.nn.functional.pad(t, (0, width - t.shape[-1])) for t in layers], 1)
                arr = stacked.float().cpu().numpy()  # (B, L, T, D)
                for b, i in enumerate(rows):
                    done[i] = np.ascontiguousarray(arr[b, :, : lengths[b]])
                if progress is not None:
                    progress(len(rows))
                while nxt in done:  # emit in input order as soon as possible
                    yield done.pop(nxt)
                    nxt += 1
    finally:
        model.train(was_training)
        if view is not bundle:
            bundle.install_words()  # the model is shared: restore the run's own word tables


def layer_maps(align_dir: PathLike, n_layers: int, dim: int) -> list[np.ndarray]:
    """``W(j)`` for each layer from ``align_dir/layer{j}/W.npy`` (what :func:`align_layers` writes)."""
    root = Path(align_dir)
    maps = []
    for j in range(n_layers):
        path = root / f"layer{j}" / "W.npy"
        if not path.is_file():
            raise InputError(f"{path} does not exist; {option('align')} needs one map per layer, as "
                             f"align-layers writes "
                             f"({counted(n_layers, 'layer')})")
        try:
            W = np.load(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path} is not a numpy array file: {exc}") from exc
        if W.shape != (dim, dim):
            raise InputError(f"{path} maps {W.shape} but this run's layers are {dim} wide; align anchors of "
                             "the same run kind and size")
        maps.append(W.astype(np.float32))
    return maps


def _check_mix(mix: Sequence[float] | None, gamma: float, layers: str) -> None:
    if layers not in LAYER_CHOICES:
        raise InputError(f"{option('layers', layers)} is unknown; use one of {', '.join(LAYER_CHOICES)}")
    if mix is not None and layers != "all":
        raise InputError(f"{option('mix')} replaces {option('layers')}; leave {option('layers')} at all")
    if mix is not None and not all(np.isfinite(w) for w in mix):
        raise InputError(f"{option('mix')} weights must be finite numbers")
    if not np.isfinite(gamma) or gamma <= 0:
        raise InputError(f"{option('gamma', gamma)} must be a positive number")


def mix_layers(layers: np.ndarray, mix: Sequence[float], gamma: float = 1.0) -> np.ndarray:
    """AllenNLP's ScalarMix: ``gamma * sum_j softmax(mix)_j layers[j]``.  (L, T, D) -> (T, D)"""
    w = np.asarray(mix, dtype=np.float64)
    if w.shape != (layers.shape[0],):
        raise InputError(f"{option('mix')} has {counted(w.size, 'weight')} but the run has "
                         f"{counted(layers.shape[0], 'layer')}; give one per layer")
    s = np.exp(w - w.max())
    s /= s.sum()
    return (gamma * np.tensordot(s, layers, axes=1)).astype(np.float32)


def _select(layers: np.ndarray, how: str, mix: Sequence[float] | None, gamma: float) -> np.ndarray:
    if mix is not None:
        return mix_layers(layers, mix, gamma)
    if how == "top":
        return layers[-1]
    if how == "average":
        return layers.mean(axis=0)
    return layers


# --------------------------------------------------------------------------- features


@dataclass(frozen=True)
class FeaturesResult:
    """What :func:`features` wrote: ``n_sentences`` datasets of shape (n_layers, T, dim) (``layers="all"``)
    or (T, dim) (top, average, mix)."""

    run: str
    input: str
    out: str
    n_sentences: int
    n_tokens: int
    n_layers: int
    dim: int
    layers: str
    mix: list[float] | None = None
    gamma: float = 1.0
    aligned: str | None = None
    #: Each layer's own width before zero padding to ``dim`` (a forward-only run's layer 0 is the
    #: embedding, narrower than its LSTM layers: its last ``dim - width`` columns are zeros).
    layer_widths: list[int] = field(default_factory=list)

    @property
    def note(self) -> str | None:
        """What the zero columns are, in words (None when no layer is padded); also in the file's attributes."""
        padded = [(j, w) for j, w in enumerate(self.layer_widths) if w < self.dim]
        if not padded:
            return None
        parts = ", ".join(f"layer {j} ({w} wide: its last {self.dim - w} columns are zeros)" for j, w in padded)
        return (f"layers are stacked at the widest layer's {self.dim} columns, so narrower ones are zero-padded: "
                f"{parts}; layer 0 is the word embedding (the char-CNN's output for character kinds)")

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "input": self.input, "out": self.out, "n_sentences": self.n_sentences,
                "n_tokens": self.n_tokens, "n_layers": self.n_layers, "dim": self.dim, "layers": self.layers,
                "mix": self.mix, "gamma": self.gamma, "aligned": self.aligned, "layer_widths": self.layer_widths,
                "note": self.note}


def _hdf5_target(tmp: Path) -> IO[bytes]:
    """The open file :func:`features` writes HDF5 into (the temporary it renames into place)."""
    return tmp.open("r+b")


class _FailSoftFile:
    """The file object h5py writes through: the first OSError of a write, flush or truncate (a full
    disk) is kept and never raised into HDF5, whose C code, met with a Python exception in a write
    callback, leaves h5py's objects half-closed and reports the failure as some other error (an
    AttributeError from close, or a crash). Writes after it are dropped; :meth:`check` raises it.
    """

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh = fh
        self.error: OSError | None = None

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def _failed(self, exc: OSError) -> None:
        if self.error is None:
            self.error = exc

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        if self.error is None:
            try:
                self._fh.write(data)
            except OSError as exc:
                self._failed(exc)
        return size

    def flush(self) -> None:
        if self.error is None:
            try:
                self._fh.flush()
            except OSError as exc:
                self._failed(exc)

    def truncate(self, size: int | None = None) -> int:
        if self.error is None:
            try:
                return self._fh.truncate(size)
            except OSError as exc:
                self._failed(exc)
        return size if size is not None else 0

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def read(self, size: int = -1) -> bytes:
        try:
            return self._fh.read(size)
        except OSError as exc:  # an I/O error: HDF5 then meets end of file and fails in its own words
            self._failed(exc)
            return b""

    def readinto(self, buffer: Any) -> int:
        try:
            return self._fh.readinto(buffer)  # type: ignore[attr-defined,no-any-return]
        except OSError as exc:
            self._failed(exc)
            return 0

    def __enter__(self) -> _FailSoftFile:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._fh.close()  # a failing final flush is the disk's error too
        except OSError as err:
            self._failed(err)


def _import_h5py() -> Any:
    try:
        import h5py
    except ImportError as exc:
        raise ResourceMissingError("writing hdf5 features needs the optional package h5py; "
                                   "pip install 'polyglot-groc[elmo]' (or pip install h5py)") from exc
    return h5py


@run_access_doc
def features(
    *,
    run: PathLike | ModelBundle,
    input: PathLike,
    out: PathLike,
    lang: str | None = None,
    layers: str = "all",
    mix: Sequence[float] | None = None,
    gamma: float = 1.0,
    align: PathLike | None = None,
    batch_size: int = 32,
    max_sentences: int | None = None,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> FeaturesResult:
    """Write each sentence's contextual features to HDF5 in AllenNLP's ``elmo`` command layout.

    One float32 dataset per sentence, named by its index (``"0"``, ``"1"``, ...), plus
    ``sentence_to_index``: a one-element string dataset holding the JSON map from each sentence
    (tokens joined by spaces) to its index (the first one, for repeated sentences). The file's
    attributes ``layer_widths`` and ``note`` say which columns of a narrower layer are zero
    padding (a forward-only run's layer 0, the embedding, is narrower than its LSTM layers).
    Needs the ``h5py`` package: ``pip install 'polyglot-groc[elmo]'``.

    Args:
        run: A run directory (or a loaded bundle) of any kind; bilm runs give both directions.
        input: Plain text (one sentence a line, whitespace-tokenised) or CoNLL-U (.conllu, .conllu.gz).
        out: The .hdf5 file to write (atomically: a temp file renamed into place).
        lang: The sentences' language (required for a run with several).
        layers: ``all`` (n_layers, T, D), ``top`` (T, D) or ``average`` (T, D).
        mix: ScalarMix weights, one per layer (softmax-normalised as AllenNLP's parameters), instead of
            ``layers``: each dataset is ``gamma * sum_j softmax(mix)_j h_j``, (T, D).
        gamma: The mix's scale.
        align: A directory with ``layer{j}/W.npy`` per layer (:func:`align_layers`); layer j is mapped
            by ``h @ W(j).T`` before selecting or mixing.
        batch_size: Sentences per batch.
        max_sentences: Read at most this many sentences.
        {run_access}
        overwrite: Replace an existing ``out``.
        progress: Called with the number of sentences done after each batch.

    Returns:
        A :class:`FeaturesResult`.

    Raises:
        InputError: a bad option, a missing or empty input, an output that exists, a bad map.
        ResourceMissingError: h5py is not installed.
    """
    _check_mix(mix, gamma, layers)
    check_positive(batch_size=batch_size, max_sentences=max_sentences)
    out = Path(out)
    check_output(out, overwrite)
    h5py = _import_h5py()
    sentences = read_sentences(input, max_sentences)
    use_threads(threads)
    bundle = run if isinstance(run, ModelBundle) else load_bundle(Path(run), checkpoint, device)[0]
    maps: list[np.ndarray] | None = None
    n_tokens, shape = 0, (0, 0)
    widths: list[int] = []
    index: dict[str, str] = {}
    for i, s in enumerate(sentences):
        index.setdefault(" ".join(s), str(i))

    def fill(tmp: Path) -> Path:
        nonlocal maps, n_tokens, shape
        # HDF5 writes through a Python file object, not its own C driver: a write that fails (a full
        # disk) is then an OSError raised here, where HDF5's own driver would leave h5py's objects
        # half-closed and crash the interpreter (a segmentation fault) when they are freed.
        with _FailSoftFile(_hdf5_target(tmp)) as raw:
            try:
                with h5py.File(raw, "w") as fout:
                    for i, lay in enumerate(sentence_layers(bundle, sentences, lang, batch_size, progress, widths)):
                        if align is not None:
                            if maps is None:
                                maps = layer_maps(align, lay.shape[0], lay.shape[2])
                            lay = np.stack([lay[j] @ maps[j].T for j in range(lay.shape[0])])
                        shape = (lay.shape[0], lay.shape[2])
                        n_tokens += lay.shape[1]
                        fout.create_dataset(str(i), data=_select(lay, layers, mix, gamma).astype(np.float32))
                        raw.check()  # a failed write stops the loop here, not after the whole input
                    ds = fout.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
                    ds[0] = json.dumps(index)
                    fout.attrs["layer_widths"] = np.asarray(widths, dtype=np.int64)
                    note = FeaturesResult("", "", "", 0, 0, len(widths), shape[1], layers,
                                          layer_widths=list(widths)).note
                    fout.attrs["note"] = note or ""
            except Exception:
                raw.check()  # what HDF5 made of a failed write (any error type) is the write's OSError
                raise
        raw.check()  # closing flushed the last bytes
        return out

    write_then_rename(out.parent, out.name, fill)
    log.info("wrote features of %d sentences (%d tokens, %d layers x %d) to %s", len(sentences), n_tokens,
             shape[0], shape[1], out)
    return FeaturesResult(str(run if not isinstance(run, ModelBundle) else "<bundle>"), str(input), str(out),
                          len(sentences), n_tokens, shape[0], shape[1], layers,
                          list(mix) if mix is not None else None, gamma, str(align) if align is not None else None,
                          layer_widths=list(widths))


# --------------------------------------------------------------------------- anchors


@dataclass(frozen=True)
class AnchorsResult:
    """What :func:`anchors` wrote: ``layer{j}.vec`` for each layer (word types most frequent first) and
    ``norms.json`` (each layer's mean anchor norm)."""

    run: str
    lang: str
    out: str
    n_sentences: int
    n_tokens: int
    n_types: int
    n_layers: int
    dim: int
    norms: list[float]
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "lang": self.lang, "out": self.out, "n_sentences": self.n_sentences,
                "n_tokens": self.n_tokens, "n_types": self.n_types, "n_layers": self.n_layers, "dim": self.dim,
                "norms": self.norms, "files": self.files}


def _corpus_sentences(data: PathLike, lang: str, split: str, max_sentences: int | None) -> list[list[str]]:
    from groc_base.errors import CorpusError
    from langpairs.corpus import find_split

    try:
        path = find_split(Path(data), lang, split)
    except CorpusError as exc:
        raise InputError(str(exc)) from exc
    return read_sentences(path, max_sentences)


def anchors(
    *,
    run: PathLike | ModelBundle,
    data: PathLike,
    out: PathLike,
    lang: str | None = None,
    split: str = "train",
    min_count: int = 1,
    max_sentences: int | None = None,
    batch_size: int = 32,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> AnchorsResult:
    """Per layer, each word type's mean contextual vector over a corpus (Schuster et al. 2019's anchors).

    Args:
        run: A run directory (or a loaded bundle).
        data: Corpus root: ``<data>/<lang>/<split>.txt`` (or ``.conllu``), one sentence a line.
        out: Directory to write ``layer{j}.vec`` (word2vec text, types by decreasing count) and ``norms.json``.
        lang: The corpus language (required for a run with several).
        split: The split file to read.
        min_count: Leave out types seen fewer times.
        max_sentences: Read at most this many sentences.
        batch_size, checkpoint, device, threads, overwrite, progress: As :func:`features`.

    Returns:
        An :class:`AnchorsResult`.

    Raises:
        InputError: a bad option, a missing corpus, an output directory that is not empty.
    """
    from eval.vectors import write_vec

    check_positive(min_count=min_count, batch_size=batch_size, max_sentences=max_sentences)
    out = Path(out)
    check_output(out, overwrite, directory=True)
    use_threads(threads)
    bundle = run if isinstance(run, ModelBundle) else load_bundle(Path(run), checkpoint, device)[0]
    lang = _check_lang(bundle, lang)
    sentences = _corpus_sentences(data, lang, split, max_sentences)
    types: dict[str, int] = {}
    for s in sentences:
        for w in s:
            types.setdefault(w, len(types))
    sums: np.ndarray | None = None  # (V, L, D) float64
    counts = np.zeros(len(types), dtype=np.int64)
    n_tokens = 0
    for s, lay in zip(sentences, sentence_layers(bundle, sentences, lang, batch_size, progress), strict=True):
        if sums is None:
            sums = np.zeros((len(types), lay.shape[0], lay.shape[2]), dtype=np.float64)
        ids = np.fromiter((types[w] for w in s), dtype=np.int64, count=len(s))
        np.add.at(sums, ids, lay.transpose(1, 0, 2))  # repeated words in a sentence add up
        np.add.at(counts, ids, 1)
        n_tokens += len(s)
    assert sums is not None
    words = np.array(list(types))
    keep = np.flatnonzero(counts >= min_count)
    keep = keep[np.argsort(-counts[keep], kind="stable")]  # most frequent first, first seen first on ties
    if keep.size == 0:
        raise InputError(f"no word type occurs {min_count} times; lower {option('min_count')}")
    means = (sums[keep] / counts[keep, None, None]).astype(np.float32)  # (V', L, D)
    kept_words = [str(w) for w in words[keep]]
    n_layers = means.shape[1]
    norms = [float(np.linalg.norm(means[:, j], axis=1).mean()) for j in range(n_layers)]
    # All the files or none, as align's outputs: built in a temporary folder and renamed into place,
    # so a full disk or a kill leaves the previous `out` whole (and nothing when there was none).
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        for j in range(n_layers):
            write_vec(tmp / f"layer{j}.vec", kept_words, np.ascontiguousarray(means[:, j]))
        atomic_write_text(tmp / "norms.json", dumps_json({f"layer{j}": n for j, n in enumerate(norms)}) + "\n")
    files = [str(out / f"layer{j}.vec") for j in range(n_layers)] + [str(out / "norms.json")]
    log.info("wrote %d layers of anchors for %d word types (%d tokens) to %s", n_layers, len(kept_words), n_tokens,
             out)
    return AnchorsResult(str(run if not isinstance(run, ModelBundle) else "<bundle>"), lang, str(out),
                         len(sentences), n_tokens, len(kept_words), n_layers, int(means.shape[2]), norms, files)


# --------------------------------------------------------------------------- one map per layer


@dataclass(frozen=True)
class LayerAlignResult:
    """One :func:`~polyglot_groc.analysis.alignment.align` result per layer (``layer{j}/`` under ``out``)."""

    out: str
    layers: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "layers": self.layers}


def align_layers(
    *,
    src: PathLike,
    tgt: PathLike,
    out: PathLike,
    train_dict: PathLike,
    eval_dict: PathLike | None = None,
    refine: int = 0,
    allow_overlap: bool = False,
    overwrite: bool = False,
    threads: int | None = None,
) -> LayerAlignResult:
    """Align each layer's anchors of ``src`` onto those of ``tgt`` with the ``align`` workflow.

    ``src`` and ``tgt`` are :func:`anchors` directories with the same layers; ``out/layer{j}/`` gets
    what ``align`` writes (``W.npy`` among it), which :func:`features` ``align=out`` reads. Seed 004
    §3.6 fits ``W(j)`` by Procrustes on the dictionary's anchors (``refine=0``); ``refine > 0`` adds
    MUSE's CSLS refinement.

    Args:
        src: Anchors directory of the side to map (e.g. the target language's LM).
        tgt: Anchors directory of the space to map into (e.g. English).
        out: Output directory; ``layer{j}/`` per layer.
        train_dict: Seed dictionary, ``src tgt`` word pairs (MUSE format).
        eval_dict: Evaluation dictionary (P@k per layer), or None.
        refine: CSLS refinement iterations (0: Procrustes only, as the thesis).
        allow_overlap: score even when more than 5% of the test pairs are training pairs (``align``'s check).
        overwrite: Replace a non-empty ``out``.
        threads: CPU threads of the BLAS and OpenMP pools (``align``'s ``threads``).

    Returns:
        A :class:`LayerAlignResult` with each layer's ``align`` JSON.

    Raises:
        InputError: the directories hold different layers, a missing dictionary, an existing ``out``.
    """
    from polyglot_groc.analysis.alignment import align

    src, tgt, out = Path(src), Path(tgt), Path(out)
    check_output(out, overwrite, directory=True)
    n_src = sorted(src.glob("layer*.vec"))
    n_tgt = sorted(tgt.glob("layer*.vec"))
    if not n_src or len(n_src) != len(n_tgt):
        raise InputError(f"{src} has {len(n_src)} layer*.vec files and {tgt} {len(n_tgt)}; give two anchors "
                         "directories of runs with the same layers")
    results = []
    # Every layer's map or none: they are built in one temporary folder renamed into place at the end.
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        for j in range(len(n_src)):
            res = align(src=src / f"layer{j}.vec", tgt=tgt / f"layer{j}.vec", train_dict=train_dict,
                        eval_dict=eval_dict, refine=refine, allow_overlap=allow_overlap, out=tmp / f"layer{j}",
                        threads=threads)
            results.append(res.to_dict())
    return LayerAlignResult(str(out), results)
