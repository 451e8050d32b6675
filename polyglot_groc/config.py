"""Frozen configuration dataclasses, one per part, loaded from TOML with overrides given as data.

Sizes known only at run time (number of characters, vocabulary size) are *not* config: they are
passed to constructors as arguments, so a config file describes a model family, not a dataset.
Defaults follow seed 000 appendix B and seed 004 appendix C where they are stated.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import tomli_w

from groc_base.checks import check_input_file, is_int
from groc_base.errors import ConfigError

# The kinds' lists are derived from their traits (kind_traits.py) and re-exported here, where the
# config's readers have always found them.
from polyglot_groc.kind_traits import FULL_SOFTMAX_KINDS as FULL_SOFTMAX_KINDS
from polyglot_groc.kind_traits import KIND_DEFAULTS as KIND_DEFAULTS
from polyglot_groc.kind_traits import MODEL_KINDS as MODEL_KINDS
from polyglot_groc.kind_traits import kind_help as kind_help
from polyglot_groc.kind_traits import kind_traits


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric config key may take: ``lo <= x <= hi`` (``lo_open``/``hi_open``: strict).

    Declared on the field itself (:func:`ranged`, or ``dataclasses.field(metadata={"range": Range(...)})``)
    and checked for every config in one place, :func:`check_ranges` (``RunConfig.validate`` calls it
    on the whole nested config). Upper bounds are far above any sensible value: they catch typos
    (``model.d=1000000``, ``train.lr=1e300``) before they become an allocation failure or an overflow.
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def __str__(self) -> str:
        def num(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else f"{x:g}"

        return f"{'(' if self.lo_open else '['}{num(self.lo)}, {num(self.hi)}{')' if self.hi_open else ']'}"


def ranged(default: Any, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False) -> Any:
    """A dataclass field with ``default`` whose values must lie in ``Range(lo, hi, ...)``."""
    return dataclasses.field(default=default, metadata={"range": Range(lo, hi, lo_open, hi_open)})


#: Metadata keys of tuple fields: ``"each"``: a :class:`Range` for every element; ``"pairs"``: the
#: field is a non-empty tuple of integer tuples, one ``(name, Range)`` per position.
EACH, PAIRS, RANGE = "each", "pairs", "range"


def check_ranges(cfg: Any, where: str = "") -> None:
    """Check every field of the (nested) config dataclass ``cfg`` against its declared range.

    The one place numeric config values are range-checked: a new config dataclass gets its values
    checked by declaring ``ranged(...)`` fields (nested in :class:`RunConfig`, or by calling this on
    it). Raises :class:`ConfigError` naming the dotted key, the value and the range.
    """
    for f in dataclasses.fields(cfg):
        val, key = getattr(cfg, f.name), f"{where}{f.name}"
        if dataclasses.is_dataclass(val):
            check_ranges(val, f"{key}.")
            continue
        rng = f.metadata.get(RANGE)
        if rng is not None and val not in rng:
            raise ConfigError(f"{key}={val!r} is out of range: it must lie in {rng}; change it or leave it out "
                              "for the default")
        each = f.metadata.get(EACH)
        if each is not None:
            bad = [v for v in val if v not in each] if isinstance(val, tuple) else [val]
            if bad:
                raise ConfigError(f"{key}={_plain(val)} must be a list of numbers in {each}; {bad[0]!r} is not")
        pairs = f.metadata.get(PAIRS)
        if pairs is not None:
            ok = isinstance(val, tuple) and len(val) > 0 and all(
                isinstance(item, tuple) and len(item) == len(pairs)
                and all(isinstance(x, int) and x in r for x, (_, r) in zip(item, pairs, strict=True)) for item in val)
            if not ok:
                names = ", ".join(n for n, _ in pairs)
                ranges = ", ".join(f"{n} in {r}" for n, r in pairs)
                raise ConfigError(f"{key}={_plain(val)} must be a non-empty list of [{names}] integer pairs with "
                                  f"{ranges}, e.g. [[1, 32], [2, 32]]")


def range_table(cfg: Any = None, where: str = "") -> list[tuple[str, str, str]]:
    """``(dotted key, default, allowed values)`` of every ranged key of the (nested) config, in field
    order: the table docs/internals.md shows (a test keeps the two equal)."""
    cfg = RunConfig() if cfg is None else cfg
    rows: list[tuple[str, str, str]] = []
    for f in dataclasses.fields(cfg):
        val, key = getattr(cfg, f.name), f"{where}{f.name}"
        if dataclasses.is_dataclass(val):
            rows += range_table(val, f"{key}.")
        elif RANGE in f.metadata:
            kind = "integer" if isinstance(val, int) else "number"
            rows.append((key, _plain(val), f"{kind} in {f.metadata[RANGE]}"))
        elif EACH in f.metadata:
            rows.append((key, _plain(val), f"list of numbers in {f.metadata[EACH]}"))
        elif PAIRS in f.metadata:
            parts = ", ".join(f"{n} in {r}" for n, r in f.metadata[PAIRS])
            rows.append((key, _plain(val), f"non-empty list of integer pairs: {parts}"))
    return rows


def _plain(val: Any) -> str:
    """A tuple value as the TOML list a user writes."""
    if isinstance(val, tuple):
        return "[" + ", ".join(_plain(v) for v in val) + "]"
    return repr(val)


#: The configs shipped with the package (``polyglot_groc/configs/*.toml``).
CONFIGS_DIR = Path(__file__).resolve().parent / "configs"
#: ``size`` presets of ``train``: small trains the sample corpus in about a minute on 2 CPU cores (the
#: default); paper is the thesis model (d 256, 2x1024 LSTM).
PRESETS: dict[str, Path] = {"small": CONFIGS_DIR / "quickstart.toml", "paper": CONFIGS_DIR / "paper.toml"}

ACTIVATIONS = ("identity", "relu", "tanh", "sigmoid", "selu", "gelu")
PRECISIONS = ("auto", "fp32", "tf32", "bf16")
SOFTMAXES = ("auto", "full", "sampled")
#: ``model.surface.norm``: what follows the char-CNN's projection (see :class:`SurfaceConfig`).
SURFACE_NORMS = ("none", "layer")
#: The sampled softmax's proposals (``train.sampled_proposal``; model/sampling.py draws from them).
PROPOSALS = ("log-uniform", "unigram")
#: The largest embedding size model.d (and pretrain-vectors --dim) may take.
D_MAX = 1 << 20
#: The most CPU threads --threads or train.threads may ask for.
THREADS_MAX = 4096
DEVICE_PATTERN = r"^(auto|cpu|cuda(:\d+)?)$"

@dataclasses.dataclass(frozen=True)
class CharsetConfig:
    #: "unicode": one id per code point seen in training (thesis ch. 5);
    #: "elmo-bytes": bilm-tf/AllenNLP byte ids (262 incl. the zero row), for ELMo weights.
    scheme: str = "unicode"
    #: Maximum word length in characters *including* the BOW/EOW markers. 50 as in ELMo: the
    #: 99.9th-percentile length of word types in the shared data is at most 26 characters (de) + 2
    #: (benchmarks/README.md); longer words keep their prefix and suffix (charset.py).
    max_word_len: int = ranged(50, 1, 1000)


@dataclasses.dataclass(frozen=True)
class SurfaceConfig:
    char_dim: int = ranged(16, 1, 4096)
    #: (width, n_filters) pairs; seed 004 appendix C / seed 000 appendix B. Widths in [1, 1000] (and at
    #: most model.charset.max_word_len), counts in [1, 65536]; at least one pair.
    filters: tuple[tuple[int, int], ...] = dataclasses.field(
        default=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512)),
        metadata={PAIRS: (("width", Range(1, 1000)), ("n_filters", Range(1, 1 << 16)))})
    n_highway: int = ranged(1, 0, 64)
    activation: str = "relu"
    #: Activation of the highway transform (the released GroC code uses its char activation, selu).
    highway_activation: str = "relu"
    #: Words are encoded in chunks of this many rows to bound peak memory. One chunk covers a
    #: PTB-size vocabulary: on CPU, 16384 rows encode 10k words (fwd+bwd) 12% faster than 4096
    #: (fewer, larger conv calls per length group); the transient conv output of a chunk stays
    #: under ~2 GiB even for the padded impl's longest bucket.
    chunk_size: int = ranged(16384, 1, 1 << 24)
    #: Recompute chunk activations in backward (torch.utils.checkpoint) to trade time for memory.
    checkpoint: bool = False
    #: "grouped": one conv pass per word length (fastest on CPU); "padded": one pass over the
    #: padded (N, L) table with PAD windows masked to -inf (fastest on GPU); "auto": by device.
    impl: str = "auto"
    #: What follows the projection: "none" (seed 000's GroC, bilm-tf's ELMo) or "layer" (a layer norm
    #: with its gain and bias). The elmo and bilm kinds default to "layer": their char-CNN feeds only the
    #: LSTM, and under Adam its vectors grew onto one shared direction until the first LSTM layer
    #: saturated and the model never left the unigram plateau (docs/results.md, "ELMo-like"); GroC's
    #: vectors are also its output vectors, whose softmax keeps them in check. Runs stored without
    #: the key had none (:data:`STORED_BEFORE`).
    norm: str = "none"


@dataclasses.dataclass(frozen=True)
class LexiconConfig:
    specs: tuple[str, ...] = ()
    backend: str = "wn"
    use_relations: bool = True
    use_definitions: bool = True
    max_related: int = ranged(3, 0, 1000)
    max_definition: int = ranged(10, 0, 1000)
    #: Fraction of lexicon entries kept (seed 000 Table 4); dropped deterministically by word hash.
    coverage: float = ranged(1.0, 0.0, 1.0)
    #: Cap on related/definition words outside the vocabulary that are encoded compositionally.
    extra_cap: int = ranged(50000, 0, 10**8)
    #: How [c; r; d] become e_x: "concat" (seed 000 §3.1: W [c; r; d], 3d^2 parameters) or "add"
    #: (c + r + d, no projection; the released code's default ``--combine add``).
    combine: str = "concat"
    #: Where the lexicon lives: the wn data folder (wn backend; "" = $POLYGLOT_GROC_WN_DIR or wn's
    #: default), the TSV file (tsv), the NLTK data folder (nltk; "" = $NLTK_DATA). A run records
    #: the one it used, absolute, with ``specs`` as resolved (``id:version``, or content hashes).
    wn_dir: str = ""
    tsv_path: str = ""
    nltk_data: str = ""
    #: wn backend: lexicons lending their definitions through ILI ("" = the English ones selected,
    #: else the first English one installed); recorded as resolved, like ``specs``.
    gloss_specs: tuple[str, ...] = ()
    #: wn backend: languages that never borrow glosses or hyponyms through ILI (``train`` fills it
    #: with the run's languages whose registry entry has no ``fallback = "en"``).
    no_fallback: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OutputConfig:
    #: Depth k of the residual output net E^(j) = g_j(E^(j-1)) + E_in; 0 = plain tying.
    depth: int = ranged(0, 0, 64)
    activation: str = "relu"
    #: Variational dropout on the output embeddings (mask shared across the vocabulary).
    dropout: float = ranged(0.2, 0.0, 1.0, hi_open=True)
    #: Activation of the computed bias b_v = act(w . e_v + a).
    bias_activation: str = "relu"
    #: "computed": b_v = act(w . e_v + a), no per-word parameter (seed 000 §3.3);
    #: "lookup": a per-word bias vector (the released code without ``--predict_bias``). Only
    #: meaningful for groc/groc-lex; "lookup" adds |V| parameters and cannot score new words
    #: with a learned bias (they get 0), i.e. it gives up the no-|V|-parameter property.
    bias: str = "computed"
    #: Dropout on e_v before the computed bias (released ``--bias_drop``, 0.2 there).
    bias_dropout: float = ranged(0.0, 0.0, 1.0, hi_open=True)
    #: Read the input embeddings from the output table *after* its dropout (released code) rather
    #: than before it (seed 000 text). Shared-function kinds (groc, groc-lex, lookup) only.
    inputs_after_dropout: bool = False
    #: ``conv`` kind: size of the per-word linear correction (seed 000 Table 7 "cor").
    correction: int = ranged(128, 1, 1 << 20)
    #: ``adaptive`` kind: band boundaries (Table 7 "cut"); > 1 = word counts, <= 1 = fractions of |V|.
    #: The default is Table 8's PTB 2k/7k of 10k words.
    cutoffs: tuple[float, ...] = dataclasses.field(default=(0.2, 0.7), metadata={EACH: Range(0, 1e12, lo_open=True)})
    #: ``adaptive`` kind: band b has dimension d / factor^b (seed 001: 4).
    adaptive_factor: float = ranged(4.0, 1.0, 1000.0)


@dataclasses.dataclass(frozen=True)
class PrefixConfig:
    n_layers: int = ranged(2, 1, 64)
    #: Hidden size of every layer but the last, whose output size is the embedding size d.
    hidden: int = ranged(1024, 1, 1 << 20)
    #: Dropout on embeddings, between layers and on the top output ("hidden unit dropout").
    dropout: float = ranged(0.65, 0.0, 1.0, hi_open=True)
    #: Per-place overrides of ``dropout`` (negative: use ``dropout``); AWD/released names in brackets:
    #: on the input embeddings [dropouti], between layers [dropouth], on the top output [dropout].
    input_dropout: float = ranged(-1.0, -1.0, 1.0, hi_open=True)
    layer_dropout: float = ranged(-1.0, -1.0, 1.0, hi_open=True)
    output_dropout: float = ranged(-1.0, -1.0, 1.0, hi_open=True)
    #: Word (embedding) dropout [dropoute]: whole rows of the input table zeroed per step.
    word_dropout: float = ranged(0.0, 0.0, 1.0, hi_open=True)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    kind: str = "groc"
    #: Embedding size d (seed 004 appendix C: 256).
    d: int = ranged(256, 1, D_MAX)
    init_range: float = ranged(0.05, 0.0, 10.0)
    charset: CharsetConfig = dataclasses.field(default_factory=CharsetConfig)
    surface: SurfaceConfig = dataclasses.field(default_factory=SurfaceConfig)
    output: OutputConfig = dataclasses.field(default_factory=OutputConfig)
    prefix: PrefixConfig = dataclasses.field(default_factory=PrefixConfig)
    lexicon: LexiconConfig = dataclasses.field(default_factory=LexiconConfig)
    #: word2vec text file that initialises the input table (seed 003); "" = random init.
    init_input: str = ""
    #: Keep the input table fixed during training (seed 003); biases are never frozen.
    freeze_input: bool = False


@dataclasses.dataclass(frozen=True)
class DataConfig:
    root: str = ""
    langs: tuple[str, ...] = ("en",)
    #: "whitespace" (default), "auto" (stanza if installed, else NLTK Toktok), "stanza", "toktok".
    tokenize: str = "whitespace"
    #: "closed": vocabulary from train+valid+test (seeds' PTB setup); "open": train only.
    vocab_mode: str = "closed"
    #: Open vocabulary of a lookup-output kind (every kind but groc/groc-lex): training words seen
    #: fewer times than this (summed over the languages) are left out, so their tokens train the
    #: ``<unk>`` row that unseen validation and test words are scored with (1: keep every word, and
    #: ``<unk>`` is never a training target). No effect on closed vocabularies or on groc/groc-lex,
    #: which score any word. Runs stored without the key had no cutoff (:data:`STORED_BEFORE`).
    min_count: int = ranged(2, 1, 10**9)
    #: "proportional" (default), "round_robin" or "temperature".
    schedule: str = "proportional"
    temperature: float = ranged(1.0, 0.0, 1000.0, lo_open=True)
    #: Language-screened softmax: score only the current language's vocabulary.
    screen: bool = True


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    batch_size: int = ranged(20, 1, 1 << 20)
    bptt: int = ranged(35, 1, 1 << 20)
    eval_batch_size: int = ranged(10, 1, 1 << 20)
    lr: float = ranged(1e-3, 0.0, 1000.0, lo_open=True)
    clip: float = ranged(0.1, 0.0, 1e6)
    weight_decay: float = ranged(0.0, 0.0, 1000.0)
    max_epochs: int = ranged(100, 1, 10**9)
    max_steps: int = ranged(0, 0, 10**12)
    max_minutes: float = ranged(0.0, 0.0, 1e9)
    #: Evaluate every N steps (0: at the end of every epoch).
    eval_every: int = ranged(0, 0, 10**12)
    #: Also validate and checkpoint (last.pt, and best.pt when it improves) whenever this many
    #: minutes of wall time passed since the last checkpoint (the first after at most one minute),
    #: so an interrupted run keeps its work however long an epoch is (0: the schedule above only).
    #: These evaluations save the model but leave the schedule (patience, lr, early stopping) alone,
    #: so results do not depend on the machine's speed; they take at most about a tenth of the wall
    #: time (a slow validation spaces them out).
    checkpoint_minutes: float = ranged(2.0, 0.0, 1e9)
    lr_patience: int = ranged(4, 1, 10**9)
    stop_patience: int = ranged(8, 1, 10**9)
    lr_factor: float = ranged(0.1, 0.0, 1.0, lo_open=True)
    seed: int = ranged(0, 0, 2**32 - 1)
    #: Probability of a full update of the output embedding function in a step (seed 000 B.4).
    output_update_prob: float = ranged(1.0, 0.0, 1.0, lo_open=True)
    #: CPU threads (torch and the BLAS pools). 0: ``$OMP_NUM_THREADS`` when set, else the cores other
    #: processes leave free (model/threads.py; re-picked when training's speed collapses); result.json
    #: says what was picked and why.
    threads: int = ranged(0, 0, THREADS_MAX)
    #: AWD-LSTM activation regularisation on the (dropped) top prefix output [alpha] and
    #: temporal activation regularisation on its raw output [beta]; 0 disables.
    ar_alpha: float = ranged(0.0, 0.0, 1000.0)
    tar_beta: float = ranged(0.0, 0.0, 1000.0)
    #: "fixed": windows of ``bptt``; "variable": AWD-LSTM lengths (bptt, or bptt/2 w.p. 0.05,
    #: then N(., 5), at least 5) with the step's lr scaled by length/bptt.
    bptt_mode: str = "fixed"
    #: auto | cpu | cuda | cuda:N ("auto": CUDA when available).
    device: str = "auto"
    #: auto | fp32 | tf32 | bf16 (bf16 autocasts the encoder and prefix; log-softmax and loss stay
    #: fp32). "auto": bf16 on a CUDA device that supports it (within 1% of fp32's perplexity on an
    #: H100, tests/test_cuda.py), fp32 elsewhere (on CPU, bf16 autocast is slower).
    precision: str = "auto"
    #: torch.compile the surface encoder (falls back to eager with a logged warning).
    compile: bool = False
    #: The one logging knob (CLI ``--log-every``): every N steps the running training loss is read
    #: from the device (the loop's only host sync) and logged: the CLI's log line (loss, ppl, lr,
    #: tok/s, ETA) and TensorBoard scalars. 0: read at evaluations only, no log lines.
    log_every: int = ranged(100, 0, 10**12)
    #: Under torchrun: each rank encodes 1/N of the scored vocabulary (all-gathered with autograd);
    #: false encodes the whole vocabulary on every rank. Full softmax only (a sampled step encodes
    #: its own candidates on each rank).
    shard_vocab: bool = True
    #: The training softmax (model/sampling.py). "full": every step scores the whole screened
    #: vocabulary. "sampled": a step scores its own words plus the distinct words of
    #: ``sampled_k`` draws from ``sampled_proposal``, with the log-inclusion (log-Q) correction;
    #: its cost does not grow with |V|. "auto": sampled where the largest screened vocabulary has
    #: more words than the kind's line (kind_traits.KindTraits.sampled_above: 5,000 for groc, groc-lex
    #: and conv, whose full step composes every word; 50,000 for the others) and the kind can sample
    #: (all but adaptive), else full. Every perplexity (validation, evaluate, caches, freq-bins) is the
    #: full softmax.
    softmax: str = "auto"
    #: Draws per sampled step (with replacement; their distinct words are the negatives).
    sampled_k: int = ranged(4096, 1, 10**8)
    #: "log-uniform" (Zipf by training frequency rank, as bilm-tf) or "unigram" (count^sampled_alpha).
    sampled_proposal: str = "log-uniform"
    #: The unigram proposal's exponent (word2vec's 0.75; 1: the unigram distribution, 0: uniform).
    sampled_alpha: float = ranged(0.75, 0.0, 1.0)


@dataclasses.dataclass(frozen=True)
class ParentConfig:
    """The run a finetuned run started from (written by ``finetune``; ``run = ""``: trained from scratch)."""
    #: Absolute path of the parent run directory.
    run: str = ""
    #: Its checkpoint the finetuning started from (best | last), that checkpoint's step and sha256.
    checkpoint: str = ""
    step: int = ranged(0, 0, 10**12)
    sha256: str = ""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    train: TrainConfig = dataclasses.field(default_factory=TrainConfig)
    parent: ParentConfig = dataclasses.field(default_factory=ParentConfig)
    #: User-defined or overridden languages: ``[languages.xx]`` tables (iso3, name, script, family,
    #: tokenizer, related...), validated by :meth:`langpairs.registry.LanguageRegistry.from_config`.
    languages: dict[str, Any] = dataclasses.field(default_factory=dict)

    def validate(self) -> RunConfig:
        """Check every value: each numeric key against its declared range (:func:`check_ranges`), the
        names (kinds, activations, modes) against their lists, then the rules that tie keys together.
        Errors that would otherwise surface deep inside training (or as a traceback) are one
        :class:`ConfigError` naming the key."""
        m, t, d = self.model, self.train, self.data
        _check_finite(self)
        check_ranges(self)
        traits = kind_traits(m.kind)  # ConfigError naming the kinds for an unknown one
        for name, act in (("surface.activation", m.surface.activation),
                          ("surface.highway_activation", m.surface.highway_activation),
                          ("output.activation", m.output.activation),
                          ("output.bias_activation", m.output.bias_activation)):
            if act not in ACTIVATIONS:
                raise ConfigError(f"unknown activation {act!r} for model.{name}; use one of {', '.join(ACTIVATIONS)}")
        if m.output.bias not in ("computed", "lookup"):
            raise ConfigError(f"model.output.bias={m.output.bias!r} must be 'computed' or 'lookup'")
        if m.lexicon.combine not in ("concat", "add"):
            raise ConfigError(f"model.lexicon.combine={m.lexicon.combine!r} must be 'concat' or 'add'")
        if t.bptt_mode not in ("fixed", "variable"):
            raise ConfigError(f"train.bptt_mode={t.bptt_mode!r} must be 'fixed' or 'variable'")
        if m.charset.scheme not in ("unicode", "elmo-bytes"):
            raise ConfigError(f"unknown charset scheme {m.charset.scheme!r}; use 'unicode' or 'elmo-bytes'")
        max_width = max(w for w, _ in m.surface.filters)
        if not max_width <= m.charset.max_word_len:
            raise ConfigError(
                f"model.charset.max_word_len={m.charset.max_word_len} must be between the widest "
                f"filter ({max_width}) and 1000"
            )
        if m.output.depth < traits.min_output_depth:
            default = traits.defaults.get("output", {}).get("depth", traits.min_output_depth)
            raise ConfigError(f"model kind {m.kind} needs model.output.depth >= {traits.min_output_depth}, not "
                              f"{m.output.depth}; drop the setting for the kind's default {default} (seed 000 Table "
                              f"8, PTB) or set e.g. --set model.output.depth={traits.min_output_depth + 1}")
        if d.vocab_mode not in ("closed", "open"):
            raise ConfigError(f"data.vocab_mode={d.vocab_mode!r} must be 'closed' or 'open'")
        if d.schedule not in ("proportional", "round_robin", "temperature"):
            raise ConfigError(f"data.schedule={d.schedule!r} must be proportional, round_robin or temperature")
        if m.surface.impl not in ("auto", "grouped", "padded"):
            raise ConfigError(f"model.surface.impl={m.surface.impl!r} must be auto, grouped or padded")
        if m.surface.norm not in SURFACE_NORMS:
            raise ConfigError(f"model.surface.norm={m.surface.norm!r} must be one of {', '.join(SURFACE_NORMS)}")
        if not re.match(DEVICE_PATTERN, t.device):
            raise ConfigError(f"unknown device {t.device!r}; use auto, cpu, cuda or cuda:N")
        if t.precision not in PRECISIONS:
            raise ConfigError(f"train.precision={t.precision!r} must be one of {', '.join(PRECISIONS)}")
        if t.softmax not in SOFTMAXES:
            raise ConfigError(f"train.softmax={t.softmax!r} must be one of {', '.join(SOFTMAXES)}")
        if t.sampled_proposal not in PROPOSALS:
            raise ConfigError(f"train.sampled_proposal={t.sampled_proposal!r} must be {' or '.join(PROPOSALS)}")
        if t.softmax == "sampled" and not traits.samples:
            raise ConfigError(f"train.softmax=sampled does not apply to model.kind={m.kind!r} (its softmax scores "
                              "the vocabulary in bands); use train.softmax=full or auto")
        return self

    def absolute_paths(self) -> RunConfig:
        """This config with every file or folder it names made absolute (from the working directory).

        A run stores its config (config.toml, checkpoints), and commands run later from anywhere
        read the corpus, lexicon and input vectors through it. Empty paths stay empty.
        """
        def absolute(path: str) -> str:
            return str(Path(path).expanduser().resolve()) if path else path

        m, lex = self.model, self.model.lexicon
        lex = dataclasses.replace(lex, wn_dir=absolute(lex.wn_dir), tsv_path=absolute(lex.tsv_path),
                                  nltk_data=absolute(lex.nltk_data))
        return dataclasses.replace(
            self, data=dataclasses.replace(self.data, root=absolute(self.data.root)),
            model=dataclasses.replace(m, init_input=absolute(m.init_input), lexicon=lex))


T = TypeVar("T")


def _check_finite(obj: Any, where: str = "") -> None:
    """Every float in a (nested) config must be finite: NaN/inf would only surface as a NaN loss."""
    for f in dataclasses.fields(obj):
        val = getattr(obj, f.name)
        if dataclasses.is_dataclass(val):
            _check_finite(val, f"{where}{f.name}.")
        elif isinstance(val, float) and not math.isfinite(val):
            raise ConfigError(f"{where}{f.name}={val} must be a finite number")


def _build(cls: type[T], values: Mapping[str, Any], where: str) -> T:
    """Build a (nested) frozen dataclass from a plain mapping, rejecting unknown keys."""
    assert dataclasses.is_dataclass(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, val in values.items():
        if key not in fields:
            raise ConfigError(f"unknown config key {where}{key!r}; known keys: {', '.join(fields)}")
        ftype = fields[key].type
        default = getattr(cls(), key)  # type: ignore[call-arg]
        if isinstance(default, dict):
            if not isinstance(val, Mapping):
                raise ConfigError(f"config section {where}{key} must be a table, got {val!r}")
            kwargs[key] = _deepcopy(val)
        elif dataclasses.is_dataclass(default):
            if not isinstance(val, Mapping):
                raise ConfigError(f"config section {where}{key} must be a table, got {val!r}")
            kwargs[key] = _build(type(default), val, f"{where}{key}.")
        else:
            kwargs[key] = _coerce(val, default, f"{where}{key}", str(ftype))
    return cls(**kwargs)


def _coerce(val: Any, default: Any, name: str, ftype: str) -> Any:
    if isinstance(default, bool):
        if isinstance(val, bool):
            return val
        raise ConfigError(f"config value {name}={val!r} must be true or false")
    if is_int(default):
        if is_int(val):
            return val
        raise ConfigError(f"config value {name}={val!r} must be an integer")
    if isinstance(default, float):
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return float(val)
        raise ConfigError(f"config value {name}={val!r} must be a number")
    if isinstance(default, str):
        if isinstance(val, str):
            return val
        if isinstance(val, os.PathLike):
            return os.fspath(val)
        raise ConfigError(f"config value {name}={val!r} must be a string")
    if isinstance(default, tuple):
        if isinstance(val, str):
            val = [v for v in val.split(",") if v]
        if not isinstance(val, (list, tuple)):
            raise ConfigError(f"config value {name}={val!r} must be a list")
        return tuple(tuple(v) if isinstance(v, list) else v for v in val)
    raise ConfigError(f"config value {name}={val!r} has an unsupported type {ftype}")


def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain nested dict (lists, not tuples) for TOML/JSON/checkpoints."""

    def plain(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))


