"""The GPU campaign: every figure that needs an accelerator, as short named stages with a ledger.

A GPU machine is lent in calls of at most ~10 minutes (about 30 minutes of device time per
session), receives only the repository's working tree plus up to 64 MiB of git-ignored
``carry`` paths, has no network and lacks gensim, wn, faiss-cpu, nltk and stanza. So the
campaign is a list of stages, each one command of at most ~9 minutes on one GPU that writes its
JSON (and PNG) to an output folder (``$OUT`` on the device machine), and a ledger committed as
``benchmarks/results/gpu_campaign_ledger.json`` that says which stages are done, when, on which
device, with which command and result files, so the next GPU session starts at the next stage.

Stages (each reuses the benchmark scripts' own code, called with the flags below):

``cuda-tests``    ``pytest -m cuda tests/test_cuda.py``: grouped = padded = CPU char-CNN, bf16,
                  compile, a one-process NCCL group, GPU checkpoints load on CPU.
``throughput``    benchmarks/throughput.py at paper size: lookup / GroC / GroC sparse / groc-lex in
                  fp32, tf32 and bf16, compile off and on, the padded (CUDA's auto) and the grouped
                  char-CNN; GroC/lookup train tokens/s against the issue's target (>= 0.5).
``thesis-align``  benchmarks/polyglot_table.py then benchmarks/align_polyglot.py: GroC and tied
                  lookup on en+fr and en+es (~1M training tokens per language where the shared text
                  has them, thesis sizes from polyglot_groc/configs/paper.toml); Table 5.2's
                  per-language test perplexity and Table 5.4's P@1/5/10 beside the identical-string
                  and char 3-gram baselines, non-identical words apart.
``ptb-paper``     benchmarks/ptb_convergence.py with seed 000's PTB configuration
                  (polyglot_groc/configs/ptb_paper.toml): tied, GroC and GroC+lex, B.1 early
                  stopping, as many epochs as fit; always ``--resume``, so a later call on a still
                  warm machine continues exactly where the wall-clock cap stopped each model.
``elmo-init``     benchmarks/elmo_init.py (Table 5.6) on the en+es thesis corpora at thesis sizes.
``family``        benchmarks/output_family.py (Table 2) at output_family.PAPER's sizes.

Workflow (``python benchmarks/gpu_campaign.py ...``; every command prints one JSON object)::

    status                          # the ledger, and the next pending stage
    prepare STAGE... [--wheels]     # CPU machine (PyPI reachable): fill .campaign/ (git-ignored);
                                    # also spelt --prepare
    commands [STAGE...]             # the device tool's command line and carry list per stage
    next                            # the same for the next pending stage (next --run: run it here)
    run STAGE [--out DIR]           # on the GPU machine (the printed command does this)
    run STAGE --background; poll STAGE --wait S   # detached (setsid) run, collected into --out
    record DIR                      # CPU machine: file a GPU result (files_at) and mark the stage
    reset STAGE                     # pending again (a failed stage waits for this)
    run STAGE --dry-run             # CPU: the same stage at toy size (after ``prepare --toy``)

A stage works to a time budget (``--minutes``, default 8.5, inside the tool's 10-minute call):
training runs get ``max_minutes`` caps from what is left, throughput skips the configurations
it has no time for, and ``--steps`` changes a stage's step budget. A stage that crashes still
writes its JSON (``summary: {ok: false, error}``), which ``record`` files as ``failed``.

``prepare`` writes, per stage, ``.campaign/data/<stage>/`` (the slices of ``$POLYGLOT_GROC_DATA``
it reads, same layout: PTB, prepared per-language text, MUSE dictionaries, word-similarity files,
WordNet 3.0 WNDB + ILI map, which the stage imports into ``wn`` on the device) and with
``--wheels`` ``.campaign/whl/<stage>/`` (cp312 manylinux x86_64 wheels of the missing packages
and the dependencies the GPU's own packages do not bring, versions from constraints.txt where
pinned), then checks that each stage's carry is at most 64 MiB. ``--toy`` prepares the tiny
slices of the dry run under ``.campaign/toy/``. ``run --dry-run`` runs the same functions with
toy sizes on CPU and writes the same JSON keys; it never touches the ledger, and neither a CPU
run nor ``record`` of a dry run can mark a GPU stage done.

Bad input (unknown stage, missing prepared data, a carry over 64 MiB, a GPU stage without CUDA)
is one ``error:`` line and exit status 2 (``benchmarks.common.script_main``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import gzip
import hashlib
import importlib
import importlib.abc
import importlib.util
import inspect
import io
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from benchmarks.common import RESULTS, BadInput, emit, parse_filters, script_main  # noqa: E402

CONFIGS = REPO / "polyglot_groc" / "configs"
#: The device tool: carry limit, and the minutes one stage may take inside a 10-minute call.
CARRY_LIMIT_MIB = 64.0
STAGE_MINUTES = 8.5
CALL_TIMEOUT_S = 600
COMMAND_MAX_CHARS = 2000
#: What the GPU machine has (and so need not be carried), and what it lacks.
GPU_HAS = ("torch", "numpy", "scipy", "matplotlib", "typer", "rich", "filelock", "h5py", "hypothesis", "pytest",
           "tensorboard")
GPU_LACKS = {"gensim": "gensim", "wn": "wn", "faiss-cpu": "faiss", "nltk": "nltk", "stanza": "stanza"}
PIP_PLATFORM = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64"]
#: Environment markers of the GPU machine's interpreter, to resolve requirements.
GPU_MARKERS = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
               "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
               "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
THROUGHPUT_TARGET = 0.5  # the target: GroC train tokens/s at least half of lookup's
THESIS_LANGS = ("en", "fr", "es", "it")  # polyglot_table also prepares es's related language (it)
ALIGN_TARGETS = ("fr", "es")


# -- stages ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    title: str
    packages: tuple[str, ...]  # pip names the GPU machine lacks that the stage imports
    slices: tuple[str, ...]  # data slices of $POLYGLOT_GROC_DATA it reads

    @property
    def carry(self) -> list[str]:
        paths = [f".campaign/whl/{self.name}"] if self.packages else []
        return paths + ([f".campaign/data/{self.name}"] if self.slices else [])


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("cuda-tests", "device tests on CUDA (pytest -m cuda tests/test_cuda.py)", (), ()),
    Stage("throughput", "throughput.py at paper size: precisions, compile, padded vs grouped",
          ("wn", "nltk"), ("ptb", "wordnet")),
    Stage("thesis-align", "Tables 5.2 and 5.4: en+fr, en+es GroC and tied at thesis sizes",
          ("faiss-cpu",), ("corpora", "muse", "wordsim")),
    Stage("ptb-paper", "seed 000 PTB configuration: tied, GroC, GroC+lex to the cap (resumable)",
          ("wn", "nltk"), ("ptb", "wordnet")),
    Stage("elmo-init", "Table 5.6: ELMo -> GroC initialisation vs GroC from scratch (en+es)", (),
          ("corpora:en,es",)),
    Stage("family", "Table 2 at paper size (output_family.py)", ("gensim",), ("ptb",)),
)}


def stage_of(name: str) -> Stage:
    if name not in STAGES:
        raise BadInput(f"unknown stage {name!r}; the stages are {', '.join(STAGES)}")
    return STAGES[name]


#: Sizes of the prepared data: the real stages and the CPU dry run (``--toy``).
DATA_SIZES: dict[str, dict[str, int]] = {
    "real": {"ptb_lines": 0, "train_tokens": 1_000_000, "eval_tokens": 50_000, "wordnet_senses": 0},
    "toy": {"ptb_lines": 120, "train_tokens": 2_500, "eval_tokens": 300, "wordnet_senses": 2},
}


def campaign_dir(args: argparse.Namespace) -> Path:
    return Path(args.campaign_dir) if args.campaign_dir else REPO / ".campaign"


def data_dir(args: argparse.Namespace, stage: Stage, toy: bool) -> Path:
    return campaign_dir(args) / ("toy/data" if toy else "data") / stage.name


def wheel_dir(args: argparse.Namespace, stage: Stage) -> Path:
    return campaign_dir(args) / "whl" / stage.name


# -- the device tool's command line ------------------------------------------------------------------
def device_command(stage: Stage, extra: Sequence[str] = ()) -> str:
    """The ``run`` call's command string: install the carried wheels, then run the stage into $OUT."""
    steps = []
    if stage.packages:
        steps.append("python3 -m pip install -q --no-index --no-deps --target /tmp/site "
                     f".campaign/whl/{stage.name}/*.whl && export PYTHONPATH=/tmp/site:$PWD")
    else:
        steps.append("export PYTHONPATH=$PWD")
    tail = " ".join(shlex.quote(x) for x in extra)
    steps.append(f"python3 benchmarks/gpu_campaign.py run {stage.name} --out $OUT" + (f" {tail}" if tail else ""))
    command = " && ".join(steps)
    if len(command) > COMMAND_MAX_CHARS:  # the tool's limit; a programming error here, not user input
        raise BadInput(f"the {stage.name} command is {len(command)} characters (limit {COMMAND_MAX_CHARS})")
    return command


