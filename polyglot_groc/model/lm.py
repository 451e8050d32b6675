"""The language model: wires a kind's word-side parts to the prefix, screening and loss. No I/O.

The kinds (untied, tied/lookup, bilinear, deep-residual, adaptive, conv, elmo, bilm, groc, groc-lex)
live in :mod:`polyglot_groc.model.kinds`, one module each behind :class:`KindParts`; this class
never branches on the kind, only on its traits.

Bidirectional kinds (``bilm``) have a second, backward prefix. Their training loss is the mean of
the forward next-word NLL and the backward previous-word NLL of the same window, both scored by the
kind's scorer over the same screened vocabulary; the backward pass reads the window right to left
from a zero state (the text to its right comes in the *next* window, so no state can be carried).
``nll_sum`` stays the forward NLL, so perplexities are comparable with the other kinds; the
backward perplexity is scored with ``direction="backward"`` over reversed streams, state carried.

Every score of a target word goes through the kind's scorer: :meth:`LanguageModel.forward`'s loss,
and :meth:`LanguageModel.token_logprobs`, the per-token log-probabilities (with the hidden states
and the probability mass of a set of words) that evaluation on other text, the caches and the
frequency-bin analysis read: never a dot product of their own.

Per step the scored vocabulary (the batch language's words under screening) is embedded once,
in chunks, and reused for inputs and outputs. In eval mode E_out and b are cached; the cache
is dropped on ``train()`` and whenever a parameter changes (tensor version counters).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from groc_base.errors import ModelError
from polyglot_groc.config import ModelConfig
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.kinds import build_parts
from polyglot_groc.model.prefix import LSTMPrefix, State
from polyglot_groc.model.sampling import Candidates
from polyglot_groc.model.screen import LanguageScreen


@dataclass
class LMOutput:
    """What a forward pass returns; ``loss`` is the mean NLL over the batch's targets."""

    loss: torch.Tensor | None  # () mean NLL, None without targets
    #: () summed NLL (nats), detached and on the model's device: reading it (float()) syncs the
    #: host with the device, so the trainer only does so at logging intervals.
    nll_sum: torch.Tensor
    n_tokens: int
    state: State
    logits: torch.Tensor | None = None  # (B, T, V_l) when requested
    #: The prefix's top output after / before its dropout (AWD AR / TAR regularisers).
    hidden: torch.Tensor | None = None  # (B, T, d)
    hidden_raw: torch.Tensor | None = None  # (B, T, d)
    #: Bidirectional kinds in training (``direction=None``): the backward NLL of the window (summed,
    #: detached), read right to left from a zero state. None otherwise.
    nll_sum_backward: torch.Tensor | None = None


@dataclass
class TokenLogProbs:
    """What :meth:`LanguageModel.token_logprobs` returns for one window."""

    logp: torch.Tensor  # (B, T) float64 log p(target | history); -inf where the target is not scored
    state: State  # the prefix's state after the window
    hidden: torch.Tensor  # (B, T, d) the prefix's top output that predicted each target
    mass: torch.Tensor | None = None  # (B, T) float64 total probability of the requested ids


@dataclass
class _Tables:
    ids: torch.Tensor  # (V_l,) global ids scored
    e_in: torch.Tensor | None  # (V_l, d) input embeddings of those ids (shared function only)
    e_out: torch.Tensor  # (V_l, d)
    bias: torch.Tensor  # (V_l,)


