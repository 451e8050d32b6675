"""A model together with what it needs to map words to tensors: vocabulary, charset, forms.

This is the one place that builds a :class:`LanguageModel` from a config and a vocabulary and
rebuilds it from a checkpoint; training, evaluation, export, alignment and ELMo conversion all
go through it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from groc_base.checks import setting
from groc_base.errors import CheckpointError, ConfigError, ModelError
from groc_base.wording import agree, counted
from polyglot_groc.config import ModelConfig, RunConfig, from_dict, stored_values, to_dict
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.access import check_checkpoint_name
from polyglot_groc.model.charset import Charset, check_word_lengths
from polyglot_groc.model.checkpoint import load_checkpoint
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.lm import LanguageModel
from polyglot_groc.model.vocab import Vocab

log = logging.getLogger(__name__)


@dataclass
class ModelBundle:
    cfg: RunConfig
    vocab: Vocab
    charset: Charset
    model: LanguageModel
    #: Related/definition words outside the vocabulary, encoded compositionally (rows V.. of chars).
    extra_words: tuple[str, ...] = ()
    forms: LexiconForms | None = None
    #: Lexicon metadata (specs, coverage) kept for reporting and for embedding new words later.
    lexicon_info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, cfg: RunConfig, vocab: Vocab, charset: Charset | None = None,
               forms: LexiconForms | None = None, extra_words: Sequence[str] = (),
               lexicon_info: Mapping[str, Any] | None = None) -> ModelBundle:
        m = cfg.model
        if charset is None:
            if m.charset.scheme == "elmo-bytes":
                charset = Charset.elmo_bytes(m.charset.max_word_len)
            else:
                # Lexicon words outside the vocabulary are encoded too: their characters count.
                charset = Charset.from_words([*vocab.words, *extra_words], m.charset.max_word_len)
        lang_ids = {lang: torch.from_numpy(vocab.lang_ids(lang)) for lang in vocab.langs}
        model = build_model(m, charset.n_chars, len(vocab), lang_ids)
        bundle = cls(cfg, vocab, charset, model, tuple(extra_words), forms, dict(lexicon_info or {}))
        bundle.install_words()
        return bundle

    def install_words(self) -> None:
        """(Re)build the char table and screens from the vocabulary; no parameter changes."""
        all_words = list(self.vocab.words) + list(self.extra_words)
        check_word_lengths(all_words)
        chars = torch.from_numpy(self.charset.encode(all_words))  # (V + extra, L)
        uses_lexicon = kind_traits(self.model.kind).uses_lexicon
        if uses_lexicon and self.forms is None:
            raise ModelError(f"a {self.model.kind} model needs compiled lexicon forms; pass "
                             f"{setting('model.lexicon.specs', ['SPEC'])}")
        lang_ids = {lang: torch.from_numpy(self.vocab.lang_ids(lang)) for lang in self.vocab.langs}
        self.model.set_words(chars, self.forms if uses_lexicon else None, lang_ids)

    # ----------------------------------------------------------------------------------------
    def with_new_words(self, new_words: Mapping[str, Sequence[str]]) -> ModelBundle:
        """A bundle whose vocabulary also scores ``new_words[lang]`` (open-vocabulary evaluation).

        Only compositional models can do this; new words get r = d = 0 (no lexicon lookup
        here), which is logged. The original bundle is not modified.
        """
        vocab = self.vocab.extend(new_words)
        n_new = len(vocab) - len(self.vocab)
        if n_new and not (self.model.compositional_output or self.model.compositional_input):
            raise ModelError(f"a {self.model.kind} model cannot embed words outside its vocabulary")
        if n_new == 0 and all(not ws for ws in new_words.values()):
            return self
        forms = None
        extra = self.extra_words
        if self.forms is not None:
            forms, extra = self._forms_for(vocab, n_new)
        model = self.model
        bundle = replace(self, vocab=vocab, forms=forms, extra_words=extra, model=model)
        bundle.install_words()
        return bundle

    def _forms_for(self, vocab: Vocab, n_new: int) -> tuple[LexiconForms, tuple[str, ...]]:
        """Lexicon forms for ``vocab`` (this vocabulary, then ``n_new`` words).

        The run's words keep the forms they were trained with (the checkpoint's); the new words get
        theirs from the lexicon the run recorded (``cfg.model.lexicon``), else none (r = d = 0).
        """
        from groc_base.errors import LexiconError
        from polyglot_groc.model.lexforms import compile_forms, describe, extend_forms

        assert self.forms is not None
        f = self.forms
        if n_new == 0:  # only languages joined: every word keeps its forms
            return f, self.extra_words
        try:
            fresh = compile_forms(self.cfg.model.lexicon, vocab, recorded=self.lexicon_info)
        except LexiconError as exc:
            log.warning("the run's lexicon (%s) is unavailable, so %s %s no relational/definitional "
                        "forms (r = d = 0) and results differ from those with it; install it there: %s",
                        describe(self.cfg.model.lexicon), counted(n_new, "new word"), agree(n_new, "gets", "get"), exc)
        else:
            if fresh.forms.related_ids.shape[1:] == f.related_ids.shape[1:] and \
                    fresh.forms.definition_ids.shape[1:] == f.definition_ids.shape[1:]:
                return extend_forms(f, self.extra_words, len(self.vocab), vocab, fresh.forms, fresh.extra_words)
            return fresh.forms, fresh.extra_words
        # Existing forms index rows of [vocab; extra]; new vocabulary rows shift extras by n_new.
        shift = lambda t: torch.where(t >= len(self.vocab), t + n_new, t)  # noqa: E731
        return (LexiconForms(shift(f.related_ids), f.related_mask, shift(f.definition_ids),
                             f.definition_mask).extend(n_new), self.extra_words)

    def to_state(self) -> dict[str, Any]:
        return {
            "config": to_dict(self.cfg),
            "vocab": self.vocab.to_state(),
            "charset": self.charset.to_state(),
            "extra_words": list(self.extra_words),
            "forms": self.forms.to_state() if self.forms is not None else None,
            "lexicon_info": self.lexicon_info,
            # CPU tensors: a checkpoint written on a GPU loads anywhere (device-independent).
            "model_state": {k: v.detach().cpu() for k, v in self.model.state_dict().items()},
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any], source: str = "the checkpoint") -> ModelBundle:
        """Rebuild the bundle a checkpoint's ``bundle`` entry holds (``source`` names it in errors).

        Raises:
            CheckpointError: an entry is missing or malformed, its config is invalid, or its tensors
                do not fit the model its config describes (missing, unexpected, other shapes).
        """
        try:
            cfg = from_dict(stored_values(state["config"]))  # a run stored before a key: as it was
        except KeyError as exc:
            raise CheckpointError(f"{source} lacks the entry {exc.args[0]!r}; it is incomplete: use the run's other "
                                  "checkpoint (best.pt or last.pt) or train again") from exc
        except (ConfigError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"{source} holds an invalid config ({exc}); it is damaged or from "
                                  "another tool: use the run's other checkpoint or train again") from exc
        try:
            vocab = Vocab.from_state(state["vocab"])
            charset = Charset.from_state(state["charset"])
            forms = LexiconForms.from_state(state["forms"]) if state.get("forms") is not None else None
            bundle = cls.create(cfg, vocab, charset, forms, tuple(state.get("extra_words", ())),
                                state.get("lexicon_info", {}))
            tensors = state["model_state"]
        except KeyError as exc:
            raise CheckpointError(f"{source} lacks the entry {exc.args[0]!r}; it is incomplete: use the run's other "
                                  "checkpoint (best.pt or last.pt) or train again") from exc
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            raise CheckpointError(f"{source} holds a malformed vocabulary, charset or lexicon forms "
                                  f"({type(exc).__name__}: {exc}); it is damaged: use the run's other "
                                  "checkpoint or train again") from exc
        check_tensors(bundle.model, tensors, source)
        bundle.model.load_state_dict(tensors)
        return bundle


def check_tensors(model: torch.nn.Module, tensors: object, source: str) -> None:
    """``tensors`` (a checkpoint's ``model_state``) must be exactly ``model``'s: same names, same shapes.

    ``load_state_dict`` would raise a multi-line RuntimeError; this says in one line what does not
    fit, so a damaged or hand-edited checkpoint is named as such.
    """
    if not isinstance(tensors, Mapping) or not all(isinstance(v, torch.Tensor) for v in tensors.values()):
        raise CheckpointError(f"{source} holds no tensor table (model_state); it is damaged: use the run's other "
                              "checkpoint or train again")
    wanted = model.state_dict()
    missing = [k for k in wanted if k not in tensors]
    unexpected = [k for k in tensors if k not in wanted]
    shapes = [(k, tuple(tensors[k].shape), tuple(v.shape)) for k, v in wanted.items()
              if k in tensors and tensors[k].shape != v.shape]
    problems = []
    if missing:
        problems.append(f"{len(missing)} tensor(s) missing (first {missing[0]!r})")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected tensor(s) (first {unexpected[0]!r})")
    if shapes:
        k, got, need = shapes[0]
        problems.append(f"{len(shapes)} of another shape (first {k!r}: {got}, the model needs {need})")
    if problems:
        raise CheckpointError(f"{source} does not fit the model its own config describes: {'; '.join(problems)}; "
                              "it is damaged or was edited: use the run's other checkpoint (best.pt or last.pt) or "
                              "train again")


def bundle_from_payload(payload: Mapping[str, Any], path: Path) -> ModelBundle:
    """The model bundle of the checkpoint at ``path`` whose payload is ``payload``."""
    if not isinstance(payload.get("bundle"), Mapping):
        raise CheckpointError(f"checkpoint {path} lacks its model (the entry 'bundle'); it is incomplete: use the "
                              "run's other checkpoint (best.pt or last.pt) or train again")
    return ModelBundle.from_state(payload["bundle"], source=f"checkpoint {path}")


def build_model(m: ModelConfig, n_chars: int, n_words: int, lang_ids: Mapping[str, torch.Tensor]) -> LanguageModel:
    """``LanguageModel(m, ...)``; when its weights cannot be allocated, a :class:`ModelError` saying what
    it would need (counted on torch's meta device, which allocates nothing) instead of a traceback."""
    try:
        return LanguageModel(m, n_chars, n_words, dict(lang_ids))
    except (MemoryError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and "alloc" not in str(exc).lower():
            raise
        with torch.device("meta"):
            n = sum(p.numel() for p in LanguageModel(m, n_chars, n_words, dict(lang_ids)).parameters())
        gib = 4 * n / 2**30  # fp32 weights
        raise ModelError(f"the model does not fit in memory: model.d={m.d}, model.prefix.hidden={m.prefix.hidden} "
                         f"and {n_words:,} words make {n:,} parameters, {gib:,.1f} GiB of fp32 weights alone and "
                         f"about {4 * gib:,.1f} GiB to train (weights, gradients, Adam's two moments); lower "
                         "model.d or model.prefix.hidden (the paper model: d 256, hidden 1024)") from None


def run_checkpoint_path(run_dir: Path, which: str = "best") -> Path:
    check_checkpoint_name(which)
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"run directory {run_dir} does not exist; train one with polyglot-groc train")
    return run_dir / f"{which}.pt"


def load_bundle(run_dir: Path, which: str = "best", device: str = "cpu") -> tuple[ModelBundle, dict[str, Any]]:
    """Load a run's model bundle (on ``device``: auto|cpu|cuda|cuda:N) and the rest of its payload."""
    from polyglot_groc.model.device import resolve_device

    dev = resolve_device(device)  # before reading: a bad device fails fast
    path = run_checkpoint_path(run_dir, which)
    payload = load_checkpoint(path)  # map_location="cpu"
    bundle = bundle_from_payload(payload, path)
    bundle.model.to(dev)
    bundle.model.eval()
    return bundle, payload