def stage_commands(args: argparse.Namespace, stage: Stage) -> dict[str, Any]:
    sizes = carry_sizes(args, stage)
    out = {"stage": stage.name, "title": stage.title, "command": device_command(stage), "carry": stage.carry,
           "timeout_s": CALL_TIMEOUT_S, "carry_mib": sizes,
           "prepare": f"python benchmarks/gpu_campaign.py prepare {stage.name} --wheels",
           "record": "python benchmarks/gpu_campaign.py record FILES_AT"}
    if stage.name == "ptb-paper":
        out["background_command"] = device_command(stage, ["--background"]) + \
            f" && python3 benchmarks/gpu_campaign.py poll {stage.name} --out $OUT --wait 480"
        out["continue"] = ("the same command again within 30 s (machine still warm) continues every model "
                           "exactly where the cap stopped it (ptb_convergence.py --resume)")
    return out


# -- sizes of a carry --------------------------------------------------------------------------------
def tree_mib(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    if not path.is_dir():
        return 0.0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def carry_sizes(args: argparse.Namespace, stage: Stage) -> dict[str, Any]:
    whl = tree_mib(wheel_dir(args, stage)) if stage.packages else 0.0
    data = tree_mib(data_dir(args, stage, False)) if stage.slices else 0.0
    return {"wheels": round(whl, 2), "data": round(data, 2), "total": round(whl + data, 2),
            "limit": CARRY_LIMIT_MIB}


# -- data slices -------------------------------------------------------------------------------------
def _copy(src: Path, dst: Path) -> None:
    if not src.is_file():
        raise BadInput(f"{src} is missing from the shared data; check POLYGLOT_GROC_DATA / --data-root")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def slice_ptb(src: Path, dst: Path, lines: int) -> list[str]:
    """text/ptb/ptb.{train,valid,test}.txt.gz: copied, or their first ``lines`` lines (valid/test: a fifth)."""
    words: set[str] = set()
    for split in ("train", "valid", "test"):
        name = f"text/ptb/ptb.{split}.txt.gz"
        if not (src / name).is_file():
            raise BadInput(f"{src / name} is missing from the shared data; check POLYGLOT_GROC_DATA / --data-root")
        with gzip.open(src / name, "rt", encoding="utf-8") as fh:
            text = fh.read()
        if lines:
            keep = text.splitlines()[: lines if split == "train" else max(lines // 5, 2)]
            text = "\n".join(keep) + "\n"
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(dst / name, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            _copy(src / name, dst / name)
        words.update(text.split())
    return sorted(words)


_POS_FILES = ("noun", "verb", "adj", "adv")
_POS_OF = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}


def toy_wordnet(src_tar: Path, dst_tar: Path, words: Iterable[str], senses: int) -> dict[str, int]:
    """A WNDB archive with only ``words``' first ``senses`` synsets per part of speech.

    The same format and file names as Princeton WordNet 3.0 (``lexicons.omw_import.read_pwn`` reads
    synset ids from each line's offset field, so rewritten lines need no byte offsets); pointers
    and index entries are cut to the kept synsets.
    """
    files: dict[str, str] = {}
    with tarfile.open(src_tar, "r:*") as tar:
        for member in tar.getmembers():
            name = member.name.rsplit("/", 1)[-1]
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None and (name.startswith(("data.", "index.")) or name.endswith(".exc")
                                       or name == "LICENSE"):
                files[name] = handle.read().decode("utf-8")
    wanted = {w.lower() for w in words}
    kept: dict[str, set[str]] = {pos: set() for pos in _POS_FILES}
    out: dict[str, list[str]] = {}
    for pos in _POS_FILES:
        lines = []
        for line in files[f"index.{pos}"].splitlines():
            fields = line.split()
            if not fields or line.startswith(" ") or fields[0] not in wanted:
                continue
            p_cnt = int(fields[3])
            offsets = fields[6 + p_cnt: 6 + p_cnt + int(fields[2])][:senses]
            head = fields[: 6 + p_cnt]
            head[2] = head[4 + p_cnt] = str(len(offsets))
            head[5 + p_cnt] = str(min(int(head[5 + p_cnt]), len(offsets)))
            kept[pos].update(offsets)
            lines.append(" ".join(head + offsets) + "  ")
        out[f"index.{pos}"] = lines
    for pos in _POS_FILES:
        lines = []
        for line in files[f"data.{pos}"].splitlines():
            if not line or line.startswith(" "):
                continue
            before, _, gloss = line.partition(" | ")
            fields = before.split()
            if fields[0] not in kept[pos]:
                continue
            i = 4 + 2 * int(fields[3], 16)
            p_cnt = int(fields[i])
            ptrs = [fields[i + 1 + 4 * j: i + 5 + 4 * j] for j in range(p_cnt)]
            ptrs = [p for p in ptrs if p[1] in kept[_POS_OF[p[2]]]]
            rest = fields[i + 1 + 4 * p_cnt:]
            lines.append(" ".join([*fields[:i], f"{len(ptrs):03d}", *(x for p in ptrs for x in p), *rest])
                         + " | " + gloss)
        out[f"data.{pos}"] = lines
    every = set().union(*kept.values())
    out["index.sense"] = [ln for ln in files.get("index.sense", "").splitlines()
                          if len(ln.split()) == 4 and ln.split()[1] in every]
    for pos in _POS_FILES:
        out[f"{pos}.exc"] = [ln for ln in files.get(f"{pos}.exc", "").splitlines()
                             if any(b in wanted for b in ln.split()[1:])]
    dst_tar.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dst_tar, "w:xz") as tar:
        for name, body in sorted(out.items()):
            data = ("\n".join(body) + "\n").encode("utf-8")
            info = tarfile.TarInfo(f"wordnet/{name}")
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return {"synsets": len(every), "lemmas": sum(len(out[f"index.{p}"]) for p in _POS_FILES)}


def slice_wordnet(src: Path, dst: Path, words: Sequence[str], senses: int) -> dict[str, int]:
    """wordnet/pwn-3.0-wndb-lf.tar.xz + omw/ili-map-pwn30.tab (a toy subset for ``senses`` > 0)."""
    tar, ili = "wordnet/pwn-3.0-wndb-lf.tar.xz", "omw/ili-map-pwn30.tab"
    if not senses:
        _copy(src / tar, dst / tar)
        _copy(src / ili, dst / ili)
        return {}
    if not (src / tar).is_file() or not (src / ili).is_file():
        raise BadInput(f"{src} lacks {tar} or {ili}; check POLYGLOT_GROC_DATA / --data-root")
    stats = toy_wordnet(src / tar, dst / tar, words, senses)
    with tarfile.open(dst / tar, "r:xz") as archive:
        kept = {ln.split()[0] + "-" + ln.split()[2].replace("s", "a")
                for m in archive.getmembers() if m.name.split("/")[-1].startswith("data.")
                for ln in (archive.extractfile(m) or io.BytesIO()).read().decode("utf-8").splitlines() if ln}
    lines = [ln for ln in (src / ili).read_text(encoding="utf-8").splitlines()
             if len(ln.split("\t")) == 2 and ln.split("\t")[1].replace("-s", "-a") in kept]
    (dst / ili).parent.mkdir(parents=True, exist_ok=True)
    (dst / ili).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return stats


def slice_corpora(src: Path, dst: Path, train_tokens: int, eval_tokens: int, cache: Path,
                  langs: Sequence[str]) -> dict[str, Any]:
    """corpora/<lang>/{train,valid,test}.txt (and prepare.json) as benchmarks/polyglot_table.py
    prepares them (its ``prepare``, into ``cache`` once for every stage; on the device the
    manifest's digests say they are fresh, so no tokenizer runs there)."""
    from benchmarks.polyglot_table import prepare

    prepared = cache / f"corpora-{train_tokens}-{eval_tokens}"
    entries = prepare(src, prepared, list(THESIS_LANGS), train_tokens, eval_tokens, "auto")
    (dst / "corpora").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(prepared / "prepare.json", dst / "corpora" / "prepare.json")
    for lang in langs:
        shutil.copytree(prepared / lang, dst / "corpora" / lang)
    return {lang: {"tokenizer": e["tokenizer"], "short": e["short"],
                   **{s: v["tokens"] for s, v in e["splits"].items()}} for lang, e in entries.items() if lang in langs}


def slice_muse(src: Path, dst: Path) -> None:
    for tgt in ALIGN_TARGETS:
        for part in ("0-5000", "5000-6500"):
            name = f"eval/dictionaries/en-{tgt}.{part}.txt"
            _copy(src / name, dst / name)


def slice_wordsim(src: Path, dst: Path) -> None:
    for lang in ("en", *ALIGN_TARGETS):
        folder = src / "eval" / "wordsim" / lang
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            _copy(path, dst / "eval" / "wordsim" / lang / path.name)


def prepare_data(src: Path, dst: Path, stage: Stage, toy: bool, cache: Path) -> dict[str, Any]:
    """Every slice ``stage`` reads, under ``dst`` in the shared data's layout, plus ``slices.json``."""
    sizes = DATA_SIZES["toy" if toy else "real"]
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    info: dict[str, Any] = {"stage": stage.name, "toy": toy, "sizes": sizes, "source": str(src), "slices": {}}
    words: list[str] = []
    for name in stage.slices:
        if name == "ptb":
            words = slice_ptb(src, dst, sizes["ptb_lines"])
            info["slices"]["ptb"] = {"lines": sizes["ptb_lines"] or "all", "words": len(words)}
        elif name == "wordnet":  # built once per word list into the cache, then copied
            key = hashlib.sha256(json.dumps([words, sizes["wordnet_senses"]]).encode()).hexdigest()[:12]
            built = cache / f"wordnet-{key}"
            if not (built / "stats.json").is_file():
                stats = slice_wordnet(src, built, words, sizes["wordnet_senses"])
                (built / "stats.json").write_text(json.dumps(stats), encoding="utf-8")
            shutil.copytree(built, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("stats.json"))
            info["slices"]["wordnet"] = json.loads((built / "stats.json").read_text(encoding="utf-8"))
        elif name.startswith("corpora"):
            langs = name.partition(":")[2].split(",") if ":" in name else list(THESIS_LANGS)
            info["slices"]["corpora"] = slice_corpora(src, dst, sizes["train_tokens"], sizes["eval_tokens"], cache,
                                                      langs)
        elif name == "muse":
            slice_muse(src, dst)
            info["slices"]["muse"] = sorted(p.name for p in (dst / "eval" / "dictionaries").iterdir())
        elif name == "wordsim":
            slice_wordsim(src, dst)
            info["slices"]["wordsim"] = sorted(str(p.relative_to(dst)) for p in (dst / "eval" / "wordsim").rglob("*")
                                               if p.is_file())
    (dst / "slices.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    info["mib"] = round(tree_mib(dst), 2)
    return info


# -- wheels ------------------------------------------------------------------------------------------
def _canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def requirement_closure(names: Iterable[str]) -> dict[str, str]:
    """Canonical name -> installed version of ``names`` and everything they require on the GPU's
    Python (markers evaluated for CPython 3.12 on Linux x86_64), from this machine's metadata."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = [_canon(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError as exc:
            raise BadInput(f"{name} is not installed here, so its requirements are unknown; "
                           f"install the project's dependencies (pip install -e .) first") from exc
        seen[name] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(GPU_MARKERS):
                todo.append(_canon(req.name))
    return seen


def pinned_versions(constraints: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    if constraints.is_file():
        for line in constraints.read_text(encoding="utf-8").splitlines():
            name, sep, version = line.split("#", 1)[0].strip().partition("==")
            if sep:
                pins[_canon(name)] = version.strip()
    return pins


def wheel_plan(stage: Stage, constraints: Path = REPO / "constraints.txt") -> dict[str, str]:
    """Name -> version of every wheel ``stage`` must carry: its packages' closure minus what the
    GPU machine's packages bring; versions from constraints.txt where pinned."""
    if not stage.packages:
        return {}
    present = requirement_closure(GPU_HAS)
    needed = requirement_closure(stage.packages)
    pins = pinned_versions(constraints)
    return {name: pins.get(name, version) for name, version in sorted(needed.items()) if name not in present}


def pip_download_command(pins: dict[str, str], dest: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", *PIP_PLATFORM, "-d", str(dest),
            *(f"{n}=={v}" for n, v in sorted(pins.items()))]


def _wheel_project(path: Path) -> str:
    return _canon(path.name.split("-", 1)[0])


def prepare_wheels(args: argparse.Namespace, stage: Stage) -> dict[str, Any]:
    pins = wheel_plan(stage)
    dest = wheel_dir(args, stage)
    if dest.exists():
        shutil.rmtree(dest)
    if not pins:
        return {"wheels": {}}
    house = campaign_dir(args) / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    have = {(_wheel_project(p), p.name.split("-")[1]): p for p in house.glob("*.whl")}
    todo = {n: v for n, v in pins.items() if (n, v) not in have}
    if todo:
        cmd = pip_download_command(todo, house)
        print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
        proc = subprocess.run(cmd, stdout=sys.stderr, check=False)
        if proc.returncode != 0:
            raise BadInput(f"pip download failed (exit {proc.returncode}) for {', '.join(todo)}; "
                           "is PyPI reachable? (see the pip output above)")
        have = {(_wheel_project(p), p.name.split("-")[1]): p for p in house.glob("*.whl")}
    dest.mkdir(parents=True)
    got: dict[str, str] = {}
    for name, version in pins.items():
        path = have.get((name, version))
        if path is None:
            raise BadInput(f"no {name}=={version} wheel for cp312 manylinux x86_64 came back from pip")
        shutil.copyfile(path, dest / path.name)
        got[path.name] = f"{path.stat().st_size / 2**20:.2f} MiB"
    return {"wheels": got}


# -- running one stage -------------------------------------------------------------------------------
@dataclasses.dataclass
class Ctx:
    stage: Stage
    toy: bool
    device: str
    data: Path
    work: Path
    out: Path
    deadline: float
    steps: int | None
    threads: int
    notes: list[str] = dataclasses.field(default_factory=list)
    invocations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    files: list[str] = dataclasses.field(default_factory=list)

    def minutes_left(self, reserve: float = 0.0) -> float:
        return round(max((self.deadline - time.monotonic()) / 60 - reserve, 0.05), 2)


def call_benchmark(ctx: Ctx, script: str, argv: Sequence[Any]) -> tuple[dict[str, Any], str]:
    """Run ``benchmarks/<script>.py``'s ``main`` in this process with ``argv`` + ``--no-save``;
    returns the JSON object it prints and whatever it printed after it."""
    module = importlib.import_module(f"benchmarks.{script}")
    argv = [str(a) for a in argv] + ["--no-save"]
    buffer = io.StringIO()
    saved = sys.argv
    sys.argv = [f"benchmarks/{script}.py", *argv]
    started = time.monotonic()
    print(f"[gpu_campaign] {ctx.stage.name}: benchmarks/{script}.py {shlex.join(argv)}", file=sys.stderr)
    try:
        with contextlib.redirect_stdout(buffer):
            if inspect.signature(module.main).parameters:
                module.main(argv)
            else:
                module.main()
    finally:
        sys.argv = saved
    ctx.invocations.append({"script": f"benchmarks/{script}.py", "argv": argv,
                            "seconds": round(time.monotonic() - started, 1)})
    text = buffer.getvalue()
    obj, end = json.JSONDecoder().raw_decode(text, text.index("{"))
    return obj, text[end:].strip()


def _filters(filters: Iterable[Sequence[int]]) -> str:
    return ",".join(f"{w}:{n}" for w, n in filters)


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_sizes(toml: str, flags: dict[str, str], skip: Iterable[str] = ()) -> tuple[Any, list[str]]:
    """A config file's values as a script's flags: ``flags`` maps config keys to flag names; every
    other key that differs from the toolkit default (bar ``skip``) becomes ``--set key=value``."""
    from polyglot_groc.config import load_config

    cfg = load_config(CONFIGS / toml)
    values, defaults = _flat(dataclasses.asdict(cfg)), _flat(dataclasses.asdict(load_config(None)))
    argv: list[str] = []
    for key, flag in flags.items():
        value = values[key]
        if flag == "--filters":
            argv += [flag, _filters(value)]
        elif value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    skipped = set(flags) | set(skip)
    for key, value in values.items():
        if key not in skipped and value != defaults[key]:
            argv += ["--set", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    return cfg, argv


#: The toy sizes every training stage uses in the dry run (instead of the config's).
TOY: dict[str, Any] = {"d": 16, "hidden": 24, "filters": "1:8,2:8,3:16", "batch_size": 4, "bptt": 8}


def _override(argv: list[str], values: dict[str, Any]) -> list[str]:
    """``argv`` with the given flags' values replaced (or appended)."""
    out = list(argv)
    for flag, value in values.items():
        if flag in out:
            out[out.index(flag) + 1] = str(value)
        else:
            out += [flag, str(value)]
    return out


def _toy_flags(argv: list[str]) -> list[str]:
    return _override(argv, {"--d": TOY["d"], "--hidden": TOY["hidden"], "--filters": TOY["filters"],
                            "--batch-size": TOY["batch_size"], "--bptt": TOY["bptt"]})


def import_wordnet(ctx: Ctx) -> tuple[str, Path]:
    """Install the carried WordNet 3.0 into a wn folder under the work dir (no-op when current)."""
    from lexicons.omw_import import import_omw

    started = time.monotonic()
    wn_dir = ctx.work / "wn"
    spec = import_omw(ctx.data, ["en"], wn_dir)[0]
    ctx.notes.append(f"wordnet {spec} imported into {wn_dir} in {time.monotonic() - started:.1f} s")
    return spec, wn_dir


def run_cuda_tests(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    junit = ctx.work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/test_cuda.py", "-p", "no:cacheprovider",
           f"--junitxml={junit}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(REPO), os.environ.get("PYTHONPATH")) if x)}
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=max(ctx.deadline - time.monotonic(), 30), check=False)
    ctx.invocations.append({"script": "pytest", "argv": cmd[1:], "seconds": round(time.monotonic() - started, 1)})
    print(proc.stdout, file=sys.stderr)
    tests: dict[str, str] = {}
    if junit.is_file():
        for case in ET.parse(junit).getroot().iter("testcase"):
            outcome = "passed"
            for child, label in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                if case.find(child) is not None:
                    outcome = label
            tests[f"{case.get('classname')}::{case.get('name')}"] = outcome
    counts = {k: sum(v == k for v in tests.values()) for k in ("passed", "failed", "error", "skipped")}
    summary = {**counts, "exit_code": proc.returncode, "ok": proc.returncode == 0 and counts["passed"] > 0,
               "tests": tests}
    if ctx.toy:
        summary["ok"] = proc.returncode == 0  # on CPU every cuda case skips: that is the dry run's pass
    return summary, {"pytest_tail": proc.stdout[-4000:]}


THROUGHPUT_MODELS = ("lookup", "groc", "groc_sparse_p0.3", "groc-lex")
#: label -> (precision, compile, char-CNN impl, models); padded is CUDA's "auto".
THROUGHPUT_CONFIGS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    "fp32": ("fp32", False, "padded", THROUGHPUT_MODELS),
    "tf32": ("tf32", False, "padded", THROUGHPUT_MODELS),
    "bf16": ("bf16", False, "padded", THROUGHPUT_MODELS),
    "fp32+compile": ("fp32", True, "padded", ("lookup", "groc")),
    "bf16+compile": ("bf16", True, "padded", ("lookup", "groc")),
    "fp32 grouped": ("fp32", False, "grouped", ("lookup", "groc")),
}


@contextlib.contextmanager
def cheap_compile(on: bool) -> Any:
    """Dry run: ``torch.compile`` with the "eager" backend (dynamo's capture without inductor's
    code generation, which costs ~40 s per model on a CPU); a no-op for the real stage."""
    import torch

    if not on:
        yield
        return
    saved = torch.compile
    torch.compile = functools.partial(saved, backend="eager")  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.compile = saved


def run_throughput(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    spec, wn_dir = import_wordnet(ctx)
    steps = ctx.steps or (2 if ctx.toy else 40)
    base = ["--device", ctx.device, "--steps", steps, "--repeats", 1 if ctx.toy else 2, "--threads", ctx.threads,
            "--work", ctx.work / "throughput", "--lexicon", spec, "--wn-dir", wn_dir]
    base += ["--size", "paper"]
    if ctx.toy:  # --set comes after --size's overrides
        base += ["--eval-lines", 4, "--set", f"model.d={TOY['d']}", "--set", f"model.prefix.hidden={TOY['hidden']}",
                 "--set", f"train.batch_size={TOY['batch_size']}", "--set", f"train.bptt={TOY['bptt']}",
                 "--set", f"model.surface.filters={json.dumps(parse_filters(TOY['filters']))}"]
        ctx.notes.append("dry run: torch.compile runs with backend='eager' (inductor would cost ~40 s a model)")
    raw: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    longest = 0.0
    for label, (precision, compiled, impl, models) in THROUGHPUT_CONFIGS.items():
        if longest and ctx.deadline - time.monotonic() < 1.5 * longest:  # the call would be killed, nothing written
            configs[label] = {"precision": precision, "compile": compiled, "impl": impl,
                              "skipped": "out of time in this call; run the stage again with fewer --steps"}
            ctx.notes.append(f"throughput {label}: skipped, out of time")
            continue
        argv = [*base, "--precision", precision, "--impl", impl, "--models", ",".join(models)]
        started = time.monotonic()
        with cheap_compile(ctx.toy and compiled):
            res, _ = call_benchmark(ctx, "throughput", [*argv, "--compile"] if compiled else argv)
        longest = max(longest, time.monotonic() - started)
        raw[label] = res
        ratios = {m: r.get("train_ratio_to_lookup") for m, r in res["models"].items() if m != "lookup"}
        configs[label] = {
            "precision": precision, "compile": compiled, "impl": impl,
            "train_tokens_per_s": {m: r.get("train_tokens_per_s") for m, r in res["models"].items()},
            "train_ratio_to_lookup": ratios,
            "encoder_impl": {m: r.get("encoder_impl") for m, r in res["models"].items()},
            "peak_memory_mib": {m: r.get("peak_memory_mib") for m, r in res["models"].items()},
            "groc_over_lookup_train": res.get("groc_over_lookup_train"),
            "target_met": (res["groc_over_lookup_train"] >= THROUGHPUT_TARGET
                           if res.get("groc_over_lookup_train") is not None else None),
            "surface_fwd_bwd_seconds_over_vocab": res.get("surface_fwd_bwd_seconds_over_vocab"),
        }
    met = [c["target_met"] for c in configs.values() if c.get("target_met") is not None]
    best = max(configs, key=lambda k: configs[k].get("groc_over_lookup_train") or 0.0)
    summary = {"target": f"GroC/lookup train tokens/s >= {THROUGHPUT_TARGET}", "configs": configs,
               "target_met_in": [k for k, c in configs.items() if c.get("target_met")],
               "target_met_everywhere": bool(met) and len(met) == len(configs) and all(met), "best_config": best}
    plot_bars({label: c.get("train_ratio_to_lookup", {}) for label, c in configs.items()}, ctx.out / "throughput.png",
              "train tokens/s relative to lookup", THROUGHPUT_TARGET)
    ctx.files.append("throughput.png")
    return summary, raw


def run_thesis_align(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    corpora = ctx.data / "corpora"
    manifest = corpora / "prepare.json"
    if not manifest.is_file():
        raise BadInput(f"{manifest} is missing: run `gpu_campaign.py prepare thesis-align` and carry the folder")
    budget = json.loads((ctx.data / "slices.json").read_text(encoding="utf-8"))["sizes"]
    work = ctx.work / "table"
    shutil.copytree(corpora, work / "corpora", dirs_exist_ok=True)  # polyglot_table reuses fresh corpora
    _, sizes = config_sizes("paper.toml", {
        "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
        "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
        "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
        "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr",
        "train.eval_batch_size": "--eval-batch-size", "train.output_update_prob": "--output-update-prob",
    }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every"))
    steps = ctx.steps or (4 if ctx.toy else 3000)
    if ctx.toy:
        sizes = _toy_flags(sizes)
    reserve = 0.3 if ctx.toy else 2.5  # alignment (export, Procrustes, refinement, faiss k-NN) of both pairs
    cap = ctx.minutes_left(reserve) / (2 * len(ALIGN_TARGETS))
    table, _ = call_benchmark(ctx, "polyglot_table", [
        "--work", work, "--data-root", ctx.data, "--targets", ",".join(ALIGN_TARGETS), "--kinds", "groc,lookup",
        "--settings", "EN+tgt", "--baseline-polyglot", "--memory-steps", 0, "--memory-pair", "en,fr",
        "--train-tokens", budget["train_tokens"], "--eval-tokens", budget["eval_tokens"], "--steps", steps,
        "--eval-every", max(steps // 4, 1), "--max-minutes", cap, "--threads", ctx.threads, *sizes,
        "--set", f'train.device="{ctx.device}"'])
    aligned: dict[str, Any] = {}
    for tgt in ALIGN_TARGETS:
        aligned[tgt], _ = call_benchmark(ctx, "align_polyglot", [
            "--work", work, "--src", "en", "--tgt", tgt, "--data-root", ctx.data, "--refine", 1 if ctx.toy else 10,
            "--threads", ctx.threads])
    perplexity = {f"en+{tgt}": {r["kind"]: {"test_perplexity": r.get("test_perplexity"), "steps": r.get("steps"),
                                            "stop_reason": r.get("stop_reason"), "error": r.get("error")}
                                for r in table["runs"].values() if sorted(r["langs"]) == sorted(["en", tgt])}
                  for tgt in ALIGN_TARGETS}
    alignment = {f"en-{tgt}": {"rows": a["table"]["rows"], "same_evaluated_words": a["table"]["same_evaluated_words"],
                               "non_identical_model_vs_char_ngram": a["table"]["non_identical_model_vs_char_ngram"],
                               "groc_vs_lookup_p_at_5": {k: v for k, v in a["groc_vs_lookup"].items()
                                                         if k.startswith("p_at_5")},
                               "eval_dictionary": {m: (r.get("alignment") or {}).get("eval_dictionary")
                                                   for m, r in a["models"].items()}}
                 for tgt, a in aligned.items()}
    summary = {"table_5_2_test_perplexity": perplexity, "table_5_4_alignment": alignment,
               "corpora": table["corpora"], "steps": steps, "max_minutes_per_run": cap,
               "notes": table["notes"] + [n for a in aligned.values() for n in a["notes"]]}
    return summary, {"polyglot_table": table, "align_polyglot": aligned}


def run_ptb_paper(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    spec, wn_dir = import_wordnet(ctx)
    cfg, sizes = config_sizes("ptb_paper.toml", {
        "model.prefix.n_layers": "--layers", "model.prefix.hidden": "--hidden", "model.d": "--d",
        "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
        "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr", "train.clip": "--clip",
        "train.lr_patience": "--lr-patience", "train.stop_patience": "--stop-patience",
        "train.max_epochs": "--epochs", "train.output_update_prob": "--output-update-prob",
        "model.surface.filters": "--filters", "train.seed": "--seed",
    }, skip=("model.kind", "model.lexicon.specs", "model.lexicon.backend", "model.lexicon.wn_dir",
             "model.lexicon.extra_cap"))
    sizes += ["--jobs", "3"]  # the three models share the GPU (a batch-20 LSTM leaves most of it idle)
    work = ctx.work / "ptb"
    if ctx.toy:
        # One model at a time on CPU (the spawned --jobs path is tests/test_ptb_convergence.py's).
        sizes = _override(_toy_flags(sizes), {"--epochs": 2, "--train-lines": 60, "--eval-lines": 12, "--jobs": 1})
    cap = ctx.minutes_left(0.2 if ctx.toy else 1.5)  # final dev/test of the best checkpoints after the cap
    res, _ = call_benchmark(ctx, "ptb_convergence", [
        "--work", work, "--models", "tied,groc,groc-lex", "--lexicon", spec, "--wn-dir", wn_dir,
        "--device", ctx.device, "--threads", ctx.threads, "--early-stopping", "--resume",
        "--max-minutes", cap, *sizes])
    png = work / "ptb_convergence.png"
    if png.is_file():
        shutil.copyfile(png, ctx.out / "ptb-paper.png")
        ctx.files.append("ptb-paper.png")
    models = {m: {k: r.get(k) for k in ("epochs", "final_valid", "test", "stop_reason", "resumed", "steps",
                                         "train_seconds", "params")}
              for m, r in res["models"].items()}
    unfinished = [m for m, r in res["models"].items() if r.get("stop_reason") == "max_minutes"]
    summary = {"config": "polyglot_groc/configs/ptb_paper.toml", "kind_in_config": cfg.model.kind,
               "models": models, "orderings": res["orderings"], "max_minutes_per_model": cap,
               "unfinished": unfinished, "seed_000_targets_paper_config": res["seed_000_targets_paper_config"]}
    if unfinished:
        ctx.notes.append(f"stopped by the cap: {', '.join(unfinished)}; the same command again while the machine "
                         "is warm continues them (--resume)")
    return summary, {"ptb_convergence": res}


def run_elmo_init(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    _, sizes = config_sizes("paper.toml", {
        "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
        "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
        "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.eval_batch_size": "--eval-batch-size",
    }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every", "train.max_minutes"))
    if ctx.toy:
        sizes = _toy_flags(sizes)
    budget = ctx.steps or (4 if ctx.toy else 480)
    evals = 4 if ctx.toy else 8
    cap = ctx.minutes_left(0.3) / 3  # elmo (B), finetune (B), scratch (2B): each fit capped alike
    res, _ = call_benchmark(ctx, "elmo_init", [
        "--data", ctx.data / "corpora", "--langs", "en,es", "--budget", budget, "--evals", evals,
        "--out", ctx.work / "elmo", "--overwrite", "--threads", ctx.threads, *sizes,
        "--set", f'train.device="{ctx.device}"', "--set", f"train.max_minutes={cap}"])
    keys = ("starter_elmo", "random_groc_no_train", "elmo_to_groc_no_ft", "elmo_to_groc_ft", "groc_scratch",
            "finetune_steps_to_match_scratch_at_B", "ratio_finetune_to_scratch", "total_ratio_incl_elmo_pretraining",
            "stop_reasons", "seconds", "budget", "n_params")
    summary = {k: res.get(k) for k in keys}
    summary["max_minutes_per_run"] = cap
    curves = {name: [(p["step"], p["pooled_perplexity"]) for p in curve if isinstance(p["pooled_perplexity"], float)]
              for name, curve in res["curves"].items()}
    plot_curves(curves, ctx.out / "elmo-init.png", "pooled valid perplexity")
    ctx.files.append("elmo-init.png")
    return summary, {"elmo_init": res}


def run_family(ctx: Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
    from benchmarks.output_family import PAPER, ROWS

    steps = ctx.steps or (3 if ctx.toy else 1500)
    if ctx.toy:
        sizes: list[Any] = ["--d", TOY["d"], "--hidden", TOY["hidden"], "--batch-size", TOY["batch_size"],
                            "--bptt", TOY["bptt"], "--filters", TOY["filters"], "--w2v-epochs", 1,
                            "--eval-batch-size", 4, "--set", "model.output.cutoffs=[0.2, 0.7]"]
    else:
        sizes = ["--d", PAPER["d"], "--hidden", PAPER["hidden"], "--batch-size", PAPER["batch_size"],
                 "--bptt", PAPER["bptt"], "--dropout", PAPER["dropout"]]
        ctx.notes.append("output_family.PAPER's sizes passed as flags so --steps applies (its --size paper fixes "
                         f"{PAPER['steps']} steps); the JSON's config.size says 'cpu' for that reason")
    cap = ctx.minutes_left(1.0 if not ctx.toy else 0.1) / len(ROWS)
    res, markdown = call_benchmark(ctx, "output_family", [
        "--work", ctx.work / "output_family", "--device", ctx.device, "--steps", steps,
        "--eval-every", max(steps // 3, 1), "--threads", ctx.threads, *sizes, "--set", f"train.max_minutes={cap}"])
    (ctx.out / "family.md").write_text(markdown + "\n", encoding="utf-8")
    ctx.files.append("family.md")
    models = {row: {"valid_perplexity": r["valid_perplexity"], "test_perplexity": r["test_perplexity"],
                    "steps": r["steps"], "n_params": r["n_params"], "tokens_per_s": r["tokens_per_s"]}
              for row, r in res["models"].items()}
    summary = {"models": models, "steps_asked": steps, "max_minutes_per_row": cap,
               "rows_stopped_by_cap": [row for row, r in res["models"].items() if r["steps"] < steps],
               "seed_expected_order": res["seed_expected_order"]}
    return summary, {"output_family": res}


#: The summary keys of each stage: the real run and the dry run write exactly these (checked by ``run``).
SUMMARY_KEYS: dict[str, tuple[str, ...]] = {
    "cuda-tests": ("passed", "failed", "error", "skipped", "exit_code", "ok", "tests"),
    "throughput": ("target", "configs", "target_met_in", "target_met_everywhere", "best_config", "ok"),
    "thesis-align": ("table_5_2_test_perplexity", "table_5_4_alignment", "corpora", "steps", "max_minutes_per_run",
                     "notes", "ok"),
    "ptb-paper": ("config", "kind_in_config", "models", "orderings", "max_minutes_per_model", "unfinished",
                  "seed_000_targets_paper_config", "ok"),
    "elmo-init": ("starter_elmo", "random_groc_no_train", "elmo_to_groc_no_ft", "elmo_to_groc_ft", "groc_scratch",
                  "finetune_steps_to_match_scratch_at_B", "ratio_finetune_to_scratch",
                  "total_ratio_incl_elmo_pretraining", "stop_reasons", "seconds", "budget", "n_params",
                  "max_minutes_per_run", "ok"),
    "family": ("models", "steps_asked", "max_minutes_per_row", "rows_stopped_by_cap", "seed_expected_order", "ok"),
}
#: Top-level keys of every stage's JSON.
RESULT_KEYS = ("stage", "title", "campaign", "summary", "invocations", "results")

RUNNERS: dict[str, Callable[[Ctx], tuple[dict[str, Any], dict[str, Any]]]] = {
    "cuda-tests": run_cuda_tests, "throughput": run_throughput, "thesis-align": run_thesis_align,
    "ptb-paper": run_ptb_paper, "elmo-init": run_elmo_init, "family": run_family,
}


# -- plots -------------------------------------------------------------------------------------------
def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.tight_layout()
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)


def plot_bars(groups: dict[str, dict[str, float | None]], path: Path, ylabel: str, line: float | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    models = list(dict.fromkeys(m for g in groups.values() for m in g))
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        xs = [j + i * width for j in range(len(groups))]
        ax.bar(xs, [g.get(model) or 0.0 for g in groups.values()], width, label=model)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], list(groups), fontsize=7)
    if line is not None:
        ax.axhline(line, color="k", lw=0.8, ls="--")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    _save(fig, path)


def plot_curves(curves: dict[str, list[tuple[int, float]]], path: Path, ylabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=80)
    for name, points in curves.items():
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    _save(fig, path)


# -- the ledger --------------------------------------------------------------------------------------
def ledger_path(args: argparse.Namespace) -> Path:
    return Path(args.ledger) if args.ledger else RESULTS / "gpu_campaign_ledger.json"


def results_dir(args: argparse.Namespace) -> Path:
    return Path(args.results) if args.results else RESULTS


def load_ledger(path: Path) -> dict[str, Any]:
    ledger: dict[str, Any] = {}
    if path.is_file():
        try:
            ledger = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BadInput(f"{path} is not valid JSON ({exc}); restore it from git") from exc
    stages = ledger.get("stages", {})
    ledger = {"campaign": "benchmarks/gpu_campaign.py",
              "rule": "a stage is done only when a run on CUDA (never a CPU dry run) finished it",
              "stages": {name: stages.get(name, {"status": "pending", "runs": []}) for name in STAGES}}
    return ledger


def save_ledger(path: Path, ledger: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(ledger, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def next_pending(ledger: dict[str, Any]) -> str | None:
    return next((name for name, entry in ledger["stages"].items() if entry.get("status") == "pending"), None)


def ledger_entry(result: dict[str, Any], files: list[str]) -> dict[str, Any]:
    """What the ledger keeps of a finished GPU run; refuses a dry run or a run without CUDA."""
    c = result["campaign"]
    if c["dry_run"] or not str(c["device"]).startswith("cuda") or not c.get("cuda_device_name"):
        raise BadInput(f"{result['stage']}: a run on {c['device']} (dry run: {c['dry_run']}) cannot mark a GPU stage "
                       "done; only a run on CUDA can")
    return {"status": "done" if result["summary"].get("ok", True) else "failed", "finished": c["finished"],
            "device": c["cuda_device_name"], "torch": c["torch"], "command": c["device_command"],
            "inner_command": c["command"], "wall_seconds": c["wall_seconds"], "files": files}


def mark(ledger: dict[str, Any], stage: str, entry: dict[str, Any]) -> None:
    current = ledger["stages"][stage]
    runs = [r for r in current.get("runs", []) if r.get("finished") != entry["finished"]]
    ledger["stages"][stage] = {**entry, "runs": [*runs, {k: v for k, v in entry.items() if k != "runs"}]}


# -- commands ----------------------------------------------------------------------------------------
def finite(obj: Any) -> Any:
    """``obj`` with non-finite floats as the strings "inf", "-inf", "nan" (strict JSON, nothing dropped)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class _Blocker(importlib.abc.MetaPathFinder):
    """Makes ``import NAME`` fail as on the GPU machine for packages a stage does not carry."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked: the GPU machine lacks it)")
        return None


def cmd_run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from polyglot_groc.model.device import device_name

    stage = stage_of(args.stage)
    toy = bool(args.dry_run)
    if args.background:
        return start_background(args, stage)
    cuda = torch.cuda.is_available()
    if not toy and not cuda:
        raise BadInput(f"stage {stage.name} needs CUDA and torch.cuda.is_available() is False here; "
                       f"use `run {stage.name} --dry-run` for the CPU toy run")
    if args.block_missing:
        blocked = {mod for pkg, mod in GPU_LACKS.items() if pkg not in stage.packages}
        sys.meta_path.insert(0, _Blocker(blocked))
    missing = [pkg for pkg in stage.packages if importlib.util.find_spec(GPU_LACKS[pkg]) is None]
    if missing:
        raise BadInput(f"{', '.join(missing)} not importable: carry .campaign/whl/{stage.name} and install it "
                       "(the command `gpu_campaign.py commands` prints does)")
    data = data_dir(args, stage, toy)
    if stage.slices:
        info = data / "slices.json"
        if not info.is_file():
            flag = " --toy" if toy else ""
            raise BadInput(f"missing prepared data {data}: run `python benchmarks/gpu_campaign.py prepare "
                           f"{stage.name}{flag}` (on the CPU machine) and carry it")
        if json.loads(info.read_text(encoding="utf-8")).get("toy") != toy:
            raise BadInput(f"{data} holds {'real' if toy else 'toy'} data; prepare it again")
    out = Path(args.out) if args.out else REPO / "bench_out" / "gpu_campaign" / stage.name
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) if args.work else campaign_dir(args) / ("toy/work" if toy else "work") / stage.name
    work.mkdir(parents=True, exist_ok=True)
    os.environ["POLYGLOT_GROC_DATA"] = str(data)
    os.environ["POLYGLOT_GROC_CACHE"] = str(work / "cache")
    os.environ["POLYGLOT_GROC_WN_DIR"] = str(work / "wn")
    minutes = args.minutes if args.minutes is not None else (2.0 if toy else STAGE_MINUTES)
    started, started_at = time.monotonic(), _now()
    ctx = Ctx(stage=stage, toy=toy, device="cpu" if toy else "cuda", data=data, work=work, out=out,
              deadline=started + 60 * minutes, steps=args.steps, threads=args.threads or (1 if toy else 4))
    failure: BaseException | None = None
    try:
        summary, raw = RUNNERS[stage.name](ctx)
        summary.setdefault("ok", True)
        if set(summary) != set(SUMMARY_KEYS[stage.name]):  # a programming error: dry and real runs must agree
            raise RuntimeError(f"{stage.name} summary keys {list(summary)} != {list(SUMMARY_KEYS[stage.name])}")
    except Exception as exc:  # keep what a 9-minute GPU call learnt: the ledger records the failure
        failure = exc
        summary, raw = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, {"traceback": traceback.format_exc()}
    device = device_name(torch.device(ctx.device))
    result: dict[str, Any] = {
        "stage": stage.name, "title": stage.title,
        "campaign": {
            "dry_run": toy, "device": device,
            "cuda_device_name": torch.cuda.get_device_name(0) if cuda and not toy else None,
            "torch": torch.__version__, "started": started_at, "finished": _now(),
            "wall_seconds": round(time.monotonic() - started, 1), "minutes_budget": minutes,
            "command": shlex.join(["python3", "benchmarks/gpu_campaign.py", *args.argv]),
            "device_command": device_command(stage), "carry": stage.carry, "data": str(data),
            "files": [f"{stage.name}.json", *ctx.files], "notes": ctx.notes,
        },
        "summary": summary,
        "invocations": ctx.invocations,
        "results": raw,
    }
    text = json.dumps(finite(result), indent=2, ensure_ascii=False, allow_nan=False)
    (out / f"{stage.name}.json").write_text(text + "\n", encoding="utf-8")
    if not toy:  # the GPU machine's copy of the ledger moves on too (`next` in the same session)
        path = ledger_path(args)
        ledger = load_ledger(path)
        mark(ledger, stage.name, ledger_entry(result, result["campaign"]["files"]))
        save_ledger(path, ledger)
    if failure is not None:
        raise failure
    return {"stage": stage.name, "out": str(out), "files": result["campaign"]["files"], "summary": summary,
            "campaign": result["campaign"]}


def start_background(args: argparse.Namespace, stage: Stage) -> dict[str, Any]:
    """Detach ``run STAGE`` (setsid) with its log and result under the work folder; ``poll`` collects."""
    base = campaign_dir(args) / ("toy/work" if args.dry_run else "work") / stage.name
    bg = base / "background"
    if bg.exists():
        shutil.rmtree(bg)
    bg.mkdir(parents=True)
    argv = [a for a in args.argv if a != "--background"]
    if "--out" in argv:
        i = argv.index("--out")
        del argv[i: i + 2]
    cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--out", str(bg / "out")]
    with open(bg / "log.txt", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
    (bg / "pid.json").write_text(json.dumps({"pid": proc.pid, "started": _now(), "command": cmd}), encoding="utf-8")
    return {"stage": stage.name, "background_pid": proc.pid, "log": str(bg / "log.txt"),
            "poll": f"python3 benchmarks/gpu_campaign.py poll {stage.name} --out $OUT --wait 480"}


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has finished: a container's init may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def cmd_poll(args: argparse.Namespace) -> dict[str, Any]:
    stage = stage_of(args.stage)
    bg = campaign_dir(args) / ("toy/work" if args.dry_run else "work") / stage.name / "background"
    if not (bg / "pid.json").is_file():
        raise BadInput(f"no background run of {stage.name} here ({bg}); start one with `run {stage.name} "
                       "--background` (a machine that went cold has lost it)")
    pid = json.loads((bg / "pid.json").read_text(encoding="utf-8"))["pid"]
    deadline = time.monotonic() + args.wait
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(2)
    log = (bg / "log.txt").read_text(encoding="utf-8", errors="replace") if (bg / "log.txt").is_file() else ""
    out = Path(args.out) if args.out else REPO / "bench_out" / "gpu_campaign" / stage.name
    result = bg / "out" / f"{stage.name}.json"
    if _alive(pid):
        return {"stage": stage.name, "running": True, "pid": pid, "log_tail": log[-2000:]}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stage.name}.log").write_text(log, encoding="utf-8")
    if not result.is_file():
        return {"stage": stage.name, "running": False, "finished": False, "log_tail": log[-2000:]}
    for path in (bg / "out").iterdir():
        shutil.copyfile(path, out / path.name)
    return {"stage": stage.name, "running": False, "finished": True, "out": str(out),
            "files": sorted(p.name for p in (bg / "out").iterdir())}


def cmd_prepare(args: argparse.Namespace) -> dict[str, Any]:
    stages = [stage_of(s) for s in (args.stages or list(STAGES))]
    src = Path(args.data_root or os.environ.get("POLYGLOT_GROC_DATA", ""))
    if not str(src) or not src.is_dir():
        raise BadInput("set POLYGLOT_GROC_DATA (or --data-root) to the shared data folder (../shared/data)")
    report: dict[str, Any] = {"toy": args.toy, "limit_mib": args.carry_limit_mib, "stages": {}}
    for stage in stages:
        entry: dict[str, Any] = {}
        if stage.slices:
            entry["data"] = prepare_data(src, data_dir(args, stage, args.toy), stage, args.toy,
                                         campaign_dir(args) / "cache")
        if args.wheels and not args.toy:
            entry.update(prepare_wheels(args, stage))
        elif stage.packages:
            entry["wheel_plan"] = wheel_plan(stage)
        if not args.toy:
            entry["carry"] = stage.carry
            entry["carry_mib"] = carry_sizes(args, stage)
            if args.wheels is False and stage.packages:
                entry["note"] = "wheels not downloaded (pass --wheels on a machine that reaches PyPI)"
        else:
            entry["mib"] = round(tree_mib(data_dir(args, stage, True)), 2)
        report["stages"][stage.name] = entry
    over = {name: e.get("carry_mib", {}).get("total", e.get("mib", 0.0)) for name, e in report["stages"].items()}
    over = {name: mib for name, mib in over.items() if mib > args.carry_limit_mib}
    if over:
        raise BadInput("carry over the device tool's limit: " + ", ".join(
            f"{n} {mib:.3g} MiB > {args.carry_limit_mib:g} MiB" for n, mib in over.items()))
    return report


def cmd_status(args: argparse.Namespace) -> dict[str, Any]:
    ledger = load_ledger(ledger_path(args))
    nxt = next_pending(ledger)
    return {"ledger": str(ledger_path(args)), "next": nxt,
            "stages": {name: {k: e.get(k) for k in ("status", "finished", "device", "files") if k in e}
                       for name, e in ledger["stages"].items()}}


def cmd_next(args: argparse.Namespace) -> dict[str, Any]:
    ledger = load_ledger(ledger_path(args))
    nxt = next_pending(ledger)
    if nxt is None:
        return {"next": None, "message": "every stage is done or failed; `reset STAGE` to run one again"}
    if args.run:
        args.stage = nxt
        return cmd_run(args)
    return {"next": nxt, **stage_commands(args, STAGES[nxt])}


def cmd_commands(args: argparse.Namespace) -> dict[str, Any]:
    return {"stages": [stage_commands(args, stage_of(s)) for s in (args.stages or list(STAGES))]}


def cmd_record(args: argparse.Namespace) -> dict[str, Any]:
    """File a GPU result (the run's output folder) under benchmarks/results/<day>/ and mark the ledger."""
    folder = Path(args.folder)
    found = sorted(folder.glob("*.json")) if folder.is_dir() else []
    results = []
    for path in found:
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(obj, dict) and "campaign" in obj and obj.get("stage") in STAGES:
            results.append(obj)
    if not results:
        raise BadInput(f"{folder} holds no gpu_campaign stage result (<stage>.json)")
    path = ledger_path(args)
    ledger = load_ledger(path)
    recorded = []
    for result in results:
        stage = result["stage"]
        day = result["campaign"]["finished"][:10]
        files = []
        entry = ledger_entry(result, [])  # refuses dry runs before anything is copied
        for name in result["campaign"]["files"]:
            src = folder / name
            if src.is_file():
                dst = results_dir(args) / day / f"gpu_campaign_{name}"
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                files.append(str(dst.relative_to(REPO)) if dst.is_relative_to(REPO) else str(dst))
        entry["files"] = files
        mark(ledger, stage, entry)
        recorded.append({"stage": stage, "status": entry["status"], "files": files})
    save_ledger(path, ledger)
    return {"recorded": recorded, "next": next_pending(ledger)}


def cmd_reset(args: argparse.Namespace) -> dict[str, Any]:
    stage = stage_of(args.stage)
    path = ledger_path(args)
    ledger = load_ledger(path)
    ledger["stages"][stage.name] = {"status": "pending", "runs": ledger["stages"][stage.name].get("runs", [])}
    save_ledger(path, ledger)
    return {"stage": stage.name, "status": "pending"}


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign-dir", default=os.environ.get("GPU_CAMPAIGN_DIR"),
                    help="where prepared data, wheels and work go (default .campaign/ in the repository)")
    ap.add_argument("--ledger", default=os.environ.get("GPU_CAMPAIGN_LEDGER"),
                    help="ledger file (default benchmarks/results/gpu_campaign_ledger.json)")
    ap.add_argument("--results", default=os.environ.get("GPU_CAMPAIGN_RESULTS"),
                    help="where record files results (default benchmarks/results/, as <day>/gpu_campaign_<file>)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="the ledger and the next pending stage")
    p = sub.add_parser("next", help="the next pending stage's command (--run: run it here)")
    p.add_argument("--run", action="store_true")
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.set_defaults(dry_run=False, work=None, minutes=None, steps=None, threads=0, background=False,
                   block_missing=False)
    p = sub.add_parser("commands", help="the device tool's command line and carry of each stage")
    p.add_argument("stages", nargs="*")
    p = sub.add_parser("prepare", help="fill .campaign/ with each stage's data (and --wheels)")
    p.add_argument("stages", nargs="*")
    p.add_argument("--toy", action="store_true", help="the dry run's tiny slices (under .campaign/toy/)")
    p.add_argument("--wheels", action="store_true", help="download the missing packages' wheels (needs PyPI)")
    p.add_argument("--data-root", default=None, help="shared data folder (default $POLYGLOT_GROC_DATA)")
    p.add_argument("--carry-limit-mib", type=float, default=CARRY_LIMIT_MIB)
    for name in ("run", "poll"):
        p = sub.add_parser(name, help="run one stage" if name == "run" else "wait for a background run")
        p.add_argument("stage")
        p.add_argument("--out", default=os.environ.get("OUT"), help="output folder (default $OUT)")
        p.add_argument("--dry-run", "--toy", dest="dry_run", action="store_true",
                       help="CPU, toy sizes, toy data; never marks the ledger")
        if name == "poll":
            p.add_argument("--wait", type=float, default=480.0, help="seconds to wait for the run to end")
    run = sub.choices["run"]
    run.add_argument("--work", default=None)
    run.add_argument("--minutes", type=float, default=None, help=f"the stage's time budget (default {STAGE_MINUTES})")
    run.add_argument("--steps", type=int, default=None, help="the stage's step budget (default: its own)")
    run.add_argument("--threads", type=int, default=0)
    run.add_argument("--background", action="store_true", help="detach (setsid); collect with poll")
    run.add_argument("--block-missing", action="store_true",
                     help="refuse imports of the packages the GPU machine lacks and the stage does not carry")
    p = sub.add_parser("record", help="file a GPU run's output folder and mark its stage done")
    p.add_argument("folder")
    p = sub.add_parser("reset", help="mark a stage pending again")
    p.add_argument("stage")
    argv = list(argv)
    if argv[:1] == ["--prepare"]:  # the spelling
        argv[0] = "prepare"
    args = ap.parse_args(argv)
    args.argv = argv
    return args


COMMANDS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "status": cmd_status, "next": cmd_next, "commands": cmd_commands, "prepare": cmd_prepare, "run": cmd_run,
    "poll": cmd_poll, "record": cmd_record, "reset": cmd_reset,
}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = COMMANDS[args.command](args)
    emit(out, "gpu_campaign", save=False)
    return out


if __name__ == "__main__":
    script_main(main)