class LanguageModel(nn.Module):
    def __init__(self, cfg: ModelConfig, n_chars: int, n_words: int,
                 lang_ids: Mapping[str, torch.Tensor]) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d
        self.kind = cfg.kind
        parts = build_parts(cfg, n_chars, n_words)
        self.input_embedder: nn.Module = parts.input_embedder
        self.output_embedder: nn.Module = parts.output_embedder
        self.output_net: nn.Module = parts.output_net
        self.bias: nn.Module = parts.bias
        self.scorer: nn.Module = parts.scorer
        self._parts = parts
        #: The kind's traits (polyglot_groc/kind_traits.py): what the parts compose, whether they sample.
        self.traits = kind_traits(cfg.kind)
        if cfg.freeze_input:
            # Seed 003: the input table stays fixed; biases and every other part keep training.
            for p in self.input_embedder.parameters():
                p.requires_grad_(False)
        self.word_drop = cfg.prefix.word_dropout
        bidirectional = self.traits.bidirectional
        self.prefix = LSTMPrefix(cfg.prefix, d, cfg.init_range, project=bidirectional)
        #: The backward stack of a bidirectional kind (its own weights, the same sizes), else None.
        self.backward_prefix: LSTMPrefix | None = (
            LSTMPrefix(cfg.prefix, d, cfg.init_range, project=True) if bidirectional else None)
        self.screen = LanguageScreen(lang_ids, n_words)
        self._cache: dict[object, _Tables] = {}
        self._cache_version: int | None = None
        # Frozen-step cache (seed 000 B.4 sparse updates): the embedder's table, valid while the
        # embedder's parameters are unchanged (tensor version counters).
        self._frozen: dict[object, tuple[int, torch.Tensor]] = {}
        #: bf16 autocast of the encoder and prefix (train.precision); logits and loss stay fp32.
        self.autocast_dtype: torch.dtype | None = None
        #: Encodes the scored vocabulary in training; set to a rank-sharded version under torchrun
        #: (training/distributed.py). None: the output embedder itself.
        self.vocab_encoder: Callable[[torch.Tensor], torch.Tensor] | None = None

    # ----------------------------------------------------------------------------------------
    @property
    def shared_embedding(self) -> bool:
        return self.input_embedder is self.output_embedder

    @property
    def compositional_output(self) -> bool:
        return self.traits.composes_output

    @property
    def compositional_input(self) -> bool:
        return self.traits.composes_input

    def set_words(self, chars: torch.Tensor, forms: LexiconForms | None,
                  lang_ids: Mapping[str, torch.Tensor]) -> None:
        """Install the word tables for a (possibly new) vocabulary; lookup tables cannot grow."""
        n_words = len(forms.related_ids) if forms is not None else chars.shape[0]
        for emb in (self.input_embedder, self.output_embedder):
            set_words = getattr(emb, "set_words", None)  # embedders that read the spelling (chars, forms)
            if callable(set_words):
                set_words(chars, forms)
        self.screen = LanguageScreen(lang_ids, n_words)
        self.invalidate_cache()

    def invalidate_cache(self) -> None:
        self._cache.clear()
        self._cache_version = None
        self._frozen.clear()

    def train(self, mode: bool = True) -> LanguageModel:
        self.invalidate_cache()
        return super().train(mode)

    def _param_version(self, module: nn.Module | None = None) -> int:
        # In-place updates (optimizer.step, load_state_dict) bump each tensor's version counter.
        return sum(p._version for p in (module or self).parameters())

    @property
    def bidirectional(self) -> bool:
        return self.backward_prefix is not None

    def _prefix_for(self, direction: str | None) -> LSTMPrefix:
        if direction == "backward":
            if self.backward_prefix is None:
                raise ModelError(f"a {self.kind} model reads left to right only; direction='backward' needs a "
                                 "bidirectional kind (--model bilm)")
            return self.backward_prefix
        if direction not in (None, "forward"):
            raise ModelError(f"direction {direction!r} is unknown; use 'forward' or 'backward'")
        return self.prefix

    def init_state(self, batch_size: int, direction: str | None = None) -> State:
        return self._prefix_for(direction).init_state(batch_size, self._device())

    # ----------------------------------------------------------------------------------------
    def vocab_tables(self, lang: str | None, update_output: bool = True,
                     candidates: Candidates | None = None) -> _Tables:
        """Embeddings, output embeddings and biases of the scored vocabulary (cached in eval).

        ``candidates`` (training only): score just those words, each bias plus its
        ``log_correction`` (``-log π``, :mod:`polyglot_groc.model.sampling`); only they are encoded.
        """
        if candidates is not None:
            return self._candidate_tables(candidates, update_output)
        key = lang
        if not self.training:
            version = self._param_version()
            if version != self._cache_version:
                self._cache.clear()
                self._cache_version = version
            if key in self._cache:
                return self._cache[key]
        dev = self._device()
        if self.screen.device != dev:  # screen ids live on the model's device (moved once)
            self.screen = self.screen.to(dev)
        ids = self.screen.ids(lang)
        if self.training and not update_output:
            # Frozen step: no gradient reaches the embedder, so its table is reused until the
            # parameters change; dropout, the output net and the bias still run (and train).
            version = self._param_version(self.output_embedder)
            hit = self._frozen.get(key)
            if hit is None or hit[0] != version:
                with torch.no_grad():
                    hit = (version, self.output_embedder(ids))
                self._frozen[key] = hit
            e = hit[1]  # (V_l, d), no grad
        else:
            e = (self.vocab_encoder or self.output_embedder)(ids)  # (V_l, d)
        tables = self._tables(ids, e)
        if not self.training:
            self._cache[key] = tables
        return tables

    def _candidate_tables(self, candidates: Candidates, update_output: bool) -> _Tables:
        """The tables of a sampled training step: only the candidates are encoded (locally on each
        rank: ranks draw different candidates, so the vocabulary shards of ``vocab_encoder`` do not
        apply), and each bias carries its candidate's ``-log π`` (the Horvitz–Thompson weight)."""
        if not self.training:
            raise ModelError("sampled candidates are for training steps only; evaluation scores the full "
                             "screened vocabulary (call model.train() or leave candidates out)")
        if not self.traits.samples:
            raise ModelError(f"a {self.kind} model scores its vocabulary in bands, not word by word, so it cannot "
                             "train on a sampled softmax; set train.softmax=full")
        ids = candidates.ids  # (C,)
        if update_output:
            e = self.output_embedder(ids)  # (C, d)
        else:  # a frozen step (sparse updates): the encoder gets no gradient, so no graph is kept
            with torch.no_grad():
                e = self.output_embedder(ids)  # (C, d)
        return self._tables(ids, e, candidates.log_correction)

    def _tables(self, ids: torch.Tensor, e: torch.Tensor, log_correction: torch.Tensor | None = None) -> _Tables:
        """Output net, bias and input rows over the encoded words ``e`` (n, d) of ``ids`` (n,)."""
        # Seed 000 §3.4/B.4: a frozen step freezes only the compositional encoder (its table is
        # reused); the output net and the computed bias train every step like the prefix.
        e_out = self.output_net(e)  # (n, d)
        bias = self.bias(e_out) if self._parts.computed_bias else self.bias(ids)  # (n,)
        if log_correction is not None:
            bias = bias + log_correction.to(bias.dtype)  # s_c - log π_c
        e_in = e
        if self.cfg.output.inputs_after_dropout and self.training:
            # Released code: inputs are rows of the dropped output table (same mask at depth 0).
            drop = getattr(self.output_net, "drop", None)
            e_in = e_out if self.cfg.output.depth == 0 else (drop(e) if callable(drop) else e)
        return _Tables(ids, e_in if self.shared_embedding else None, e_out, bias)

    def _device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def device(self) -> torch.device:
        """Where the parameters live; callers put their batches here."""
        return self._device()

    def embed_inputs(self, inputs: torch.Tensor, tables: _Tables) -> torch.Tensor:
        """(B, T) global ids -> (B, T, d), reusing the vocabulary table when the function is shared."""
        if tables.e_in is not None:
            return self._word_dropout(tables.e_in)[self.screen.local(tables.ids, inputs)]
        uniq, inverse = torch.unique(inputs, return_inverse=True)
        return self._word_dropout(self.input_embedder(uniq))[inverse]

    def _word_dropout(self, table: torch.Tensor) -> torch.Tensor:
        """AWD embedding dropout: zero whole word rows of the input table for this step.  (n, d)"""
        if not self.training or self.word_drop == 0.0:
            return table
        keep = table.new_empty(table.shape[0], 1).bernoulli_(1.0 - self.word_drop) / (1.0 - self.word_drop)
        return table * keep

    def _scores(self, inputs: torch.Tensor, lang: str | None, state: State, update_output: bool = True,
                direction: str | None = None, tables: _Tables | None = None, candidates: Candidates | None = None,
                ) -> tuple[torch.Tensor, _Tables, torch.Tensor, torch.Tensor, State]:
        """The kind's scores of the scored vocabulary at every position: ``(logits (B, T, V_l), tables,
        h (B, T, d), h_raw (B, T, d), state)``; the one forward pass behind :meth:`forward` and
        :meth:`token_logprobs`. ``direction="backward"`` runs the backward prefix (``inputs`` already
        reversed); ``tables`` reuses the vocabulary tables of this step; ``candidates`` scores a
        sampled step's candidates only (logits then (B, T, C))."""
        prefix = self._prefix_for(direction)
        dev = self._device()
        cast = self.autocast_dtype is not None
        with torch.autocast(dev.type, dtype=self.autocast_dtype or torch.bfloat16, enabled=cast):
            if tables is None:
                tables = self.vocab_tables(lang, update_output=update_output, candidates=candidates)
            x = self.embed_inputs(inputs, tables)  # (B, T, d)
        # The prefix runs under autocast on CUDA; oneDNN has no bf16 LSTM with projections, so
        # on CPU it stays fp32 (the encoder, the costly part there, is still autocast).
        with torch.autocast(dev.type, dtype=self.autocast_dtype or torch.bfloat16, enabled=cast and dev.type == "cuda"):
            h, h_raw, state = prefix.forward_with_raw(x.float() if dev.type != "cuda" else x, state)  # (B, T, d)
        # The logits' log-softmax and the loss run in fp32 whatever the precision.
        logits = self.scorer(h.float(), tables.ids, tables.e_out.float(), tables.bias.float())  # (B, T, V_l)
        return logits, tables, h, h_raw, state

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor | None, lang: str | None,
                state: State, return_logits: bool = False, update_output: bool = True,
                direction: str | None = None, candidates: Candidates | None = None) -> LMOutput:
        """inputs/targets: (B, T) global word ids; ``lang`` picks the screen (None = full union).

        ``direction``: None (training: a bidirectional kind's loss is the mean of its forward and
        backward NLL), ``"forward"`` (the forward LM only) or ``"backward"`` (the backward LM on
        reversed text: ``inputs`` are read in the order given, ``state`` is the backward state).
        ``candidates``: a sampled training step (:mod:`polyglot_groc.model.sampling`): the loss
        and ``nll_sum`` are the sampled-softmax estimates over those words, which must hold every
        input and target id. Training steps only: in eval mode it is refused, so no perplexity
        is ever computed from a sample.
        """
        logits, tables, h, h_raw, state = self._scores(inputs, lang, state, update_output, direction,
                                                       candidates=candidates)
        loss = None
        nll_sum, n_tok = torch.zeros((), device=logits.device), 0
        nll_back = None
        if targets is not None:
            nll = self._nll(logits, tables, targets)
            n_tok = int(targets.numel())
            loss = nll / n_tok
            nll_sum = nll.detach()
            if direction is None and self.backward_prefix is not None:
                # The same window right to left: read targets reversed, predict the inputs reversed.
                back_state = self.init_state(inputs.shape[0], "backward")
                logits_b, *_ = self._scores(targets.flip(1), lang, back_state, update_output, "backward", tables)
                nll_b = self._nll(logits_b, tables, inputs.flip(1))
                loss = (nll + nll_b) / (2 * n_tok)
                nll_back = nll_b.detach()
        return LMOutput(loss, nll_sum, n_tok, state, logits if return_logits else None,
                        hidden=h, hidden_raw=h_raw, nll_sum_backward=nll_back)

    def _nll(self, logits: torch.Tensor, tables: _Tables, targets: torch.Tensor) -> torch.Tensor:
        """Summed cross-entropy of ``targets`` (B, T) under ``logits`` (B, T, V_l).  -> ()"""
        local = self.screen.local(tables.ids, targets)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), local.reshape(-1), reduction="sum")

    def layer_outputs(self, inputs: torch.Tensor, direction: str = "forward") -> list[torch.Tensor]:
        """The contextual layers of ``inputs`` (B, T) read in ``direction`` from a zero state:
        ``[x (B, T, d), layer 1 (B, T, size_1), ...]``, the input embeddings then each LSTM layer's
        output (no dropout in eval mode). ``inputs`` are given in reading order (reversed for backward).
        """
        prefix = self._prefix_for(direction)
        uniq, inverse = torch.unique(inputs, return_inverse=True)
        x = self.input_embedder(uniq)[inverse].float()  # (B, T, d)
        outs, _ = prefix.layer_outputs(x, prefix.init_state(inputs.shape[0], self._device()))
        return [x, *outs]

    def token_logprobs(self, inputs: torch.Tensor, targets: torch.Tensor, lang: str | None, state: State, *,
                       mass_ids: torch.Tensor | None = None) -> TokenLogProbs:
        """Per-token log-probabilities of ``targets`` under the model, through its kind's scorer.

        The distribution is the one :meth:`forward`'s loss is computed on (the same pass: for
        ``adaptive`` the tied adaptive softmax with its bands, for the other kinds the screened
        dot-product softmax), normalised over the scored vocabulary of ``lang`` (``None``: the
        full union), normalised in fp32 as the loss is and returned as float64. Targets outside that
        vocabulary (new words a lookup table cannot hold, any id it does not score) get ``-inf``
        instead of an error.

        Args:
            inputs: (B, T) global word ids read.
            targets: (B, T) global ids of the next words (any non-negative id).
            lang: the language whose screen is scored; ``None`` scores every word.
            state: the prefix's state (:meth:`init_state`), carried across windows.
            mass_ids: global ids whose total probability is wanted at every position (caches
                down-weight new words by it); ids outside the scored vocabulary are ignored.

        Returns:
            :class:`TokenLogProbs`: ``logp`` (B, T) float64, the next ``state``, ``hidden``
            (B, T, d), the prefix's top output that predicted each target, and ``mass`` (B, T)
            float64 (zeros when ``mass_ids`` selects nothing; ``None`` without ``mass_ids``).
        """
        logits, tables, h, _, state = self._scores(inputs, lang, state)
        # The log-softmax runs in fp32, as forward's cross-entropy does (the same values); only what
        # is read from it becomes float64. A float64 log-softmax of the whole (B, T, V_l) table cost
        # 4x the fp32 one at a PTB vocabulary and made scoring text slower than evaluating it.
        lsm = F.log_softmax(logits, dim=-1)  # (B, T, V_l); idempotent on normalised scores
        ids = tables.ids
        targets = targets.to(ids.device)
        scored = torch.isin(targets, ids)  # (B, T)
        local = self.screen.local(ids, torch.where(scored, targets, ids[0]))  # (B, T)
        lp = lsm.gather(-1, local.unsqueeze(-1)).squeeze(-1).double()  # (B, T)
        lp = torch.where(scored, lp, torch.full_like(lp, -math.inf))
        mass = None
        if mass_ids is not None:
            cols = torch.isin(ids, mass_ids.to(ids.device))  # (V_l,)
            mass = lsm[..., cols].double().exp().sum(-1) if bool(cols.any()) else torch.zeros_like(lp)  # (B, T)
        return TokenLogProbs(lp, state, h, mass)

    def embed_words(self, ids: torch.Tensor, side: str = "input") -> torch.Tensor:
        """Embeddings of arbitrary word ids for export.  (n,) -> (n, d)

        ``side="output"`` applies the output net (what the softmax scores against).
        """
        emb = self.input_embedder if side == "input" else self.output_embedder
        e = emb(ids)
        return self.output_net(e) if side == "output" else e


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def parameter_split(model: LanguageModel) -> dict[str, int]:
    """|Θ| as in seed 000 Table 2, split into word embeddings (input and output tables or
    functions), prefix and output (output net, bias, softmax head); shared tensors count once."""
    seen: set[int] = set()

    def count(*modules: nn.Module) -> int:
        n = 0
        for m in modules:
            for p in m.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    n += p.numel()
        return n

    prefixes = [model.prefix] + ([model.backward_prefix] if model.backward_prefix is not None else [])
    split = {"embeddings": count(model.input_embedder, model.output_embedder), "prefix": count(*prefixes),
             "output": count(model.output_net, model.bias, model.scorer)}
    split["total"] = sum(split.values())
    return split