def from_dict(values: Mapping[str, Any]) -> RunConfig:
    return _build(RunConfig, values, "").validate()


#: Config keys added after runs were first stored, each with the value that says what a run stored
#: without it did (which may differ from today's default): a run whose config.toml or checkpoint
#: lacks ``data.min_count`` built its vocabulary without a cutoff. Resume compares config.toml with
#: last.pt and finetuning keeps the run's data settings, so both must read the run as it was.
STORED_BEFORE: dict[str, Any] = {"data.min_count": 1, "train.softmax": "full", "model.surface.norm": "none"}


def stored_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """A run's stored config values (config.toml, a checkpoint's config) with each key of
    :data:`STORED_BEFORE` that they lack set to the value describing that run (a copy)."""
    out: dict[str, Any] = {}
    for key, val in STORED_BEFORE.items():
        _merge(out, key.split("."), val)  # what a run without the key did ...
    _deep_update(out, _deepcopy(values))  # ... under every value the run stored (a malformed table replaces it whole)
    return out


def parse_overrides(texts: Iterable[str]) -> dict[str, Any]:
    """The command line's ``--set section.key=value`` options as an overrides mapping for :func:`load_config`.

    The one place config overrides are parsed from text: each value is read as a TOML value
    (``128``, ``0.5``, ``true``, ``"tanh"``, ``[[1, 32], [2, 32]]``, ``{depth = 2}``), falling back to
    the bare string (``--set data.langs=en,fr``). A key given twice keeps its last value, in the
    last place. Raises :class:`ConfigError` for a text without ``=`` or with an empty key.
    """
    out: dict[str, Any] = {}
    for text in texts:
        if "=" not in text:
            raise ConfigError(f"malformed override {text!r}; write it as section.key=value, e.g. train.lr=0.002")
        key, raw = text.split("=", 1)
        key = ".".join(p for p in key.strip().split(".") if p)
        if not key:
            raise ConfigError(f"malformed override {text!r}; the key is empty")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        out = merge_overrides(out, {key: value})  # re-inserted: applied after the keys given before it
    return out


