"""The device checks on CUDA (``pytest -m cuda`` on a GPU machine), each beside its CPU twin.

Every test runs once per device: the ``cpu`` case always runs (the same logic on CPU, so the
checks cannot rot on machines without a GPU), the ``cuda`` case carries the ``cuda`` marker and
skips cleanly where CUDA is not available. ``benchmarks/gpu_campaign.py run cuda-tests`` runs
``pytest -m cuda tests/test_cuda.py`` on the GPU and records the outcome.

* the grouped and the padded char-CNN give the CPU encoder's embeddings and gradients;
* bf16 training runs and bf16 evaluation stays within 1% of fp32 perplexity;
* a sampled-softmax step gives the CPU's loss and gradients; ``train.precision=auto`` is bf16 there;
* ``torch.compile`` of the surface encoder equals eager and does not fall back (on CPU the twin
  uses the ``aot_eager`` backend: the same dynamo capture and AOT autograd without the ~40 s of
  C++ code generation inductor needs there);
* a one-process process group (NCCL on CUDA, gloo on CPU): the collectives the data-parallel
  trainer uses (the autograd all-gather of the sharded vocabulary encoder, the gradient
  all-reduce) give the single-process results. NCCL refuses two ranks on one GPU, so the
  trainer's multi-rank path itself needs two GPUs (tests/test_distributed.py checks it with gloo);
* a checkpoint written by a run on the device loads on CPU and scores the same perplexity;
* open-vocabulary evaluation with a cache and the frequency-bin analysis run on the device
  (``device=``) and give the CPU's figures, for a compositional and an adaptive model.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.device import maybe_compile
from polyglot_groc.model.surface import SurfaceEncoder
from polyglot_groc.training.distributed import DistContext, average_gradients, sharded_encoder
from polyglot_groc.training.evaluation import evaluate_split
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config

NO_CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                             reason="needs a CUDA GPU (run `pytest -m cuda tests/test_cuda.py` on the GPU machine)")
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=[pytest.mark.cuda, NO_CUDA])]

WORDS = ["a", "ab", "die", "Haus", "Häuser", "Auseinandersetzung", "Auseinandersetzungen",
         "Donaudampfschifffahrtsgesellschaftskapitänsmütze", "x" * 45, "y" * 5 + "z" * 30, "hello", "world"]


@contextlib.contextmanager
def exact_fp32() -> Iterator[None]:
    """TF32 off for the comparison (cuBLAS/cuDNN would otherwise round fp32 GEMMs to 10 mantissa bits)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _chars(max_len: int = 40) -> tuple[torch.Tensor, int]:
    charset = Charset.from_words(WORDS, max_len)
    return torch.from_numpy(charset.encode(WORDS)), charset.n_chars


