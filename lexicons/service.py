"""Compile a vocabulary's relational and definitional forms into padded id arrays, with a disk cache.

GroC (seed 000 §3.1) encodes a word ``x`` as ``<c_x, r_x, d_x>``: its surface encoding, the mean
surface encoding of its related words (synonyms + hyponyms, at most 3) and the mean surface
encoding of the words of its definition (at most 10; appendix B.1).  :class:`LexiconService`
turns a vocabulary into the index arrays those means need, once, so the training hot path is
pure tensor indexing:

* ``related_ids[i, :]`` / ``definition_ids[i, :]`` index into ``words + extra_words``;
  ``*_mask`` marks the real entries (pads are id 0 and mask ``False``; the model's masked mean,
  ``polyglot_groc.model.surface.masked_mean``, ignores them).
* ``extra_words`` are related / definition words that are not in the vocabulary.  They are
  encoded compositionally too (from their characters), so they need no parameters; at most
  ``extra_cap`` of them are kept, the most referenced first (ties: alphabetical).
  ``extra_cap=0`` reproduces the thesis, which kept only forms that are in the vocabulary
  (seed 004 §4.5: "we keep only the words that are present in the vocabulary itself").
* A word in several languages gets the forms of the first of its languages (in the order given)
  whose lexicon has an entry for it: one set of forms per surface string (seed 004 §5.3).
* ``coverage < 1`` drops whole entries deterministically, by a hash of the word that is stable
  across runs and machines, for the Table 4 lexicon-coverage experiment.  Relational and
  definitional entries are dropped independently (differently salted hashes), as the seed does
  ("we treat relational independently of definitional forms").  ``coverage`` is the fraction
  of entries *kept*, so 16% of an 82%-covered vocabulary is ``coverage=16/82``.
* ``use_relations`` / ``use_definitions=False`` give all-false masks (Table 3 ablations).

Results are cached on disk (``.npz`` + ``.json``, each written atomically) under a key made of the
lexicon's specs, settings and source (a backend's ``source``: for wn, the database folder and
file identity), a fingerprint of the vocabulary and its languages, and every setting above; any
change gives a new key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groc_base.checks import is_int
from groc_base.errors import CheckpointError, ConfigError, InputError, LexiconError
from groc_base.fileio import atomic_write
from groc_base.wording import counted
from lexicons.protocol import Lexicon, normalize_lang

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CompiledForms",
    "LexiconService",
    "WordForms",
    "open_lexicon",
    "vocab_fingerprint",
]

logger = logging.getLogger(__name__)

#: Bumped whenever compiled output changes for the same inputs (invalidates old cache files).
FORMAT_VERSION = 1
_ARRAYS = ("related_ids", "related_mask", "definition_ids", "definition_mask")


def vocab_fingerprint(words: Sequence[str], word_langs: Sequence[Sequence[str]]) -> str:
    """Hash of the vocabulary with each word's languages (order matters: it is the priority)."""
    h = hashlib.sha256()
    for word, langs in zip(words, word_langs, strict=True):
        h.update(word.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(",".join(langs).encode())
        h.update(b"\x01")
    return h.hexdigest()[:32]


def _unit_hash(word: str, salt: str) -> float:
    """A number in [0, 1) from the word alone: stable across runs, unlike ``hash()``."""
    digest = hashlib.blake2b(f"{salt}\x00{word}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


@dataclass(frozen=True)
class WordForms:
    """One word's forms before id conversion (what ``lexicon lookup`` prints).

    ``related`` holds one string per related word (a multiword lemma keeps its spaces);
    ``definition_lang`` is the language of the definition's gloss, which for a non-English word
    is often English (borrowed through ILI); None without a definition, or when the backend
    cannot say (it has no ``definition_lang`` method).
    """

    word: str
    lang: str | None
    related: list[str]
    definition: list[str]
    definition_lang: str | None = None


@dataclass(frozen=True, eq=False)
class CompiledForms:
    """A vocabulary's forms as padded id arrays; plain arrays and values, checkpoint-friendly.

    Ids index into ``words + extra_words`` (``words`` being the vocabulary passed to
    :meth:`LexiconService.compile`).  ``fingerprint`` is the cache key: it identifies the lexicon,
    the vocabulary and all settings together.
    """

    extra_words: list[str]
    related_ids: np.ndarray  # int64 (V, max_related)
    related_mask: np.ndarray  # bool (V, max_related)
    definition_ids: np.ndarray  # int64 (V, max_definition)
    definition_mask: np.ndarray  # bool (V, max_definition)
    specs: list[str]
    fingerprint: str
    vocab_fingerprint: str
    coverage_stats: dict[str, float]
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        v = self.related_ids.shape[0] if self.related_ids.ndim == 2 else -1
        checks = [
            (self.related_ids, np.int64),
            (self.definition_ids, np.int64),
            (self.related_mask, np.bool_),
            (self.definition_mask, np.bool_),
        ]
        for arr, dtype in checks:
            if not isinstance(arr, np.ndarray) or arr.ndim != 2 or arr.shape[0] != v or arr.dtype != dtype:
                raise CheckpointError(
                    "compiled lexicon forms are inconsistent: expected 2-d int64 ids and bool masks with one "
                    "row per word; recompile them"
                )
        if self.related_ids.shape != self.related_mask.shape or self.definition_ids.shape != self.definition_mask.shape:
            raise CheckpointError("compiled lexicon forms have ids and masks of different shapes; recompile them")
        limit = v + len(self.extra_words)
        for ids in (self.related_ids, self.definition_ids):
            if ids.size and (ids.min() < 0 or ids.max() >= max(limit, 1)):
                raise CheckpointError(
                    f"compiled lexicon forms index outside words + extra_words ({limit}); recompile them"
                )
        for arr in (self.related_ids, self.related_mask, self.definition_ids, self.definition_mask):
            arr.setflags(write=False)  # frozen means frozen: shared between model and cache

    @property
    def num_words(self) -> int:
        """Vocabulary size ``V`` (rows of every array)."""
        return int(self.related_ids.shape[0])

    @property
    def num_forms(self) -> int:
        """``V + len(extra_words)``: rows of the surface-encoding table the ids index."""
        return self.num_words + len(self.extra_words)

    def forms_of(self, i: int, words: Sequence[str]) -> WordForms:
        """Word ``i``'s forms back as strings (inspection and tests)."""
        table = list(words) + self.extra_words
        related = [table[j] for j in self.related_ids[i][self.related_mask[i]]]
        definition = [table[j] for j in self.definition_ids[i][self.definition_mask[i]]]
        return WordForms(table[i], None, related, definition)

    def to_state(self) -> dict[str, Any]:
        """Plain dict (numpy arrays, lists, strings, numbers) for a checkpoint."""
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        # Copies: the stored arrays are read-only, which torch.as_tensor warns about.
        state: dict[str, Any] = {name: np.array(getattr(self, name), copy=True) for name in _ARRAYS}
        state.update(
            format=FORMAT_VERSION,
            extra_words=list(self.extra_words),
            specs=list(self.specs),
            fingerprint=self.fingerprint,
            vocab_fingerprint=self.vocab_fingerprint,
            coverage_stats=dict(self.coverage_stats),
            settings=dict(self.settings),
        )
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> CompiledForms:
        """Inverse of :meth:`to_state`; arrays may be numpy arrays or CPU torch tensors."""
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        try:
            if int(state.get("format", -1)) != FORMAT_VERSION:
                raise CheckpointError(
                    f"compiled lexicon forms have format {state.get('format')!r}, expected {FORMAT_VERSION}; recompile"
                )
            arrays = {}
            for name in _ARRAYS:
                value = state[name]
                arr = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
                arrays[name] = arr.astype(np.bool_ if name.endswith("mask") else np.int64, copy=True)
            return cls(
                extra_words=[str(w) for w in state["extra_words"]],
                specs=[str(s) for s in state["specs"]],
                fingerprint=str(state["fingerprint"]),
                vocab_fingerprint=str(state["vocab_fingerprint"]),
                coverage_stats={str(k): float(v) for k, v in dict(state["coverage_stats"]).items()},
                settings=dict(state.get("settings", {})),
                **arrays,
            )
        except KeyError as exc:
            raise CheckpointError(f"compiled lexicon forms lack {exc.args[0]!r}; recompile them") from exc


class LexiconService:
    """Compile (and cache) GroC's relational and definitional forms for a vocabulary.

    Args:
        lexicon: any :class:`lexicons.protocol.Lexicon`.
        max_related: related words kept per word (seed: 3).
        max_definition: definition tokens kept per word (seed: 10).
        extra_cap: most out-of-vocabulary form words kept (``None``: all; ``0``: none, as the thesis).
        cache_dir: where compiled forms are cached; ``None`` disables the cache.
        use_relations / use_definitions: ablations (Table 3); ``False`` gives empty masks.
        coverage: fraction of lexicon entries kept (Table 4), in ``[0, 1]``.
    """

    def __init__(
        self,
        lexicon: Lexicon,
        max_related: int = 3,
        max_definition: int = 10,
        extra_cap: int | None = 50000,
        cache_dir: Path | str | None = None,
        use_relations: bool = True,
        use_definitions: bool = True,
        coverage: float = 1.0,
    ) -> None:
        for name, value in (("max_related", max_related), ("max_definition", max_definition)):
            if not is_int(value) or value < 0:
                raise ConfigError(f"{name} must be a non-negative integer, got {value!r}")
        if extra_cap is not None and (not is_int(extra_cap) or extra_cap < 0):
            raise ConfigError(f"extra_cap must be a non-negative integer or None, got {extra_cap!r}")
        if isinstance(coverage, bool) or not isinstance(coverage, int | float) or not 0.0 <= float(coverage) <= 1.0:
            raise ConfigError(f"coverage must be a fraction in [0, 1], got {coverage!r}; e.g. 0.5 keeps half")
        if not isinstance(lexicon, Lexicon):
            raise ConfigError(
                f"{type(lexicon).__name__} is not a lexicon (needs specs, languages, related, definition)"
            )
        self.lexicon = lexicon
        self.max_related = max_related
        self.max_definition = max_definition
        self.extra_cap = extra_cap
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self.use_relations = bool(use_relations)
        self.use_definitions = bool(use_definitions)
        self.coverage = float(coverage)

    # -- public -----------------------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "max_related": self.max_related,
            "max_definition": self.max_definition,
            "extra_cap": self.extra_cap,
            "use_relations": self.use_relations,
            "use_definitions": self.use_definitions,
            "coverage": self.coverage,
        }

    def lookup(self, word: str, langs: Sequence[str]) -> WordForms:
        """The forms ``compile`` would use for ``word`` (before limits, coverage and id mapping)."""
        lex_langs = set(self.lexicon.languages())
        for lang in dict.fromkeys(normalize_lang(x) for x in langs):
            if lang not in lex_langs:
                continue
            related, definition = self.lexicon.related(word, lang), self.lexicon.definition(word, lang)
            if related or definition:
                gloss_lang = getattr(self.lexicon, "definition_lang", None)
                where = gloss_lang(word, lang) if definition and callable(gloss_lang) else None
                return WordForms(word, lang, related, definition, where)
        return WordForms(word, None, [], [])

    def cache_key(self, words: Sequence[str], word_langs: Sequence[Sequence[str]]) -> str:
        """The fingerprint :meth:`compile` files its result under."""
        langs = self._normalized_langs(words, word_langs)
        return self._key(vocab_fingerprint(words, langs))

    def compile(self, words: Sequence[str], word_langs: Sequence[Sequence[str]]) -> CompiledForms:
        """Forms of every word as id arrays (see the module docstring); cached when possible."""
        langs = self._normalized_langs(words, word_langs)
        vfp = vocab_fingerprint(words, langs)
        key = self._key(vfp)
        cached = self._load(key)
        if cached is not None:
            return cached
        t0 = time.perf_counter()
        forms = self._compile(list(words), langs, key, vfp)
        logger.info(
            "compiled lexicon forms for %d words in %.1fs (%d extra words)",
            len(words),
            time.perf_counter() - t0,
            len(forms.extra_words),
        )
        self._save(key, forms)
        return forms

    # -- internals --------------------------------------------------------------------------

    @staticmethod
    def _normalized_langs(words: Sequence[str], word_langs: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
        if isinstance(words, str) or isinstance(word_langs, str):
            raise InputError("words and word_langs must be sequences (one entry per word), not strings")
        if len(words) != len(word_langs):
            raise InputError(
                f"got {counted(len(words), 'word')} but {counted(len(word_langs), 'language list')}; give one list of "
                "languages per word"
            )
        seen: dict[str, int] = {}
        for i, word in enumerate(words):
            if not isinstance(word, str) or not word:
                raise InputError(f"word {i} is {word!r}; every vocabulary entry must be a non-empty string")
            if word in seen:
                raise InputError(f"word {word!r} occurs twice in the vocabulary (positions {seen[word]} and {i})")
            seen[word] = i
        memo: dict[tuple[str, ...], tuple[str, ...]] = {}
        out = []
        for i, langs in enumerate(word_langs):
            if isinstance(langs, str):
                raise InputError(
                    f"languages of word {words[i]!r} are the string {langs!r}; give a list such as [{langs!r}]"
                )
            raw = tuple(langs)
            norm = memo.get(raw)
            if norm is None:
                norm = memo[raw] = tuple(dict.fromkeys(normalize_lang(x) for x in raw))
            out.append(norm)
        return out

    def _key(self, vfp: str) -> str:
        lexicon = self.lexicon
        payload = {
            "format": FORMAT_VERSION,
            "backend": f"{type(lexicon).__module__}.{type(lexicon).__qualname__}",
            "specs": list(lexicon.specs),
            "lexicon_settings": getattr(lexicon, "settings", None),
            # Where the data is read from, for backends whose specs do not hash the content (wn).
            "source": getattr(lexicon, "source", None),
            "vocab": vfp,
            **self.settings,
        }
        blob = json.dumps(payload, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:32]

    def _compile(self, words: list[str], langs: list[tuple[str, ...]], key: str, vfp: str) -> CompiledForms:
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        lexicon = self.lexicon
        lex_langs = set(lexicon.languages())
        v = len(words)
        related: list[list[str]] = [[] for _ in range(v)]
        definition: list[list[str]] = [[] for _ in range(v)]
        has_entry = np.zeros(v, dtype=bool)
        entry_langs: Counter[str] = Counter()
        try:
            for i, word in enumerate(words):
                for lang in langs[i]:
                    if lang not in lex_langs:
                        continue
                    rel, dfn = lexicon.related(word, lang), lexicon.definition(word, lang)
                    if rel or dfn:
                        related[i], definition[i] = rel, dfn
                        has_entry[i] = True
                        entry_langs[lang] += 1
                        break
        except LexiconError:
            raise
        except (OSError, RuntimeError) as exc:
            raise LexiconError(f"lexicon {lexicon.specs} failed while compiling forms: {exc}") from exc

        if self.coverage < 1.0:
            for i, word in enumerate(words):
                if related[i] and _unit_hash(word, "relations") >= self.coverage:
                    related[i] = []
                if definition[i] and _unit_hash(word, "definitions") >= self.coverage:
                    definition[i] = []
        if not self.use_relations or self.max_related == 0:
            related = [[] for _ in range(v)]
        if not self.use_definitions or self.max_definition == 0:
            definition = [[] for _ in range(v)]

        index = {w: i for i, w in enumerate(words)}
        # Pass 1: count references to out-of-vocabulary words among the forms that would be used.
        counts: Counter[str] = Counter()
        for rel, dfn in zip(related, definition, strict=True):
            counts.update(w for w in rel[: self.max_related] if w not in index)
            counts.update(w for w in dfn[: self.max_definition] if w not in index)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        kept = ranked if self.extra_cap is None else ranked[: self.extra_cap]
        extra_words = [w for w, _ in kept]
        table = dict(index)
        table.update((w, v + j) for j, w in enumerate(extra_words))

        # Pass 2: ids of the forms that survive the cap, first max_* of them.
        related_ids, related_mask = self._pack(related, table, self.max_related)
        definition_ids, definition_mask = self._pack(definition, table, self.max_definition)
        pct = 100.0 / max(v, 1)
        stats = {
            "words": float(v),
            "with_entry_pct": float(has_entry.sum() * pct),
            "with_relations_pct": float(related_mask.any(axis=1).sum() * pct),
            "with_definitions_pct": float(definition_mask.any(axis=1).sum() * pct),
            "extra_words": float(len(extra_words)),
            "extra_dropped": float(len(ranked) - len(extra_words)),
        }
        stats.update({f"entries_{lang}": float(n) for lang, n in sorted(entry_langs.items())})
        return CompiledForms(
            extra_words=extra_words,
            related_ids=related_ids,
            related_mask=related_mask,
            definition_ids=definition_ids,
            definition_mask=definition_mask,
            specs=list(lexicon.specs),
            fingerprint=key,
            vocab_fingerprint=vfp,
            coverage_stats=stats,
            settings=self.settings,
        )

    @staticmethod
    def _pack(lists: list[list[str]], table: dict[str, int], width: int) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        rows: list[int] = []
        cols: list[int] = []
        vals: list[int] = []
        for i, items in enumerate(lists):
            if not items:
                continue
            ids = [j for j in (table.get(w) for w in items) if j is not None][:width]
            rows.extend([i] * len(ids))
            cols.extend(range(len(ids)))
            vals.extend(ids)
        ids_arr = np.zeros((len(lists), width), dtype=np.int64)
        mask = np.zeros((len(lists), width), dtype=np.bool_)
        if vals:
            r, c = np.asarray(rows), np.asarray(cols)
            ids_arr[r, c] = np.asarray(vals, dtype=np.int64)
            mask[r, c] = True
        return ids_arr, mask

    # -- cache ------------------------------------------------------------------------------

    def _paths(self, key: str) -> tuple[Path, Path] | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"lexforms-{key}.npz", self.cache_dir / f"lexforms-{key}.json"

    def _load(self, key: str) -> CompiledForms | None:
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        paths = self._paths(key)
        if paths is None or not paths[1].is_file() or not paths[0].is_file():
            return None
        npz_path, json_path = paths
        try:
            meta = json.loads(json_path.read_text(encoding="utf-8"))
            if meta.get("fingerprint") != key:
                return None
            with np.load(npz_path, allow_pickle=False) as npz:
                state = {name: npz[name] for name in _ARRAYS}
            forms = CompiledForms.from_state({**meta, **state})
        except (OSError, ValueError, KeyError, CheckpointError) as exc:
            # A damaged cache file is not the user's error: recompute and overwrite it.
            logger.warning("ignoring unreadable lexicon cache %s: %s", json_path, exc)
            return None
        logger.info("loaded cached lexicon forms %s", json_path.name)
        return forms

    def _save(self, key: str, forms: CompiledForms) -> None:
        import numpy as np  # lazily: `lexicon lookup` needs no numpy

        paths = self._paths(key)
        if paths is None:
            return
        npz_path, json_path = paths
        state = forms.to_state()
        meta = {k: v for k, v in state.items() if k not in _ARRAYS}
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            # Arrays first, metadata last: the json is the commit marker _load checks for.
            atomic_write(npz_path, lambda fh: np.savez(fh, **{k: state[k] for k in _ARRAYS}))
            atomic_write(json_path, lambda fh: fh.write(json.dumps(meta, ensure_ascii=False).encode("utf-8")))
        except OSError as exc:
            logger.warning("could not write lexicon cache in %s: %s", self.cache_dir, exc)


def open_lexicon(
    backend: str = "wn",
    *,
    specs: Sequence[str] | str | None = None,
    langs: Sequence[str] | None = None,
    wn_dir: Path | str | None = None,
    nltk_data: Path | str | None = None,
    tsv: Path | str | Sequence[Path | str] | None = None,
    cache_dir: Path | str | None = None,
    gloss_specs: Sequence[str] | str | None = None,
    no_fallback: Sequence[str] = (),
    lang_specs: Mapping[str, Sequence[str]] | None = None,
) -> Lexicon:
    """Build a backend by name: ``"wn"`` (default), ``"nltk"`` or ``"tsv"``.

    Empty values (``specs=()``, ``wn_dir=""``) mean "not given", so config defaults pass through.
    ``cache_dir`` keeps the wn backend's loaded wordnets on disk (:class:`WnLexicon`; e.g.
    :func:`groc_base.cache.default_cache_root` ``/ "wordnets"``); the other backends load fast
    and ignore it.
    With ``langs`` and no ``specs``, the wn backend selects the installed wordnets of those
    languages and skips languages that have none (their words get surface forms only).
    ``gloss_specs`` (wn only) names the lexicons that lend definitions through ILI (default: see
    :class:`WnLexicon`); ``no_fallback`` (wn only) the languages that must not borrow from them;
    ``lang_specs`` (wn only, with ``langs``) the lexicons of some languages (a user language's
    registry ``wordnets``), the others' being every installed one in their language.
    """
    if backend == "wn":
        from lexicons.wn_backend import WnLexicon

        gloss = gloss_specs or None
        if specs:
            return WnLexicon(specs, wn_dir=wn_dir or None, cache_dir=cache_dir or None, gloss_specs=gloss,
                             no_fallback=no_fallback)
        return WnLexicon(langs=list(langs) if langs else None, wn_dir=wn_dir or None, missing_ok=True,
                         cache_dir=cache_dir or None, gloss_specs=gloss, no_fallback=no_fallback,
                         lang_specs=lang_specs if langs else None)
    if backend == "nltk":
        from lexicons.nltk_backend import NltkLexicon

        if not langs:
            return NltkLexicon(nltk_data or None)
        available = set(NltkLexicon(nltk_data or None).languages())
        return NltkLexicon(nltk_data or None, [x for x in langs if normalize_lang(x) in available] or ["en"])
    if backend == "tsv":
        from lexicons.tsv_backend import TsvLexicon

        if not tsv:
            raise ConfigError("the tsv lexicon backend needs a file: pass tsv=PATH (or --tsv PATH)")
        return TsvLexicon(tsv)
    raise ConfigError(f"unknown lexicon backend {backend!r}; use 'wn', 'nltk' or 'tsv'")
