"""Shared fixtures: tiny corpora written for these tests, a small model config, the shared data dir."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from polyglot_groc.config import (
    ModelConfig,
    PrefixConfig,
    RunConfig,
    SurfaceConfig,
    load_config,
    merge_overrides,
    parse_overrides,
)

TESTS = Path(__file__).resolve().parent
TINY = TESTS / "data" / "tiny"

torch.set_num_threads(1)
# A run picks its threads from $OMP_NUM_THREADS when set (train.threads = 0, model/threads.py): set, a plain
# `pytest` on a busy machine uses the same count in every test, whatever the load (CI sets its own).
os.environ.setdefault("OMP_NUM_THREADS", "1")

#: Overrides that make a model small enough for CPU tests (seconds, not minutes), as the CLI's
#: ``--set`` options (:data:`SMALL_OVERRIDES` is the same as a mapping, for the library).
SMALL = [
    "model.d=16", "model.prefix.hidden=24", "model.prefix.dropout=0.1", "model.output.dropout=0.1",
    "model.surface.filters=[[1, 8], [2, 8], [3, 16]]", "train.batch_size=4", "train.bptt=8",
    "train.eval_batch_size=2", "train.lr=0.005",
]
SMALL_OVERRIDES: dict[str, Any] = parse_overrides(SMALL)


@pytest.fixture
def tiny_data() -> Path:
    return TINY


def small_model_config(kind: str = "groc", d: int = 16) -> ModelConfig:
    return ModelConfig(kind=kind, d=d, surface=SurfaceConfig(filters=((1, 8), (2, 8), (3, 16))),
                       prefix=PrefixConfig(hidden=24, dropout=0.1))


def small_run_config(kind: str = "groc", langs: str = "en",
                     extra: Sequence[str] | Mapping[str, Any] | None = None) -> RunConfig:
    """A small model on the tiny corpus; ``extra``: more overrides, as a mapping or ``--set`` strings."""
    more = extra if isinstance(extra, Mapping) else parse_overrides(extra or [])
    return load_config(None, merge_overrides(SMALL_OVERRIDES, {"model.kind": kind, "data.root": TINY,
                                                               "data.langs": langs.split(",")}, more))


LEXICON_DATA = TESTS / "data" / "lexicon"
#: The hand-written en/fr WN-LMF fixture and its ILI file.
MINI_LMF = LEXICON_DATA / "mini-en-fr.xml"
MINI_ILI = LEXICON_DATA / "mini-ili.tsv"


@pytest.fixture(autouse=True)
def _no_user_wn_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Defaults must never resolve to ~/.wn_data in tests: point them at an empty folder.
    monkeypatch.setenv("POLYGLOT_GROC_WN_DIR", str(tmp_path_factory.mktemp("default-wn")))
    # Nor to the user's ~/.cache/polyglot-groc (compiled lexicon forms, cached wordnets).
    monkeypatch.setenv("POLYGLOT_GROC_CACHE", str(tmp_path_factory.mktemp("default-cache")))


def install_wordnets(wn_dir: Path, *files: Path) -> Path:
    """``wn.add`` the given files into a (temporary) wn data folder."""
    import wn

    from lexicons.wn_backend import wn_data_dir

    with wn_data_dir(wn_dir):
        for f in files:
            wn.add(f, progress_handler=None)
    return wn_dir


@pytest.fixture(scope="module")
def wn_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wn data folder holding the hand-written en/fr mini wordnet."""
    return install_wordnets(tmp_path_factory.mktemp("wn"), MINI_ILI, MINI_LMF)


@pytest.fixture(scope="session")
def kind_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny runs of every model kind and their corpora (:func:`tests.test_scoring.train_runs`), trained once
    per session: test_scoring and test_model_api only read them."""
    from polyglot_groc.config import MODEL_KINDS
    from tests.test_scoring import train_runs

    return train_runs(tmp_path_factory.mktemp("kinds"), MODEL_KINDS)


#: A corpus whose test split holds words its training split lacks (a closed vocabulary keeps them).
CLOSED_TRAIN = "the cat sees the old dog .\na dog likes the cat .\nthe old river sees a cat .\n" * 5
CLOSED_VALID = "the old cat sees a river .\n"
CLOSED_TEST = "the Home-Scale sees a zebra .\nour zebra likes the old dog .\n"
#: The words only the test split has.
TEST_ONLY = frozenset({"Home-Scale", "zebra", "our"})


def write_closed_corpus(root: Path) -> Path:
    """:data:`CLOSED_TRAIN`, ``CLOSED_VALID`` and ``CLOSED_TEST`` as ``root/en/{train,valid,test}.txt``."""
    (root / "en").mkdir(parents=True)
    for split, text in (("train", CLOSED_TRAIN), ("valid", CLOSED_VALID), ("test", CLOSED_TEST)):
        (root / "en" / f"{split}.txt").write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def closed_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tied and GroC runs (2 steps) with the default closed vocabulary on :func:`write_closed_corpus`'s
    corpus (``data``), whose test split has words training never reads; trained once per session."""
    from polyglot_groc.training.trainer import Trainer

    root = tmp_path_factory.mktemp("closed")
    out = {"data": write_closed_corpus(root / "data")}
    for kind in ("tied", "groc"):
        Trainer(small_run_config(kind, "en", ["train.max_steps=2", f'data.root="{out["data"]}"']), root / kind).fit()
        out[kind] = root / kind
    return out


@pytest.fixture(scope="session")
def shared_data() -> Path:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set: shared data tests run in CI (.ci/run sets it)")
    path = Path(root)
    if not path.is_dir():
        pytest.skip(f"POLYGLOT_GROC_DATA={root} is not a directory")
    return path


@pytest.fixture(scope="session")
def wordnet_en_fr(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """``(wn_dir, specs)``: PWN 3.0 and the French OMW imported offline once per session.

    The import is ~50 s on 2 cores, so the tests that need these two wordnets share one: tests
    that only read use ``wn_dir`` in place, tests that write into a wn directory copy it first.
    """
    from lexicons.omw_import import import_omw

    wn_dir = tmp_path_factory.mktemp("wn-en-fr")
    return wn_dir, import_omw(shared_data, ["en", "fr"], wn_dir)


def one_error_line(result: Any) -> str:
    """A CLI result refused as bad input: exit code 2 and exactly one ``error: ...`` line on stderr
    (nothing else, not even a blank line), which is returned for the caller's checks of its wording."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def one_line_exit_2(result: Any, needle: str) -> None:
    """Exit code 2 and a one-line stderr that contains ``needle``."""
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


class RecordingHooks:
    """Training hooks that record what they are told: ``starts`` (each ``on_start`` info, copied),
    ``steps`` (the StepInfo of every step) and ``evals`` (each validation record)."""

    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []
        self.steps: list[Any] = []
        self.evals: list[Any] = []

    def on_start(self, total_steps: int | None, info: Any) -> None:
        self.starts.append(dict(info))

    def on_step(self, info: Any) -> None:
        self.steps.append(info)

    def on_eval(self, record: Any) -> None:
        self.evals.append(record)


def assert_frozen_steps(model: Any, step: Any, steps: int = 3) -> set[str]:
    """Run ``step(i)`` (a forward returning ``.loss``) ``steps`` times with Adam and check seed 000's
    frozen step: the input encoder is not updated, the output net and bias are. Returns the changed names."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for i in range(steps):
        out = step(i)
        assert out.loss is not None
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    encoder = {n for n in before if n.startswith("input_embedder.")}
    assert encoder and not changed & encoder
    assert {n for n in before if n.startswith(("output_net.", "bias."))} <= changed
    return changed