def merge_overrides(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """One overrides mapping from several, later ones winning: a key a later layer sets is applied
    after every key of the earlier ones (so a flag's value beats a ``--set`` table that holds it).
    ``None`` values are left out (an option not given)."""
    out: dict[str, Any] = {}
    for layer in layers:
        _check_mapping(layer)
        for key, value in (layer or {}).items():
            if value is not None:
                out.pop(key, None)
                out[key] = value
    return out


def _check_mapping(overrides: object) -> None:
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"config overrides are a mapping of dotted keys to values, e.g. {{'model.d': 128}}, not "
                        f"{type(overrides).__name__}; turn --set strings into one with parse_overrides()")


def _override_paths(overrides: Mapping[str, Any] | None) -> list[tuple[list[str], Any]]:
    """``{"model.d": 128}`` as ``[(["model", "d"], 128)]``, checked: a mapping of non-empty dotted keys."""
    if overrides is None:
        return []
    _check_mapping(overrides)
    out = []
    for key, value in overrides.items():
        path = [p for p in key.split(".") if p] if isinstance(key, str) else []
        if not path or len(path) != key.count(".") + 1:
            raise ConfigError(f"malformed override key {key!r}; write it as section.key, e.g. train.lr")
        out.append((path, value))
    return out


def _merge(base: dict[str, Any], path: Sequence[str], value: Any) -> None:
    node = base
    for p in path[:-1]:
        nxt = node.setdefault(p, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"config key {'.'.join(path)} descends into a non-table value")
        node = nxt
    node[path[-1]] = _deepcopy(value) if isinstance(value, Mapping) else value


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The values of a TOML config file, as a plain nested dict (not validated)."""
    if Path(path).exists():  # a FIFO or a device would block the read: refused before it
        check_input_file(path, flag="config file", what="TOML file")
    from groc_base.textio import read_text  # bad bytes: one line naming the file, the line and the fix

    try:
        text = read_text(Path(path), what="config file", error=ConfigError)
        return tomllib.loads(text)
    except FileNotFoundError as exc:
        raise ConfigError(f"config file {path} does not exist; check the path") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc


def load_config(path: str | os.PathLike[str] | None = None, overrides: Mapping[str, Any] | None = None, *,
                base: Mapping[str, Any] | None = None, kind_map: Mapping[str, str] | None = None,
                stored: bool = False) -> RunConfig:
    """Load a TOML config (optional), apply ``overrides``, and validate the result once.

    ``overrides`` maps dotted keys to Python values, applied in order: ``{"model.d": 128,
    "data.langs": ["en", "fr"], "data.root": Path("corpora")}`` (paths may be ``os.PathLike``; a
    mapping value sets a whole table). :func:`parse_overrides` turns ``--set`` strings into one.
    Without ``base``, the starting values are those of the chosen model kind (:func:`kind_defaults`):
    dataclass defaults < the kind's defaults < the file < the overrides. ``base`` (a plain dict such
    as :func:`to_dict` gives) replaces the first two. ``kind_map`` turns the chosen kind into another
    before its defaults are looked up (``train``'s untie: ``{"tied": "untied", "lookup": "untied"}``).
    ``stored``: ``path`` is a run's config.toml, read as the run it describes (:func:`stored_values`).

    Raises :class:`ConfigError` for a missing or invalid file, an unknown key or a bad value, and
    ``TypeError`` when ``overrides`` is not a mapping.
    """
    layers: list[Mapping[str, Any]] = []
    if path is not None:
        layers.append(stored_values(read_config_file(path)) if stored else read_config_file(path))
    parsed = _override_paths(overrides)

    def merged(start: dict[str, Any]) -> dict[str, Any]:
        for layer in layers:
            _deep_update(start, _deepcopy(layer))
        for p, v in parsed:
            _merge(start, p, v)
        return start

    if base is not None:
        return from_dict(merged(dict(_deepcopy(base))))
    # The kind is known only once the file and overrides are applied; its defaults go under them.
    chosen = merged(to_dict(RunConfig())).get("model", {})
    kind = chosen.get("kind") if isinstance(chosen, Mapping) else None
    if kind_map and isinstance(kind, str) and kind in kind_map:
        kind = kind_map[kind]
        parsed.append((["model", "kind"], kind))
    return from_dict(merged(kind_defaults(kind)))


def kind_defaults(kind: Any) -> dict[str, Any]:
    """The default config values (a plain dict) of a run of model ``kind``: the dataclass defaults
    under the kind's own (:attr:`~polyglot_groc.kind_traits.KindTraits.defaults`)."""
    values = to_dict(RunConfig())
    if isinstance(kind, str) and kind in KIND_DEFAULTS:
        _deep_update(values, {"model": _deepcopy(KIND_DEFAULTS[kind])})
    return values


def _deepcopy(m: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _deepcopy(v) if isinstance(v, Mapping) else v for k, v in m.items()}


def _deep_update(dst: dict[str, Any], src: Mapping[str, Any]) -> None:
    for k, v in src.items():
        if isinstance(v, Mapping) and isinstance(dst.get(k), dict):
            _deep_update(dst[k], v)
        else:
            dst[k] = v


def dump_toml(cfg: RunConfig) -> str:
    """A config as TOML text (a run's config.toml), written by ``tomli-w``: any string (a newline or a
    quote in a path), any key (``[languages."x y"]`` is quoted) and lists of tables round-trip through
    :func:`load_config`. Compare two configs' files by their parsed values, not their text."""
    return tomli_w.dumps(to_dict(cfg))