def _encoder(impl: str, n_chars: int, act: str = "relu") -> SurfaceEncoder:
    torch.manual_seed(0)
    cfg = SurfaceConfig(filters=((1, 4), (2, 4), (3, 8), (6, 8)), activation=act, impl=impl)
    return SurfaceEncoder(cfg, n_chars, 12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("act", ["relu", "selu"])
def test_grouped_and_padded_encoders_match_the_cpu_encoder(device: str, act: str) -> None:
    chars, n_chars = _chars()
    reference = _encoder("grouped", n_chars, act)
    ref = reference(chars)
    w = torch.randn_like(ref)
    (ref * w).sum().backward()
    with exact_fp32():
        for impl in ("grouped", "padded"):
            enc = _encoder(impl, n_chars, act)
            enc.load_state_dict(reference.state_dict())
            enc.to(device)
            got = enc(chars.to(device))
            (got * w.to(device)).sum().backward()
            assert torch.allclose(got.cpu(), ref.detach(), atol=1e-4, rtol=0), impl
            for (name, p), (_, q) in zip(enc.named_parameters(), reference.named_parameters(), strict=True):
                assert p.grad is not None and q.grad is not None, (impl, name)
                assert torch.allclose(p.grad.cpu(), q.grad, atol=1e-4, rtol=1e-4), (impl, name)


@pytest.mark.parametrize("device", DEVICES)
def test_bf16_trains_and_evaluates_within_one_percent_of_fp32(device: str, tmp_path: Path) -> None:
    common = ["train.max_steps=4", "train.eval_every=4", "train.log_every=2", f'train.device="{device}"']
    bf16 = Trainer(small_run_config("groc", "en", [*common, 'train.precision="bf16"']), tmp_path / "bf16").fit()
    assert bf16.steps == 4 and all(torch.isfinite(torch.tensor(v)) for v in bf16.last_valid.values())
    trainer = Trainer(small_run_config("groc", "en", [*common, 'train.precision="fp32"']), tmp_path / "fp32")
    trainer.fit()
    bundle, _ = load_bundle(tmp_path / "fp32", "last", device=device)
    with exact_fp32():
        fp32 = evaluate_split(bundle, trainer.corpus, "valid", 2, 8)
        bundle.model.autocast_dtype = torch.bfloat16
        low = evaluate_split(bundle, trainer.corpus, "valid", 2, 8)
    for lang, r in fp32.items():
        assert low[lang].perplexity == pytest.approx(r.perplexity, rel=0.01)
        assert low[lang].perplexity != r.perplexity  # bf16 really ran


@pytest.mark.parametrize("device", DEVICES)
def test_a_sampled_step_on_the_device_gives_the_cpus_loss_and_gradients(device: str) -> None:
    """The sampled training softmax: the same candidates (drawn on the host) give the same loss and
    gradients on the device as on CPU; ``train.precision=auto`` resolves to bf16 on a bf16 GPU."""
    import copy

    import numpy as np

    from polyglot_groc.model.device import bf16_supported, resolve_precision
    from polyglot_groc.model.sampling import CandidateSampler, Proposal
    from tests.test_sampled_softmax import _batch, _bundle

    b = _bundle("groc")
    cpu = b.model.train()
    dev = copy.deepcopy(cpu).to(device).train()
    x, y = _batch(b, ["w00", "w03", "w01", "w07", "<eos>", "w00", "w02", "w01"])
    ids = cpu.screen.ids("en").numpy()
    sampler = CandidateSampler({"en": Proposal.build(ids, np.ones(ids.size), "log-uniform")}, 6, seed=1)
    cand = sampler.draw("en", torch.cat([x, y]).numpy(), step=0)
    grads, losses = [], []
    with exact_fp32():
        for m in (cpu, dev):
            d = next(m.parameters()).device
            out = m(x.to(d), y.to(d), "en", m.init_state(1), candidates=cand.to(d))
            assert out.loss is not None
            out.loss.backward()
            losses.append(float(out.loss))
            grads.append({n: p.grad.detach().cpu() for n, p in m.named_parameters() if p.grad is not None})
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    for name, g in grads[0].items():
        assert torch.allclose(grads[1][name], g, atol=1e-5, rtol=1e-4), name
    expected = "bf16" if device == "cuda" and bf16_supported(torch.device(device)) else "fp32"
    assert resolve_precision("auto", torch.device(device)) == expected


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_encoder_equals_eager_without_falling_back(device: str, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    if device == "cpu":  # inductor's C++ code generation costs ~40 s on a CPU: capture without it
        monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="aot_eager"))
    torch._dynamo.reset()
    chars, n_chars = _chars(20)
    chars = chars.to(device)
    enc = _encoder("padded", n_chars).to(device)
    with exact_fp32():
        eager = enc.encode_fn(chars)
        enc.use_compiler(maybe_compile)
        with caplog.at_level(logging.WARNING):
            compiled = enc.encode_fn(chars)
            compiled.sum().backward()
    # maybe_compile logs "torch.compile is unavailable" / "torch.compile failed" when it falls back
    assert "torch.compile is unavailable" not in caplog.text and "torch.compile failed" not in caplog.text
    assert torch.allclose(compiled, eager, atol=1e-5, rtol=0)
    assert enc.char_emb.weight.grad is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _collectives_worker(rank: int, port: int, device: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    torch.set_num_threads(1)
    dist = torch.distributed
    dist.init_process_group(backend="nccl" if device == "cuda" else "gloo", rank=0, world_size=1)
    try:
        chars, n_chars = _chars(20)
        chars = chars.to(device)
        with exact_fp32():
            enc = _encoder("padded", n_chars).to(device)
            direct = enc(chars)
            direct.sum().backward()
            grads = [p.grad.detach().clone() for p in enc.parameters() if p.grad is not None]
            enc.zero_grad(set_to_none=True)
            ctx = DistContext(rank=0, world=1)
            # The sharded encoder maps vocabulary ids to rows: here the ids index the rows of ``chars``.
            gathered = sharded_encoder(lambda ids: enc(chars[ids]), ctx)(torch.arange(chars.shape[0], device=device))
            gathered.sum().backward()
            after = [p.grad.detach().clone() for p in enc.parameters() if p.grad is not None]
            average_gradients(list(enc.parameters()), ctx.world)
            averaged = [p.grad.detach().clone() for p in enc.parameters() if p.grad is not None]
            total = torch.ones(3, device=device)
            dist.all_reduce(total)
        result = {
            "backend": dist.get_backend(),
            "values": bool(torch.allclose(gathered, direct.detach(), atol=1e-5, rtol=0)),
            "gather_grads": all(torch.allclose(a, g, atol=1e-5, rtol=1e-5) for a, g in zip(after, grads, strict=True)),
            "all_reduce_grads": all(torch.equal(a, b) for a, b in zip(averaged, after, strict=True)),
            "all_reduce": total.cpu().tolist(),
        }
    finally:
        dist.destroy_process_group()
    Path(out).write_text(json.dumps(result), encoding="utf-8")


@pytest.mark.parametrize("device", DEVICES)
def test_one_process_group_collectives_match_the_single_process_step(device: str, tmp_path: Path) -> None:
    out = tmp_path / "collectives.json"
    mp.start_processes(_collectives_worker, args=(_free_port(), device, str(out)), nprocs=1, start_method="spawn")
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got == {"backend": "nccl" if device == "cuda" else "gloo", "values": True, "gather_grads": True,
                   "all_reduce_grads": True, "all_reduce": [1.0, 1.0, 1.0]}


@pytest.mark.parametrize("device", DEVICES)
def test_checkpoint_written_on_the_device_loads_on_cpu_with_the_same_perplexity(device: str, tmp_path: Path) -> None:
    cfg = small_run_config("groc", "en", ["train.max_steps=3", "train.eval_every=3", f'train.device="{device}"'])
    trainer = Trainer(cfg, tmp_path / "run")
    trainer.fit()
    assert next(trainer.model.parameters()).device.type == device
    on_device, _ = load_bundle(tmp_path / "run", "last", device=device)
    on_cpu, payload = load_bundle(tmp_path / "run", "last", device="cpu")
    assert all(v.device.type == "cpu" for v in payload["bundle"]["model_state"].values())
    assert all(p.device.type == "cpu" for p in on_cpu.model.parameters())
    with exact_fp32():
        a = evaluate_split(on_device, trainer.corpus, "valid", 2, 8)
        b = evaluate_split(on_cpu, trainer.corpus, "valid", 2, 8)
    for lang, r in a.items():
        assert b[lang].perplexity == pytest.approx(r.perplexity, rel=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_open_vocabulary_scoring_on_the_device_gives_the_cpus_figures(device: str, tmp_path: Path) -> None:
    from polyglot_groc.analysis.workflows import evaluate, freq_bins
    from tests.test_scoring import train_runs

    runs = train_runs(tmp_path, ("groc", "adaptive"))
    for kind in ("groc", "adaptive"):
        with exact_fp32():
            got = [evaluate(run=runs[kind], data=runs["unseen"], cache="neural", cache_lambda=0.9, batch_size=2,
                            device=dev).to_dict()["languages"]["en"] for dev in (device, "cpu")]
            bins = [freq_bins(run_a=runs[kind], run_b=runs["groc"], data=runs["other"], device=dev).to_dict()
                    for dev in (device, "cpu")]
        for key in ("perplexity", "perplexity_seen", "perplexity_new", "perplexity_no_cache"):
            assert got[0][key] == pytest.approx(got[1][key], rel=1e-4), (kind, key)
        assert bins[0]["perplexity_a"] == pytest.approx(bins[1]["perplexity_a"], rel=1e-4)


def test_every_cuda_case_is_marked_and_skips_without_cuda(request: pytest.FixtureRequest) -> None:
    """The marker is registered (``pytest -m cuda`` selects these) and each cuda case skips on CPU."""
    markers = request.config.getini("markers")
    assert any(str(m).startswith("cuda:") for m in markers)
    cuda_params = [p for p in DEVICES if p.id == "cuda"]
    assert cuda_params and all(any(m.name == "cuda" for m in p.marks) for p in cuda_params)
    if not torch.cuda.is_available():
        skip = [m for p in cuda_params for m in p.marks if m.name == "skipif"]
        assert skip and all(m.args[0] for m in skip)

