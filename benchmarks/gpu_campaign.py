"""The GPU campaign: every figure that needs an accelerator, one device window at a time.

The unit is ONE call of the device tool. A GPU is lent to some tasks only, as at most 15 minutes
of machine time per session, every call together: a fresh machine costs 1-2 minutes to start, one
command runs at most 10 minutes, and the machine is given back 30 s after a command ends, with
everything on it; the next call starts a bare one. A call receives the working tree plus the
git-ignored ``carry`` paths (64 MiB together), has no network, lacks gensim, wn, faiss-cpu, nltk
and stanza, and returns at most 8 files of 16 MiB from ``$OUT``. So:

* ``plan --minutes 12`` prints the single device command (at most 2,000 characters) that runs the
  owed work in priority order inside one call of ``12 - 2 (start) - 0.5 (warm after it)`` = 9.5
  minutes, and its carry (``.campaign/carry``, assembled by ``plan`` and measured with the working
  tree). The command sets one absolute deadline ``D`` (seconds since the epoch) when it starts,
  and gives each stage ``--deadline`` (D less the budgets of the stages after it) and its
  ``--minutes`` budget. No outer ``timeout`` kills a stage: each stage checks the deadline before
  each sub-run, passes what is left down (``train.max_minutes``, a child's deadline), and stops
  itself (SIGALRM) if a sub-run overruns it by ``DEADLINE_GRACE_S``.
* Nothing learnt is lost: a stage writes ``$OUT/<stage>.json`` atomically (temporary name, then
  rename) when it starts and after every sub-run ("part": a throughput configuration, a trained
  model, an alignment, a vocabulary-scaling child), so a stage killed at any point (SIGTERM,
  SIGKILL, the call's limit) leaves a valid JSON saying which parts are done. ``record`` files it
  (``partial``) and the ledger keeps each part's status and measured seconds; the next ``plan``
  runs only what is still owed.
* Stages are sized from measured times: each part's seconds (and a stage's setup and overhead)
  are in its JSON and the ledger, and ``plan`` (and the stage itself, from the ledger that travels
  with the tree) decides what fits from the last measured figures, or from the stated conservative
  defaults (``Runner.default_s``) where nothing was measured yet.
* Everything that can be done on the CPU beforehand is: ``prepare`` builds the wordnet database
  (imported here and carried as ``wn/wn.db.xz``; importing it on the GPU machine took 28.5 s),
  tokenises the corpora and counts their vocabularies, and downloads the wheels.
* Checkpoints cannot come back through ``$OUT``, so no stage relies on a later call: a training
  stage trains what fits in its call (``ptb-paper``: as many epochs as fit, with the paper's
  configuration) and its JSON says so.

Stages, in priority order (each reuses the benchmark scripts' own code; the parts in brackets)::

  cuda-tests     pytest -m cuda tests/test_cuda.py                                   [pytest]
  vocab-scaling  vocab_scaling.py at paper size: tied and GroC, full and sampled softmax, at ~140k,
                 ~40k and ~10k words, one child process per part            [140k.tied_full, ...]
  throughput     throughput.py at paper size on PTB: fp32, tf32 and bf16 named explicitly
                 (train.precision defaults to bf16 on CUDA), compile, the grouped char-CNN
                                                 [fp32, tf32, bf16, fp32+compile, bf16+compile, fp32-grouped]
  thesis-align   polyglot_table.py + align_polyglot.py (Tables 5.2 and 5.4): GroC and tied on en+fr
                 and en+es at thesis sizes, sampled training softmax; an alignment needs both
                 models trained in the same call        [en-fr.groc, en-fr.lookup, en-fr.align, en-es...]
  ptb-paper      ptb_convergence.py with seed 000's PTB configuration (ptb_paper.toml), full softmax:
                 tied, GroC, GroC+lex (full updates: the headline rows) and GroC p = 0.3 (B.4's
                 sparse updates), trained together for as many epochs as fit   [tied, groc, groc-lex, groc-p0.3]
  elmo-init      elmo_init.py (Table 5.6) on en+es, sampled softmax; B sized from measured speed
                                                                  [elmo, finetune, groc_scratch]
  family         output_family.py (Table 2) at its PAPER sizes, each row capped      [untied, conv, ...]

Workflow (``python benchmarks/gpu_campaign.py ...``; every command prints one JSON object)::

    prepare [STAGE...] [--wheels] [--toy]  # CPU machine (PyPI reachable), once: .campaign/data, .campaign/whl
    status                                  # the ledger: per stage, the parts done, owed, failed
    plan --minutes 12                       # the next window: device command, carry, timeout_s, budgets
    run STAGE --deadline T --parts P,...    # what the command runs on the GPU, per stage
    record FILES_AT [--reason TEXT]         # CPU machine: file what came back; the ledger moves on
    reset STAGE [--part P]                  # a failed part is retried only after this
    run STAGE --full                        # your own CUDA machine: the whole stage at full length

``--dry-run`` (``prepare --toy`` first) does the same on CPU at toy sizes: ``plan --dry-run`` prints
a command that runs the toy stages locally, ``record --dry-run`` files toy results into a toy
ledger (``.campaign/toy/ledger.json``); neither a CPU run nor a dry run can mark a GPU part done.
On your own CUDA machine none of the tool's limits apply: ``prepare``, then ``run STAGE --full``
(no deadline, the stage's full length; docs/gpu.md).

Bad input (unknown stage or part, missing prepared data, a carry over 64 MiB, a GPU stage
without CUDA) is one ``error:`` line and exit status 2 (``benchmarks.common.script_main``).
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
import lzma
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from benchmarks.common import RESULTS, BadInput, emit, parse_filters, script_main  # noqa: E402

CONFIGS = REPO / "polyglot_groc" / "configs"

# -- the device tool (/work/.library/device/README.md) -----------------------------------------------
CARRY_LIMIT_MIB = 64.0  # the working tree and every carried path together
CALL_MAX_S = 600  # one command
COMMAND_MAX_CHARS = 2000
OUT_MAX_FILES = 8  # files back from $OUT (16 MiB each, at most 2 folders down)
MACHINE_START_S = 120.0  # a fresh machine: "1-2 minutes"; the worse is planned for
IDLE_AFTER_S = 30.0  # warm after the call, counted unless given back
CALL_MARGIN_S = 30.0  # between the last stage's deadline and the call's limit: last writes, $OUT back
DEADLINE_GRACE_S = 20.0  # a stage still busy this long past its deadline stops itself (SIGALRM)
INSTALL_S = 20.0  # the carried wheels' install at the call's start (stated; not measured yet)
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
THROUGHPUT_TARGET = 0.5  # issue target: GroC train tokens/s at least half of lookup's
ALIGN_TARGETS = ("fr", "es")
#: The sampled training softmax of the thesis-scale stages (polyglot_groc/training/softmax.py), set
#: explicitly (``auto`` would sample above 50,000 words too, but a changed default must not change them).
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


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="seconds")


def finite(obj: Any) -> Any:
    """``obj`` with non-finite floats as the strings "inf", "-inf", "nan" (strict JSON, nothing dropped)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    return obj


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as strict JSON at ``path``, atomically: a reader (or a kill) sees the old file or the new."""
    text = json.dumps(finite(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for secrets; these are results to share
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- stages ------------------------------------------------------------------------------------------
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


# -- data slices (prepared on the CPU machine) ------------------------------------------------------
def _copy(src: Path, dst: Path) -> None:
    if not src.is_file():
        raise BadInput(f"{src} is missing from the shared data; check POLYGLOT_GROC_DATA / --data-root")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _gzip(src: Path, dst: Path) -> None:
    """``src`` gzipped to ``dst`` (no name or time in the header: the same text gives the same bytes)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(dst, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                                       mtime=0) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)


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
            with open(dst / name, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
                fh.write(text.encode("utf-8"))
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


def build_wordnet(src: Path, dst: Path, words: Sequence[str], senses: int, cache: Path) -> dict[str, Any]:
    """The ``wn`` database of WordNet 3.0 (English), imported HERE and stored as ``dst/wn/wn.db.xz``
    with its lexicon spec: the GPU machine only decompresses it (importing took 28.5 s there).

    ``senses`` > 0: a toy WordNet of ``words``' first ``senses`` synsets (the dry run's). Built once
    per source and word list into ``cache``.
    """
    from lexicons.omw_import import import_omw

    tar, ili = src / "wordnet/pwn-3.0-wndb-lf.tar.xz", src / "omw/ili-map-pwn30.tab"
    for path in (tar, ili):
        if not path.is_file():
            raise BadInput(f"{path} is missing from the shared data; check POLYGLOT_GROC_DATA / --data-root")
    ident = [str(p.resolve()) + f":{p.stat().st_size}" for p in (tar, ili)]
    key = hashlib.sha256(json.dumps([ident, senses, list(words) if senses else []]).encode()).hexdigest()[:12]
    built = cache / f"wordnet-{key}"
    if not (built / "spec.json").is_file():
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            root = Path(tmp) / "src"
            if senses:  # a toy source in the shared data's layout
                stats = slice_wordnet(src, root, words, senses)
            else:
                root, stats = src, {}
            started = time.monotonic()
            spec = import_omw(root, ["en"], Path(tmp) / "wn")[0]
            import_s = time.monotonic() - started
            built.mkdir(parents=True, exist_ok=True)
            with open(Path(tmp) / "wn" / "wn.db", "rb") as fin, lzma.open(built / ".wn.db.xz.tmp", "wb",
                                                                          preset=6) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            db_mib = (Path(tmp) / "wn" / "wn.db").stat().st_size / 2**20
        (built / ".wn.db.xz.tmp").replace(built / "wn.db.xz")
        write_json(built / "spec.json", {"spec": spec, "db_mib": round(db_mib, 2), "import_s": round(import_s, 1),
                                         **stats})
    info = json.loads((built / "spec.json").read_text(encoding="utf-8"))
    (dst / "wn").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built / "wn.db.xz", dst / "wn" / "wn.db.xz")
    return {**info, "file": "wn/wn.db.xz", "xz_mib": round((dst / "wn" / "wn.db.xz").stat().st_size / 2**20, 2)}


def build_corpora(src: Path, dst: Path, budget: str, langs: Sequence[str], sizes: tuple[int, int],
                  cache: Path) -> dict[str, Any]:
    """``dst/corpora/<budget>/<lang>/{train,valid,test}.txt.gz`` and ``prepare.json``, tokenised HERE by
    benchmarks/polyglot_table.py's ``prepare`` (the GPU machine's copy only decompresses them, and
    the manifest's digests tell polyglot_table they are fresh), with each language's vocabulary
    counted (closed: train+valid+test) and the union with English for each pair."""
    from benchmarks.polyglot_table import prepare

    train_tokens, eval_tokens = sizes
    prepared = cache / f"corpora-{train_tokens}-{eval_tokens}"
    entries = prepare(src, prepared, list(langs), train_tokens, eval_tokens, "auto")
    out = dst / "corpora" / budget
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((prepared / "prepare.json").read_text(encoding="utf-8"))
    manifest["languages"] = {k: v for k, v in manifest["languages"].items() if k in langs}
    write_json(out / "prepare.json", manifest)
    vocab: dict[str, set[str]] = {}
    for lang in langs:
        words: set[str] = set()
        for split in ("train", "valid", "test"):
            path = prepared / lang / f"{split}.txt"
            _gzip(path, out / lang / f"{split}.txt.gz")
            words.update(path.read_text(encoding="utf-8").split())
        vocab[lang] = words
    return {"train_tokens": train_tokens, "eval_tokens": eval_tokens,
            "langs": {lang: {"tokenizer": e["tokenizer"], "short": e["short"], "vocab": len(vocab[lang]),
                             **{s: v["tokens"] for s, v in e["splits"].items()}} for lang, e in entries.items()},
            "pair_vocab": {f"en+{lang}": len(vocab["en"] | vocab[lang]) for lang in langs
                           if lang != "en" and "en" in vocab}}


def slice_muse(src: Path, dst: Path) -> list[str]:
    names = []
    for tgt in ALIGN_TARGETS:
        for part in ("0-5000", "5000-6500"):
            name = f"eval/dictionaries/en-{tgt}.{part}.txt"
            _copy(src / name, dst / name)
            names.append(name)
    return names


def slice_wordsim(src: Path, dst: Path) -> list[str]:
    names = []
    for lang in ("en", *ALIGN_TARGETS):
        folder = src / "eval" / "wordsim" / lang
        for path in sorted(folder.glob("*")) if folder.is_dir() else []:
            _copy(path, dst / "eval" / "wordsim" / lang / path.name)
            names.append(str(path.relative_to(src)))
    return names


def slice_files(data: Path, key: str, info: dict[str, Any], langs: Sequence[str] = ()) -> list[Path]:
    """The files (relative to ``data``) of slice ``key`` (only ``langs``' for a corpora slice)."""
    kind, _, budget = key.partition(":")
    if kind == "ptb":
        return [Path(f"text/ptb/ptb.{s}.txt.gz") for s in ("train", "valid", "test")]
    if kind == "wordnet":
        return [Path(info["file"])]
    if kind == "corpora":
        base = Path("corpora") / budget
        return [base / "prepare.json", *(base / lang / f"{s}.txt.gz" for lang in (langs or info["langs"])
                                         for s in ("train", "valid", "test"))]
    return [Path(p) for p in info["files"]]


def load_slices(data: Path) -> dict[str, Any]:
    path = data / "slices.json"
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")))


def prepare_data(src: Path, dst: Path, stages: Sequence[Stage], toy: bool, cache: Path) -> dict[str, Any]:
    """Every slice the stages read, under ``dst`` in the shared data's layout; ``slices.json`` says
    what is there (a slice already built with the same sizes is kept)."""
    info = load_slices(dst)
    if info.get("toy", toy) != toy:
        raise BadInput(f"{dst} holds {'real' if info['toy'] else 'toy'} data; remove it or prepare the other kind")
    slices: dict[str, Any] = dict(info.get("slices", {}))
    budgets = BUDGETS["toy" if toy else "real"]
    dst.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    want = slice_union(stages)
    if "wordnet" in want:  # its toy word list is the (toy) PTB's
        want = {"ptb": want.get("ptb", ()), **want}
    words: list[str] = []
    for key, langs in want.items():
        kind, _, budget = key.partition(":")
        started = time.monotonic()
        if kind == "ptb":
            lines = TOY_PTB_LINES if toy else 0
            if slices.get(key, {}).get("lines") != (lines or "all") or not (dst / "text" / "ptb").is_dir():
                words = slice_ptb(src, dst, lines)
                slices[key] = {"lines": lines or "all", "words": len(words)}
            elif toy:
                words = slice_ptb(src, dst, lines)
        elif kind == "wordnet":
            senses = TOY_WORDNET_SENSES if toy else 0
            slices[key] = build_wordnet(src, dst, words if toy else [], senses, cache)
        elif kind == "corpora":
            sizes = budgets[budget]
            have = slices.get(key, {})
            if (have.get("train_tokens"), have.get("eval_tokens")) != sizes or set(langs) - set(have.get("langs", {})):
                langs = tuple(dict.fromkeys([*have.get("langs", {}), *langs])) \
                    if (have.get("train_tokens"), have.get("eval_tokens")) == sizes else langs
                slices[key] = build_corpora(src, dst, budget, langs, sizes, cache)
        elif kind == "muse":
            slices[key] = {"files": slice_muse(src, dst)}
        elif kind == "wordsim":
            slices[key] = {"files": slice_wordsim(src, dst)}
        slices[key]["prepare_s"] = round(time.monotonic() - started, 1)
        slices[key]["mib"] = round(sum((dst / f).stat().st_size for f in slice_files(dst, key, slices[key])) / 2**20,
                                   2)
    info = {"toy": toy, "source": str(src), "slices": slices}
    write_json(dst / "slices.json", info)
    return info


def data_dir(args: argparse.Namespace, toy: bool) -> Path:
    return toy_root(args, toy) / "data"


def stage_data(args: argparse.Namespace, stage: Stage, toy: bool) -> Path:
    """Where ``run`` reads ``stage``'s data: the window's carry when it holds every slice the stage
    needs (the GPU machine), else the prepared folder (your own machine, after ``prepare``)."""
    need = slice_union([stage])
    for folder in (toy_root(args, toy) / CARRY_NAME / "data", data_dir(args, toy)):
        info = load_slices(folder)
        if info and info.get("toy") == toy and all(
                k in info["slices"] and set(langs) <= set(info["slices"][k].get("langs", ()))
                for k, langs in need.items()):
            return folder
    flag = " --toy" if toy else ""
    raise BadInput(f"missing prepared data for {stage.name}: run `python benchmarks/gpu_campaign.py prepare "
                   f"{stage.name}{flag}` (on the CPU machine) and carry it (`plan` does)")


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


# -- configs as a script's flags ------------------------------------------------------------------
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


# -- running one stage: parts, the stage JSON, the deadline ------------------------------------------
#: A part's status in a stage JSON. "running" in a JSON whose process is gone: it was killed there.
#: done and failed (an error: retried only after `reset`) are final; the rest are still owed.
PART_STATES = ("owed", "running", "done", "failed", "skipped", "interrupted", "killed")
OWED_STATES = ("owed", "running", "skipped", "interrupted", "killed", "pending")


class PartSkipped(Exception):  # noqa: N818 - a decision, not an error
    """Raised by a runner for a part it does not start (out of time): the part stays owed."""


@dataclasses.dataclass
class Ctx:
    """One stage's run: where it reads and writes, its deadline, and what it has done so far."""

    stage: Stage
    toy: bool
    full: bool
    device: str
    data: Path
    work: Path
    out: Path
    deadline: float | None  # absolute (time.time()); None: no limit (--full)
    steps: int | None
    threads: int
    measured: dict[str, Any]  # the ledger's entry for this stage (last measured seconds)
    record: StageRecord
    ledger: dict[str, Any] = dataclasses.field(default_factory=dict)  # every stage's entry (speeds to borrow)
    notes: list[str] = dataclasses.field(default_factory=list)
    invocations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    files: list[str] = dataclasses.field(default_factory=list)
    raw: dict[str, Any] = dataclasses.field(default_factory=dict)  # part -> what it measured (this call)
    state: dict[str, Any] = dataclasses.field(default_factory=dict)  # a runner's own values
    slices: dict[str, Any] = dataclasses.field(default_factory=dict)

    def left(self) -> float:
        """Seconds to the deadline (inf without one)."""
        return math.inf if self.deadline is None else self.deadline - time.time()

    def cap_minutes(self, reserve_s: float = 0.0, share: float = 1.0, floor: float = 0.05) -> float:
        """A training cap (``train.max_minutes``) from what is left: ``(left - reserve) / share``; 0
        (no cap) without a deadline."""
        if self.deadline is None:
            return 0.0
        return round(max((self.left() - reserve_s) / share / 60, floor), 3)

    def estimate(self, part: str) -> float:
        runner = RUNNERS[self.stage.name]
        return runner.estimate(part, self.measured.get("parts", {}).get(part, {}), self.toy)

    def attempt(self, part: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """Run one part: the JSON says it is running, then done (with its seconds) or failed (with
        the error) or skipped; returns what it measured (None unless done). Interrupts propagate."""
        self.record.begin(part)
        started = time.monotonic()
        try:
            raw = fn()
        except PartSkipped as why:
            self.record.set(part, "skipped", reason=str(why))
            return None
        except Exception as exc:  # the stage goes on with its other parts; the ledger keeps the error
            self.record.set(part, "failed", seconds=round(time.monotonic() - started, 1),
                            error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])
            print(f"[gpu_campaign] {self.stage.name} {part} failed: {exc}", file=sys.stderr)
            return None
        self.raw[part] = raw
        meta = {k: raw.pop(k) for k in list(raw) if k.startswith("_")}
        self.record.set(part, "done", seconds=round(time.monotonic() - started, 1),
                        **{k[1:]: v for k, v in meta.items()})
        return raw


class StageRecord:
    """The stage's ``<stage>.json``, rewritten atomically at the start, around every part and at the end."""

    def __init__(self, path: Path, header: dict[str, Any], parts: Sequence[str]) -> None:
        self.path = path
        self.obj: dict[str, Any] = {**header, "parts": {p: {"status": "owed"} for p in parts}, "timings": {},
                                    "summary": {}, "invocations": [], "results": {}}
        self.ctx: Ctx | None = None
        self.started = time.monotonic()

    def begin(self, part: str) -> None:
        self.set(part, "running", started=_now())

    def set(self, part: str, status: str, **fields: Any) -> None:
        entry = self.obj["parts"].setdefault(part, {})
        entry.update(status=status, **fields)
        if status != "running":
            entry["at"] = _now()
        self.write()

    def running(self) -> list[str]:
        return [p for p, e in self.obj["parts"].items() if e["status"] == "running"]

    def fail_running(self, exc: BaseException) -> None:
        """Mark the parts a benchmark call was still running as failed by ``exc`` (call in its handler)."""
        for part in self.running():
            self.set(part, "failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])

    def write(self, final: bool = False) -> None:
        ctx, c = self.ctx, self.obj["campaign"]
        c["updated"] = _now()
        c["wall_seconds"] = round(time.monotonic() - self.started, 1)
        states = [e["status"] for e in self.obj["parts"].values()]
        if final:
            c["finished"] = c["updated"]
            if c.get("stopped_by"):
                c["status"] = "interrupted"
            elif c.get("error"):
                c["status"] = "failed"
            elif all(s == "done" for s in states):
                c["status"] = "complete"
            elif "done" in states:
                c["status"] = "partial"
            else:
                c["status"] = "failed" if "failed" in states else "nothing done"
        if ctx is not None:
            runner = RUNNERS[ctx.stage.name]
            try:
                summary = runner.summary(ctx)
            except Exception as exc:  # a summary must never lose the parts' figures
                summary = {"error": f"summary: {type(exc).__name__}: {exc}"}
            summary.setdefault("ok", c.get("status") == "complete" if final else None)
            self.obj["summary"] = summary
            self.obj["invocations"] = ctx.invocations
            self.obj["results"] = ctx.raw
            c["notes"] = ctx.notes
            c["files"] = [f"{ctx.stage.name}.json", *ctx.files]
        write_json(self.path, self.obj)


class Runner:
    """A stage's parts and how to run them. Subclasses say what each part runs and how the
    figures add up (``summary``); the loop, the deadline checks and the JSON are shared."""

    name = ""
    parts: tuple[str, ...] = ()
    summary_keys: tuple[str, ...] = ()
    #: An elastic stage takes what is left of the window (training to a time cap), at least min_s.
    elastic = False

    def groups(self) -> list[tuple[str, ...]]:
        """Parts that must run in one call (an alignment needs its models); each alone by default."""
        return [(p,) for p in self.parts]

    def default_s(self, part: str, toy: bool) -> float:
        """The stated conservative estimate of a part never measured."""
        return 5.0 if toy else 60.0

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        """Seconds ``part`` is expected to take: its last measured seconds, else :meth:`default_s`."""
        seconds = measured.get("seconds")
        return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else self.default_s(part, toy)

    def min_s(self, toy: bool) -> float:
        return 0.0

    def skipped_for_time(self, ctx: Ctx, parts: Sequence[str]) -> bool:
        """Whether the call has less time left than the stage's minimum; if so ``parts`` are recorded
        as skipped, saying why (an elastic stage runs whole or not at all)."""
        if ctx.left() >= self.min_s(ctx.toy):
            return False
        for part in parts:
            ctx.record.set(part, "skipped", reason=f"out of time: {max(ctx.left(), 0):.0f} s left, the stage "
                                                    f"needs at least {self.min_s(ctx.toy):.0f}")
        return True

    def max_s(self, toy: bool) -> float:
        """The most an elastic stage takes of a window: all that is left on the GPU (more epochs, a
        larger B); twice its minimum in a dry run, so that every toy stage fits one window."""
        return 2 * self.min_s(toy) if toy else math.inf

    def overhead_s(self, measured: dict[str, Any], toy: bool) -> float:
        """A stage's own seconds besides its parts (process start, imports, setup): measured (at least
        the floor: a 2026-11-27 figure does not count the process's start), else stated."""
        floor, default = (3.0, 8.0) if toy else (10.0, 25.0)
        value = measured.get("overhead_s")
        return max(float(value), floor) if isinstance(value, int | float) and value >= 0 else default

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        """Before the first part (unpack data); timed as the stage's ``setup_s``."""

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        """Each group in turn, if its estimate fits what is left before the deadline."""
        for group in groups:
            need = sum(ctx.estimate(p) for p in group)
            if ctx.left() < need:
                for part in group:
                    ctx.record.set(part, "skipped", reason=f"out of time: {max(ctx.left(), 0):.0f} s left before "
                                                            f"the deadline, {need:.0f} s needed (estimate)")
                ctx.notes.append(f"{'+'.join(group)}: skipped, out of time")
                continue
            self.run_group(ctx, group)

    def run_group(self, ctx: Ctx, group: tuple[str, ...]) -> None:
        for part in group:
            ctx.attempt(part, functools.partial(self.run_part, ctx, part))

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        raise NotImplementedError

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        """Figures drawn from the stage's JSON (``result``) into ``out`` as ``<prefix><stage>.png`` (or
        .md); returns the names written. Not on the GPU machine in a window (only 8 files come back
        from $OUT): ``record`` draws them from the filed JSON."""
        return []


def call_benchmark(ctx: Ctx, script: str, argv: Sequence[Any], **kwargs: Any) -> tuple[dict[str, Any], str]:
    """Run ``benchmarks/<script>.py``'s ``main`` in this process with ``argv`` + ``--no-save`` (and
    keyword arguments such as ``progress``); returns the JSON object it prints and what follows it."""
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
                module.main(argv, **kwargs)
            else:
                module.main()
    finally:
        sys.argv = saved
        ctx.invocations.append({"script": f"benchmarks/{script}.py", "argv": argv,
                                "seconds": round(time.monotonic() - started, 1)})
    text = buffer.getvalue()
    obj, end = json.JSONDecoder().raw_decode(text, text.index("{"))
    return obj, text[end:].strip()


@contextlib.contextmanager
def deadline_alarm(deadline: float | None) -> Iterator[None]:
    """SIGALRM ``DEADLINE_GRACE_S`` after the deadline raises ``Terminated`` (as SIGTERM does inside
    ``stop_signals``): a part that overruns its estimate is stopped by the stage itself, which then
    writes its JSON, rather than by the call's outer limit in the middle of a write."""
    from polyglot_groc.training.interrupts import Terminated

    if deadline is None or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum: int, frame: object) -> None:
        _ALARM["fired"] = True
        raise Terminated(signum)

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, max(deadline + DEADLINE_GRACE_S - time.time(), 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- what a stage reads on the device ----------------------------------------------------------------
def materialize_corpora(ctx: Ctx, budget: str, langs: Sequence[str], dst: Path) -> Path:
    """The carried (gzipped) corpora of ``budget`` as ``dst/<lang>/{split}.txt`` + ``prepare.json``,
    the layout benchmarks/polyglot_table.py's ``prepare`` finds fresh (nothing is tokenised here)."""
    src = ctx.data / "corpora" / budget
    for lang in langs:
        for split in ("train", "valid", "test"):
            target = dst / lang / f"{split}.txt"
            if target.is_file():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(src / lang / f"{split}.txt.gz", "rb") as fin, open(target.with_suffix(".tmp"), "wb") as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            target.with_suffix(".tmp").replace(target)
    manifest = json.loads((src / "prepare.json").read_text(encoding="utf-8"))
    if (dst / "prepare.json").is_file():  # keep what an earlier call wrote for other languages
        old = json.loads((dst / "prepare.json").read_text(encoding="utf-8"))
        manifest["languages"] = {**old.get("languages", {}), **manifest["languages"]}
    write_json(dst / "prepare.json", manifest)
    return dst


def corpus_budget(ctx: Ctx, budget: str) -> tuple[int, int]:
    info = ctx.slices[f"corpora:{budget}"]
    return int(info["train_tokens"]), int(info["eval_tokens"])


def unpack_wordnet(ctx: Ctx) -> tuple[str, Path]:
    """The carried wn database, decompressed into the work folder (no import: ``prepare`` did it)."""
    info = ctx.slices["wordnet"]
    wn_dir = ctx.work / "wn"
    db = wn_dir / "wn.db"
    started = time.monotonic()
    if not db.is_file() or abs(db.stat().st_size / 2**20 - float(info.get("db_mib", -1))) > 0.01:
        wn_dir.mkdir(parents=True, exist_ok=True)
        with lzma.open(ctx.data / info["file"], "rb") as fin, open(wn_dir / ".wn.db.tmp", "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        (wn_dir / ".wn.db.tmp").replace(db)
    ctx.notes.append(f"wordnet {info['spec']}: carried database unpacked into {wn_dir} in "
                     f"{time.monotonic() - started:.1f} s (imported on the CPU machine in {info.get('import_s')} s)")
    return str(info["spec"]), wn_dir


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


def _sets(values: dict[str, Any]) -> list[str]:
    return [x for k, v in values.items() for x in ("--set", f"{k}={json.dumps(v)}")]


def sampled_softmax(ctx: Ctx) -> dict[str, Any]:
    return {**SAMPLED, "train.sampled_k": TOY_SAMPLED_K} if ctx.toy else dict(SAMPLED)


def capped_estimate(cap_s: float, default_s: float, measured: dict[str, Any]) -> float:
    """A training part's seconds: its cap plus its measured overhead (setup, validation, test), else
    the default."""
    seconds, train = measured.get("seconds"), measured.get("train_seconds")
    if isinstance(seconds, int | float) and isinstance(train, int | float) and seconds >= train:
        return cap_s + (seconds - train)
    return default_s


def share_cap(ctx: Ctx, part: str, todo: Sequence[tuple[str, ...]], capped: Callable[[str], bool],
              target_s: float) -> float:
    """``part``'s training cap in minutes: what is left before the deadline, less what the parts after
    it need (their estimates: the rest of its group, then each later group of ``todo`` that still
    fits whole) and its own overhead, shared with the capped parts among them; at least 0.1 minutes.
    0 (no cap) without a deadline."""
    if ctx.deadline is None:
        return 0.0
    own = ctx.estimate(part)
    room = ctx.left() - own
    at = next(i for i, g in enumerate(todo) if part in g)
    after = list(todo[at][todo[at].index(part) + 1:])
    for group in todo[at + 1:]:
        if sum(ctx.estimate(q) for q in (*after, *group)) > room:
            break  # it will not start in this call: no time is kept for it
        after += group
    n = 1 + sum(capped(p) for p in after)
    fixed = sum(ctx.estimate(p) for p in after) - (n - 1) * target_s + max(own - target_s, 0)
    return round(max((ctx.left() - fixed) / n / 60, 0.1), 3)


# -- the stages --------------------------------------------------------------------------------------
class CudaTests(Runner):
    name = "cuda-tests"
    parts = ("pytest",)
    summary_keys = ("passed", "failed", "error", "skipped", "exit_code", "ok", "tests")

    def default_s(self, part: str, toy: bool) -> float:
        return 30.0 if toy else 90.0

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        junit = ctx.work / "junit.xml"
        junit.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/test_cuda.py", "-p", "no:cacheprovider",
               f"--junitxml={junit}"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(REPO), os.environ.get("PYTHONPATH")) if x)}
        started = time.monotonic()
        try:  # its own deadline: pytest is stopped, this stage is not (it writes its JSON)
            proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=None if ctx.deadline is None else max(ctx.left(), 5), check=False)
        finally:
            ctx.invocations.append({"script": "pytest", "argv": cmd[1:],
                                    "seconds": round(time.monotonic() - started, 1)})
        print(proc.stdout, file=sys.stderr)
        tests: dict[str, str] = {}
        if junit.is_file():
            for case in ET.parse(junit).getroot().iter("testcase"):
                outcome = "passed"
                for child, label in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                    if case.find(child) is not None:
                        outcome = label
                tests[f"{case.get('classname')}::{case.get('name')}"] = outcome
        return {"tests": tests, "exit_code": proc.returncode, "pytest_tail": proc.stdout[-4000:]}

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        r = ctx.raw.get("pytest")
        if r is None:
            return {"passed": None, "failed": None, "error": None, "skipped": None, "exit_code": None, "tests": {}}
        counts = {k: sum(v == k for v in r["tests"].values()) for k in ("passed", "failed", "error", "skipped")}
        # On CPU (the dry run) every cuda case skips: that is the dry run's pass.
        ok = r["exit_code"] == 0 and (ctx.toy or counts["passed"] > 0)
        return {**counts, "exit_code": r["exit_code"], "ok": ok, "tests": r["tests"]}


VS_MODELS = ("tied_full", "tied_sampled", "groc_full", "groc_sampled", "groc_sampled_sparse")
VS_CORPORA = {"140k": "thesis", "40k": "small", "10k": ""}  # the issue's target size first
#: vocab_scaling.py's targets at ~140k words: (summary key, comparison, threshold).
VS_TARGETS = {"groc_sampled_over_tied_sampled_train": (">=", 0.5), "groc_sampled_over_groc_full_train": (">=", 10.0),
              "groc_over_tied_eval": (">=", 0.9), "groc_sampled_memory_over_tied_full": ("<=", 1.0)}


class VocabScaling(Runner):
    name = "vocab-scaling"
    parts = tuple(f"{c}.{m}" for c in VS_CORPORA for m in VS_MODELS)
    summary_keys = ("size", "precision", "sampled_k", "proposal", "steps", "corpora", "targets_140k", "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 4.0
        return {"140k": 40.0, "40k": 25.0}.get(part.split(".")[0], 20.0)  # a child: start, data, steps, validation

    def steps(self, ctx: Ctx, corpus: str, model: str) -> int:
        full_softmax = model.endswith("_full") and corpus == "140k"  # ~0.2 s a GroC step there
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 3
        return (10 if full_softmax else 50) if ctx.full else (8 if full_softmax else 20)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        from benchmarks.common import prepare_ptb

        roots: dict[str, Path] = {}
        for corpus in dict.fromkeys(p.split(".")[0] for p in parts):
            budget = VS_CORPORA[corpus]
            roots[corpus] = (materialize_corpora(ctx, budget, ("en", "fr"), ctx.work / f"corpora-{budget}") if budget
                             else prepare_ptb(ctx.data, ctx.work / "ptb"))
        ctx.state["roots"] = roots

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        from benchmarks import vocab_scaling as vs

        corpus, model = part.split(".", 1)
        toy = {"model.d": TOY["d"], "model.prefix.hidden": TOY["hidden"], "train.batch_size": TOY["batch_size"],
               "train.bptt": TOY["bptt"], "train.eval_batch_size": 4,
               "model.surface.filters": parse_filters(TOY["filters"])} if ctx.toy else {}
        spec = vs.child_spec(corpus, model, ctx.state["roots"][corpus], size="paper",
                             steps=self.steps(ctx, corpus, model), device=ctx.device, threads=ctx.threads,
                             precision="auto", sampled_k=TOY_SAMPLED_K if ctx.toy else SAMPLED_K,
                             proposal=SAMPLED_PROPOSAL, work=ctx.work / "vocab_scaling",
                             overrides=toy, deadline=ctx.deadline)
        started = time.monotonic()
        row = vs.run_child(spec, ctx.threads, in_process=ctx.toy)  # a dry run trains in this process
        ctx.invocations.append({"script": "benchmarks/vocab_scaling.py", "argv": ["--child", spec["name"]],
                                "seconds": round(time.monotonic() - started, 1), "in_process": ctx.toy})
        if "skipped" in row:
            raise PartSkipped(row["skipped"])
        return row

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        from benchmarks import vocab_scaling as vs

        corpora = {}
        for corpus in VS_CORPORA:
            rows = {m: ctx.raw[f"{corpus}.{m}"] for m in VS_MODELS if f"{corpus}.{m}" in ctx.raw}
            if rows:
                corpora[corpus] = vs.summarise(corpus, rows)
        at = corpora.get("140k", {}).get("summary", {})
        targets = {}
        for key, (op, threshold) in VS_TARGETS.items():
            value = at.get(key)
            met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
            targets[key] = {"value": value, "target": f"{op} {threshold}", "met": met}
        return {"size": "paper" if not ctx.toy else "paper, toy overrides", "precision": "auto (bf16 on CUDA)",
                "sampled_k": TOY_SAMPLED_K if ctx.toy else SAMPLED_K, "proposal": SAMPLED_PROPOSAL,
                "steps": {p: r.get("steps") for p, r in ctx.raw.items()}, "corpora": corpora, "targets_140k": targets}


THROUGHPUT_MODELS = ("lookup", "groc", "groc_sparse_p0.3", "groc-lex")
#: label -> (precision, compile, char-CNN impl, models); padded is CUDA's "auto". Every precision is
#: named explicitly: train.precision's default (auto) is bf16 on CUDA.
THROUGHPUT_CONFIGS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    "fp32": ("fp32", False, "padded", THROUGHPUT_MODELS),
    "tf32": ("tf32", False, "padded", THROUGHPUT_MODELS),
    "bf16": ("bf16", False, "padded", THROUGHPUT_MODELS),
    "fp32+compile": ("fp32", True, "padded", ("lookup", "groc")),
    "bf16+compile": ("bf16", True, "padded", ("lookup", "groc")),
    "fp32-grouped": ("fp32", False, "grouped", ("lookup", "groc")),
}


@contextlib.contextmanager
def cheap_compile(on: bool) -> Iterator[None]:
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


class Throughput(Runner):
    name = "throughput"
    parts = tuple(THROUGHPUT_CONFIGS)
    summary_keys = ("target", "configs", "target_met_in", "target_met_everywhere", "best_config", "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 8.0
        return 150.0 if "compile" in part else 60.0  # inductor compiles each model (~40 s)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["wn"] = unpack_wordnet(ctx)
        if ctx.toy:
            ctx.notes.append("dry run: torch.compile runs with backend='eager' (inductor would cost ~40 s a model)")

    def run_part(self, ctx: Ctx, label: str) -> dict[str, Any]:
        spec, wn_dir = ctx.state["wn"]
        precision, compiled, impl, models = THROUGHPUT_CONFIGS[label]
        steps = ctx.steps or (2 if ctx.toy else 100 if ctx.full else 20)
        repeats = 1 if ctx.toy else 3 if ctx.full else 2
        argv: list[Any] = ["--device", ctx.device, "--steps", steps, "--repeats", repeats, "--threads", ctx.threads,
                           "--work", ctx.work / "throughput", "--lexicon", spec, "--wn-dir", wn_dir, "--size", "paper",
                           *_sets({"train.softmax": "full"})]
        if ctx.toy:  # --set comes after --size's overrides
            argv += ["--eval-lines", 4, *_sets({"model.d": TOY["d"], "model.prefix.hidden": TOY["hidden"],
                                                "train.batch_size": TOY["batch_size"], "train.bptt": TOY["bptt"],
                                                "model.surface.filters": parse_filters(TOY["filters"])})]
        argv += ["--precision", precision, "--impl", impl, "--models", ",".join(models)]
        with cheap_compile(ctx.toy and compiled):
            res, _ = call_benchmark(ctx, "throughput", [*argv, "--compile"] if compiled else argv)
        return res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        configs: dict[str, Any] = {}
        for label, (precision, compiled, impl, _) in THROUGHPUT_CONFIGS.items():
            head = {"precision": precision, "compile": compiled, "impl": impl}
            res = ctx.raw.get(label)
            if res is None:
                if label in ctx.record.obj["parts"]:
                    configs[label] = {**head, "owed": ctx.record.obj["parts"][label]["status"]}
                continue
            ratio = res.get("groc_over_lookup_train")
            configs[label] = {
                **head,
                "train_tokens_per_s": {m: r.get("train_tokens_per_s") for m, r in res["models"].items()},
                "train_ratio_to_lookup": {m: r.get("train_ratio_to_lookup") for m, r in res["models"].items()
                                          if m != "lookup"},
                "encoder_impl": {m: r.get("encoder_impl") for m, r in res["models"].items()},
                "peak_memory_mib": {m: r.get("peak_memory_mib") for m, r in res["models"].items()},
                "groc_over_lookup_train": ratio,
                "target_met": ratio >= THROUGHPUT_TARGET if ratio is not None else None,
                "surface_fwd_bwd_seconds_over_vocab": res.get("surface_fwd_bwd_seconds_over_vocab"),
            }
        met = [c["target_met"] for c in configs.values() if c.get("target_met") is not None]
        measured = [k for k, c in configs.items() if "owed" not in c]
        return {"target": f"GroC/lookup train tokens/s >= {THROUGHPUT_TARGET}", "configs": configs,
                "target_met_in": [k for k, c in configs.items() if c.get("target_met")],
                "target_met_everywhere": bool(met) and len(met) == len(configs) and all(met),
                "best_config": max(measured, key=lambda k: configs[k].get("groc_over_lookup_train") or 0.0)
                if measured else None}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        configs = {label: c for label, c in result["summary"].get("configs", {}).items() if "owed" not in c}
        if not configs:
            return []
        name = f"{prefix}throughput.png"
        plot_bars({label: c.get("train_ratio_to_lookup", {}) for label, c in configs.items()}, out / name,
                  "train tokens/s relative to lookup", THROUGHPUT_TARGET)
        return [name]


THESIS_TRAIN_MIN = 1.5  # minutes a thesis-align model trains in a window, by default (more where time is left)
THESIS_STEPS_DEFAULT = 3000


class ThesisAlign(Runner):
    name = "thesis-align"
    parts = tuple(f"en-{t}.{k}" for t in ALIGN_TARGETS for k in ("groc", "lookup", "align"))
    summary_keys = ("table_5_2_test_perplexity", "table_5_4_alignment", "corpora", "steps", "max_minutes_per_run",
                    "softmax", "notes", "ok")

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(f"en-{t}.{k}" for k in ("groc", "lookup", "align")) for t in ALIGN_TARGETS]

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 10.0
        # align: two models' export, Procrustes + 10 CSLS refinements and evaluation; one model took
        # over 90 s on the H100 machine's CPU (2026-11-27). A model: its cap, setup and test (~45 s).
        return 200.0 if part.endswith(".align") else THESIS_TRAIN_MIN * 60 + 45.0

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        if toy:
            return super().estimate(part, measured, toy)
        if part.endswith(".align"):
            if measured.get("status") == "done" and measured.get("seconds"):
                return float(measured["seconds"])
            return max(self.default_s(part, toy), 2.2 * float(measured.get("seconds_lower_bound") or 0))
        return capped_estimate(THESIS_TRAIN_MIN * 60, self.default_s(part, toy), measured)

    def steps(self, ctx: Ctx) -> int:
        """The equal step budget of every model: ``--steps``, else what the slowest measured
        sampled-softmax model does in THESIS_TRAIN_MIN minutes, else THESIS_STEPS_DEFAULT (the cap
        binds if it is too many, and the JSON says the budgets were unequal)."""
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 4
        if ctx.full:
            return 60_000  # ~20 epochs of en+fr at batch 20x35: hours on one GPU
        rates = [float(m["steps_per_s"]) for p, m in ctx.measured.get("parts", {}).items()
                 if m.get("status") == "done" and m.get("softmax") == "sampled" and m.get("steps_per_s")]
        if not rates:
            return THESIS_STEPS_DEFAULT
        return max(500, int(min(rates) * THESIS_TRAIN_MIN * 60 // 250 * 250))

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        langs = ["en", *(p.split(".")[0].split("-")[1] for p in parts)]
        materialize_corpora(ctx, "thesis", list(dict.fromkeys(langs)), ctx.work / "table" / "corpora")
        ctx.state["steps"] = self.steps(ctx)
        ctx.state["todo"] = [g for g in self.groups() if set(g) <= set(parts)]
        _, ctx.state["sizes"] = config_sizes("paper.toml", {
            "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
            "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
            "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr",
            "train.eval_batch_size": "--eval-batch-size", "train.output_update_prob": "--output-update-prob",
        }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every"))
        if ctx.toy:
            ctx.state["sizes"] = _toy_flags(ctx.state["sizes"])

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        pair, kind = part.split(".")
        tgt = pair.split("-")[1]
        steps, work = ctx.state["steps"], ctx.work / "table"
        if kind == "align":
            aligned, _ = call_benchmark(ctx, "align_polyglot", [
                "--work", work, "--src", "en", "--tgt", tgt, "--steps", steps, "--data-root", ctx.data,
                "--refine", 1 if ctx.toy else 10, "--threads", ctx.threads])
            return aligned
        cap = share_cap(ctx, part, ctx.state["todo"], lambda p: not p.endswith(".align"), THESIS_TRAIN_MIN * 60)
        train_tokens, eval_tokens = corpus_budget(ctx, "thesis")
        table, _ = call_benchmark(ctx, "polyglot_table", [
            "--work", work, "--data-root", ctx.data, "--targets", tgt, "--kinds", kind, "--settings", "EN+tgt",
            "--baseline-polyglot", "--memory-steps", 0, "--train-tokens", train_tokens, "--eval-tokens", eval_tokens,
            "--steps", steps, "--eval-every", max(steps // 4, 1), "--max-minutes", cap, "--threads", ctx.threads,
            *ctx.state["sizes"], *_sets({"train.device": ctx.device, **sampled_softmax(ctx)})])
        run = next(iter(table["runs"].values()))
        if "error" in run:
            raise RuntimeError(run["error"])
        ctx.state.setdefault("corpora", {}).update(table["corpora"])
        ctx.notes.extend(n for n in table["notes"] if n not in ctx.notes)
        train_s = float(run.get("train_seconds") or 0.0)
        return {**run, "max_minutes": cap, "_train_seconds": train_s, "_softmax": "sampled", "_cap_minutes": cap,
                "_steps_per_s": round(run["steps"] / train_s, 2) if train_s else None}

    def run_group(self, ctx: Ctx, group: tuple[str, ...]) -> None:
        for part in group:
            if part.endswith(".align") and not all(p in ctx.raw for p in group if p != part):
                ctx.record.set(part, "skipped", reason="needs both models trained in this call")
                continue
            ctx.attempt(part, functools.partial(self.run_part, ctx, part))

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        perplexity: dict[str, Any] = {}
        alignment: dict[str, Any] = {}
        for tgt in ALIGN_TARGETS:
            for kind in ("groc", "lookup"):
                r = ctx.raw.get(f"en-{tgt}.{kind}")
                if r is not None:
                    perplexity.setdefault(f"en+{tgt}", {})[kind] = {
                        "test_perplexity": r.get("test_perplexity"), "steps": r.get("steps"),
                        "stop_reason": r.get("stop_reason"), "max_minutes": r.get("max_minutes")}
            a = ctx.raw.get(f"en-{tgt}.align")
            if a is not None:
                alignment[f"en-{tgt}"] = {
                    "rows": a["table"]["rows"], "same_evaluated_words": a["table"]["same_evaluated_words"],
                    "non_identical_model_vs_char_ngram": a["table"]["non_identical_model_vs_char_ngram"],
                    "groc_vs_lookup_p_at_5": {k: v for k, v in a["groc_vs_lookup"].items() if k.startswith("p_at_5")},
                    "eval_dictionary": {m: (r.get("alignment") or {}).get("eval_dictionary")
                                        for m, r in a["models"].items()}}
        caps = sorted({r["max_minutes"] for p, r in ctx.raw.items() if not p.endswith(".align")})
        notes = list(ctx.notes) + [n for p, a in ctx.raw.items() if p.endswith(".align") for n in a.get("notes", [])]
        return {"table_5_2_test_perplexity": perplexity, "table_5_4_alignment": alignment,
                "corpora": ctx.state.get("corpora", {}), "steps": ctx.state.get("steps"),
                "max_minutes_per_run": caps, "softmax": sampled_softmax(ctx), "notes": notes}


PTB_MODELS = {"tied": "", "groc": "", "groc-lex": "", "groc-p0.3": "groc;train.output_update_prob=0.3"}


class PtbPaper(Runner):
    """Seed 000's PTB configuration, all four models at once on the GPU (--jobs), for as long as the
    call allows: the paper trains to early stopping (tens of epochs), one call fits a few."""

    name = "ptb-paper"
    parts = tuple(PTB_MODELS)
    summary_keys = ("config", "kind_in_config", "models", "orderings", "max_minutes_per_model", "epochs_in_one_call",
                    "one_call", "unfinished", "seed_000_targets_paper_config", "seed_000_b4_sparse", "ok")
    elastic = True
    FINAL_S = 90.0  # after the cap: the spawned workers' start, final dev/test of each best checkpoint

    def min_s(self, toy: bool) -> float:
        return 20.0 if toy else 300.0

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(self.parts)]  # trained together, sharing the GPU

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        return self.min_s(toy) / len(self.parts)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["wn"] = unpack_wordnet(ctx)

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        parts = [p for g in groups for p in g]
        if self.skipped_for_time(ctx, parts):
            return
        spec, wn_dir = ctx.state["wn"]
        cfg, sizes = config_sizes("ptb_paper.toml", {
            "model.prefix.n_layers": "--layers", "model.prefix.hidden": "--hidden", "model.d": "--d",
            "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr", "train.clip": "--clip",
            "train.lr_patience": "--lr-patience", "train.stop_patience": "--stop-patience",
            "train.max_epochs": "--epochs", "train.output_update_prob": "--output-update-prob",
            "model.surface.filters": "--filters", "train.seed": "--seed",
        }, skip=("model.kind", "model.lexicon.specs", "model.lexicon.backend", "model.lexicon.wn_dir",
                 "model.lexicon.extra_cap"))
        sizes += ["--jobs", str(len(parts)), *_sets({"train.softmax": "full"})]  # PTB is 10k words
        if ctx.toy:  # one model at a time on CPU (the spawned --jobs path is tests/test_ptb_convergence.py's)
            sizes = _override(_toy_flags(sizes), {"--epochs": 2, "--train-lines": 60, "--eval-lines": 12, "--jobs": 1})
        cap = ctx.cap_minutes(3.0 if ctx.toy else self.FINAL_S)
        ctx.state.update(cfg=cfg, cap=cap)
        models = [p for p in parts if not PTB_MODELS[p]]
        variants = [f"{p}={PTB_MODELS[p]}" for p in parts if PTB_MODELS[p]]
        argv: list[Any] = ["--work", ctx.work / "ptb", "--models", ",".join(models), "--lexicon", spec,
                           "--wn-dir", wn_dir, "--device", ctx.device, "--threads", ctx.threads, "--early-stopping",
                           "--max-minutes", cap, *sizes, *(x for v in variants for x in ("--variant", v))]
        for part in parts:
            ctx.record.begin(part)

        def progress(model: str, result: dict[str, Any]) -> None:  # the models train at once: their own seconds
            ctx.raw[model] = result
            ctx.record.set(model, "done", seconds=result.get("wall_seconds"), train_seconds=result.get("train_seconds"),
                           epochs=(result.get("epochs") or [0])[-1], stop_reason=result.get("stop_reason"))

        try:
            res, _ = call_benchmark(ctx, "ptb_convergence", argv, progress=progress)
        except Exception as exc:
            ctx.record.fail_running(exc)
            return
        ctx.state["ptb"] = res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        from benchmarks.ptb_convergence import SEED_TARGETS, seed_orderings

        done = {m: ctx.raw[m] for m in self.parts if m in ctx.raw}
        models = {m: {k: r.get(k) for k in ("epochs", "final_valid", "test", "stop_reason", "steps", "train_seconds",
                                             "params", "output_update_prob", "valid_curve")}
                  for m, r in done.items()}
        epochs = {m: (r["epochs"][-1] if r.get("epochs") else 0) for m, r in done.items()}
        unfinished = [m for m, r in done.items() if r.get("stop_reason") in ("max_minutes", "stopped")]
        cfg = ctx.state.get("cfg")
        return {"config": "polyglot_groc/configs/ptb_paper.toml (train.softmax full, the paper's updates; "
                          "groc-p0.3: seed 000 B.4's sparse updates)",
                "kind_in_config": cfg.model.kind if cfg is not None else None, "models": models,
                "orderings": seed_orderings(done) if done else {}, "max_minutes_per_model": ctx.state.get("cap"),
                "epochs_in_one_call": epochs,
                "one_call": "trained in ONE device call, as many epochs as fit (checkpoints cannot come back through "
                            "$OUT, so nothing is resumed later): the paper trains to B.1 early stopping; models "
                            "stopped by the cap are not converged",
                "unfinished": unfinished, "seed_000_targets_paper_config": SEED_TARGETS,
                "seed_000_b4_sparse": {"groc-p0.3": "p = 0.3 reaches 75.3 on penn (split not stated)"}}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        from benchmarks.ptb_convergence import plot

        models = {m: r for m, r in result["results"].items() if r.get("valid_curve")}
        if not models:
            return []
        name = f"{prefix}ptb-paper.png"
        plot(models, out / name)
        return [name]


class ElmoInit(Runner):
    name = "elmo-init"
    parts = ("elmo", "finetune", "groc_scratch")
    summary_keys = ("starter_elmo", "random_groc_no_train", "elmo_to_groc_no_ft", "elmo_to_groc_ft", "groc_scratch",
                    "finetune_steps_to_match_scratch_at_B", "ratio_finetune_to_scratch",
                    "total_ratio_incl_elmo_pretraining", "stop_reasons", "seconds", "budget", "n_params",
                    "max_minutes_per_run", "softmax", "ok")
    elastic = True
    EVALS = 4  # validations per B steps: B/4, B/2, B (and 2B for scratch)
    RATE_DEFAULT = 10.0  # steps/s of a paper-size en+es model on the GPU, stated (never measured yet)
    EVAL_S_DEFAULT = 6.0  # one validation (en+es valid, full softmax)

    def min_s(self, toy: bool) -> float:
        return 20.0 if toy else 240.0

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(self.parts)]  # finetune needs this call's elmo run; B must be the same for all

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        return self.min_s(toy) / len(self.parts)

    def budget(self, ctx: Ctx, seconds: float) -> int:
        """B: what fits ``seconds`` at the measured speeds (steps/s of each training, seconds of a
        validation), else thesis-align's measured sampled-softmax speeds at the same sizes (tied's for
        ELMo, whose output is a lookup table; GroC's for the GroC runs), else the stated defaults; a
        multiple of 4 x EVALS."""
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 4
        if ctx.full:
            return 8000
        parts = ctx.measured.get("parts", {})
        thesis = ctx.ledger.get("thesis-align", {}).get("parts", {})

        def borrowed(kind: str) -> float | None:
            rates = [float(m["steps_per_s"]) for p, m in thesis.items() if p.endswith(f".{kind}")
                     and m.get("status") == "done" and m.get("softmax") == "sampled" and m.get("steps_per_s")]
            return min(rates) if rates else None

        proxy = {"elmo": borrowed("lookup"), "finetune": borrowed("groc"), "groc_scratch": borrowed("groc")}
        rate = {p: float(parts.get(p, {}).get("steps_per_s") or proxy[p] or self.RATE_DEFAULT) for p in self.parts}
        eval_s = max([float(parts.get(p, {}).get("eval_s") or self.EVAL_S_DEFAULT) for p in self.parts])
        n_evals = self.EVALS + 1 + (1 + self.EVALS) + 2 * self.EVALS  # elmo, random GroC, finetune, scratch
        per_b = 1 / rate["elmo"] + 1 / rate["finetune"] + 2 / rate["groc_scratch"]
        b = (seconds - 60.0 - n_evals * eval_s) / per_b
        return max(int(b // (4 * self.EVALS) * 4 * self.EVALS), 4 * self.EVALS)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        materialize_corpora(ctx, "thesis", ("en", "es"), ctx.work / "corpora")

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        parts = [p for g in groups for p in g]
        if self.skipped_for_time(ctx, parts):
            return
        _, sizes = config_sizes("paper.toml", {
            "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
            "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.eval_batch_size": "--eval-batch-size",
        }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every", "train.max_minutes"))
        if ctx.toy:
            sizes = _toy_flags(sizes)
        budget = self.budget(ctx, ctx.left() - 10.0)
        cap = ctx.cap_minutes(10.0, share=2)  # a safety net: B is sized to fit; the 2B scratch run is the longest
        ctx.state.update(budget=budget, cap=cap)
        last = time.monotonic()
        ctx.record.begin("elmo")

        def progress(phase: str, info: dict[str, Any]) -> None:
            nonlocal last
            ctx.raw[phase] = info
            train = float(info.get("train_seconds") or 0.0)
            n_evals = max(len(info.get("curve", [])), 1)
            ctx.record.set(phase, "done", seconds=round(time.monotonic() - last, 1), train_seconds=train,
                           steps_per_s=round(info["steps"] / train, 2) if train else None,
                           eval_s=round((info["seconds"] - train) / n_evals, 2), stop_reason=info.get("stop_reason"))
            last = time.monotonic()
            following = self.parts[self.parts.index(phase) + 1:]
            if following:
                ctx.record.begin(following[0])

        try:
            res, _ = call_benchmark(ctx, "elmo_init", [
                "--data", ctx.work / "corpora", "--langs", "en,es", "--budget", budget,
                "--evals", self.EVALS, "--out", ctx.work / "elmo", "--overwrite", "--threads", ctx.threads, *sizes,
                *_sets({"train.device": ctx.device, "train.max_minutes": cap, **sampled_softmax(ctx)})],
                progress=progress)
        except Exception as exc:
            ctx.record.fail_running(exc)
            return
        ctx.state["elmo"] = res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        res = ctx.state.get("elmo", {})
        keys = self.summary_keys[:-3]
        out = {k: res.get(k) for k in keys}
        if not res:  # stopped part-way: what the finished trainings measured
            out["stop_reasons"] = {p: r.get("stop_reason") for p, r in ctx.raw.items()}
            out["seconds"] = {p: r.get("seconds") for p, r in ctx.raw.items()}
            out["n_params"] = {p: r.get("n_params") for p, r in ctx.raw.items()}
            out["budget"] = ctx.state.get("budget")
        return {**out, "max_minutes_per_run": ctx.state.get("cap"), "softmax": sampled_softmax(ctx)}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        curves = {phase: [(p["step"], p["pooled_perplexity"]) for p in r.get("curve", [])
                          if isinstance(p["pooled_perplexity"], float)] for phase, r in result["results"].items()}
        if not any(curves.values()):
            return []
        name = f"{prefix}elmo-init.png"
        plot_curves(curves, out / name, "pooled valid perplexity")
        return [name]


FAMILY_ROWS = ("untied", "conv", "tied", "bilinear", "deep-residual", "adaptive", "groc", "untied+welch")
FAMILY_ROW_MIN = 0.75  # minutes a row trains in a window, by default (more where time is left)


class Family(Runner):
    name = "family"
    parts = FAMILY_ROWS
    summary_keys = ("models", "steps_asked", "max_minutes_per_row", "rows_stopped_by_cap", "seed_expected_order",
                    "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 6.0
        return FAMILY_ROW_MIN * 60 + (70.0 if part == "untied+welch" else 40.0)  # + word2vec; setup and test

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        if toy:
            return super().estimate(part, measured, toy)
        return capped_estimate(FAMILY_ROW_MIN * 60, self.default_s(part, toy), measured)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["todo"] = [(p,) for p in parts]

    def run_part(self, ctx: Ctx, row: str) -> dict[str, Any]:
        from benchmarks.output_family import PAPER

        steps = ctx.steps or (3 if ctx.toy else PAPER["steps"])
        if ctx.toy:
            sizes: list[Any] = ["--d", TOY["d"], "--hidden", TOY["hidden"], "--batch-size", TOY["batch_size"],
                                "--bptt", TOY["bptt"], "--filters", TOY["filters"], "--w2v-epochs", 1,
                                "--eval-batch-size", 4, "--set", "model.output.cutoffs=[0.2, 0.7]"]
        else:  # PAPER's sizes as flags so --steps applies (--size paper fixes its own steps)
            sizes = ["--d", PAPER["d"], "--hidden", PAPER["hidden"], "--batch-size", PAPER["batch_size"],
                     "--bptt", PAPER["bptt"], "--dropout", PAPER["dropout"]]
        cap = share_cap(ctx, row, ctx.state["todo"], lambda p: True, FAMILY_ROW_MIN * 60)
        res, markdown = call_benchmark(ctx, "output_family", [
            "--work", ctx.work / "output_family", "--device", ctx.device, "--steps", steps,
            "--eval-every", max(steps // 3, 1) if ctx.toy else PAPER["eval_every"], "--threads", ctx.threads,
            "--rows", row, *sizes, "--set", f"train.max_minutes={cap}"])
        r = res["models"][row]
        return {**r, "config": res["config"], "max_minutes": cap, "steps_asked": steps,
                "_train_seconds": r.get("train_seconds")}

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        done = {row: ctx.raw[row] for row in self.parts if row in ctx.raw}
        models = {row: {"valid_perplexity": r["valid_perplexity"], "test_perplexity": r["test_perplexity"],
                        "steps": r["steps"], "n_params": r["n_params"], "tokens_per_s": r["tokens_per_s"],
                        "max_minutes": r["max_minutes"]} for row, r in done.items()}
        return {"models": models, "steps_asked": next((r["steps_asked"] for r in done.values()), None),
                "max_minutes_per_row": sorted({r["max_minutes"] for r in done.values()}),
                "rows_stopped_by_cap": [row for row, r in done.items() if r["steps"] < r["steps_asked"]],
                "seed_expected_order": "untied > tied > bilinear >= deep-residual >= adaptive > groc (ppl); "
                                       "conv > untied; |Θ| adaptive < tied"}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        from benchmarks.output_family import markdown

        done = {row: result["results"][row] for row in self.parts if row in result["results"]}
        if not done:
            return []
        name = f"{prefix}family.md"
        config = next(iter(done.values()))["config"]
        (out / name).write_text(markdown({"config": config, "models": done}) + "\n", encoding="utf-8")
        return [name]


RUNNERS: dict[str, Runner] = {r.name: r for r in (CudaTests(), VocabScaling(), Throughput(), ThesisAlign(),
                                                  PtbPaper(), ElmoInit(), Family())}
#: The summary keys of each stage: the real run and the dry run write exactly these.
SUMMARY_KEYS: dict[str, tuple[str, ...]] = {name: r.summary_keys for name, r in RUNNERS.items()}
#: Top-level keys of every stage's JSON.
RESULT_KEYS = ("stage", "title", "campaign", "parts", "timings", "summary", "invocations", "results")


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
def load_ledger(path: Path) -> dict[str, Any]:
    ledger: dict[str, Any] = {}
    if path.is_file():
        try:
            ledger = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BadInput(f"{path} is not valid JSON ({exc}); restore it from git") from exc
    stages = ledger.get("stages", {})
    return {"campaign": "benchmarks/gpu_campaign.py",
            "rule": "a part is done only when a run on CUDA (never a CPU dry run) finished it; `plan` runs the "
                    "parts still owed, in priority order; a part that failed with an error waits for `reset`",
            "stages": {name: {"status": "pending", "parts": {}, "runs": [], **stages.get(name, {})}
                       for name in STAGES}}


def save_ledger(path: Path, ledger: dict[str, Any]) -> None:
    write_json(path, ledger)


def owed_parts(entry: dict[str, Any], runner: Runner) -> list[str]:
    return [p for p in runner.parts if entry["parts"].get(p, {}).get("status", "pending") in OWED_STATES]


def failed_parts(entry: dict[str, Any], runner: Runner) -> list[str]:
    return [p for p in runner.parts if entry["parts"].get(p, {}).get("status") == "failed"]


def stage_status(entry: dict[str, Any], runner: Runner) -> tuple[str, str | None]:
    """done (every part), failed (a part's error, or the last run failed with nothing done: its
    reason), partial (some parts done), pending (nothing run)."""
    states = {p: entry["parts"].get(p, {}).get("status", "pending") for p in runner.parts}
    if all(s == "done" for s in states.values()):
        return "done", None
    failed = [p for p, s in states.items() if s == "failed"]
    if failed:
        return "failed", f"{failed[0]}: {entry['parts'][failed[0]].get('error')}"
    last = entry["runs"][-1] if entry.get("runs") else None
    if last is not None and last.get("status") in ("failed", "killed", "interrupted", "nothing done") \
            and not any(s == "done" for s in last.get("parts", {}).values()):
        return "failed", last.get("reason") or last.get("status")
    if any(s == "done" for s in states.values()):
        return "partial", None
    return "pending", None


def merge_run(ledger: dict[str, Any], stage: str, run: dict[str, Any], parts: dict[str, dict[str, Any]]) -> None:
    """File one run of ``stage``: its parts (a new figure replaces an old one; a part not done this
    time never undoes one done earlier, though its measured seconds are kept), and the run itself."""
    entry = ledger["stages"][stage]
    for name, info in parts.items():
        old = entry["parts"].get(name, {})
        info = {k: v for k, v in info.items() if k not in ("traceback", "started")}
        if info.get("status") == "done" or old.get("status") != "done":
            kept = {k: v for k, v in old.items() if k in ("seconds", "train_seconds", "steps_per_s", "eval_s",
                                                          "seconds_lower_bound") and k not in info}
            entry["parts"][name] = {**kept, **info}
        else:
            entry["parts"][name] = {**old, "last_attempt": {k: info.get(k) for k in ("status", "at", "reason", "error")
                                                            if info.get(k) is not None}}
    runs = [r for r in entry.get("runs", []) if r.get("started") != run.get("started")]
    entry["runs"] = [*runs, run]
    for key in ("overhead_s", "setup_s"):
        if run.get(key) is not None:
            entry[key] = run[key]
    entry["status"], reason = stage_status(entry, RUNNERS[stage])
    if reason:
        entry["reason"] = reason
    else:
        entry.pop("reason", None)


# -- running a stage ---------------------------------------------------------------------------------
class _Blocker(importlib.abc.MetaPathFinder):
    """Makes ``import NAME`` fail as on the GPU machine for packages a stage does not carry."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked: the GPU machine lacks it)")
        return None


PROCESS_STARTED = time.time()  # the stage's own overhead (imports) counts from here
_ALARM = {"fired": False}


def select_parts(args: argparse.Namespace, runner: Runner, toy: bool) -> list[str]:
    """``--parts``, else every part with ``--full``/``--all``, else those the ledger says are owed;
    widened to whole groups (a group runs in one call), in the stage's order."""
    if args.parts:
        asked = [p.strip() for p in args.parts.split(",") if p.strip()]
        unknown = [p for p in asked if p not in runner.parts]
        if unknown:
            raise BadInput(f"unknown part(s) {', '.join(unknown)} of {runner.name}; its parts are "
                           f"{', '.join(runner.parts)}")
    elif args.full or args.all:
        asked = list(runner.parts)
    else:
        entry = load_ledger(ledger_path(args, toy))["stages"][runner.name]
        asked = owed_parts(entry, runner)
        if not asked:
            raise BadInput(f"{runner.name}: nothing is owed (the ledger says done or failed); pass --all to run it "
                           "again, or `reset` it")
    chosen = {p for g in runner.groups() if set(g) & set(asked) for p in g}
    return [p for p in runner.parts if p in chosen]


def cmd_run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from polyglot_groc.model.device import device_name
    from polyglot_groc.training.interrupts import Terminated, stop_signals

    stage = stage_of(args.stage)
    runner = RUNNERS[stage.name]
    toy = bool(args.dry_run)
    cuda = torch.cuda.is_available()
    if not toy and not cuda:
        raise BadInput(f"stage {stage.name} needs CUDA and torch.cuda.is_available() is False here; "
                       f"use `run {stage.name} --dry-run` for the CPU toy run")
    parts = select_parts(args, runner, toy)
    if args.block_missing:
        sys.meta_path.insert(0, _Blocker({mod for pkg, mod in GPU_LACKS.items() if pkg not in stage.packages}))
    missing = [pkg for pkg in stage.packages if importlib.util.find_spec(GPU_LACKS[pkg]) is None]
    if missing:
        raise BadInput(f"{', '.join(missing)} not importable: carry the wheels (`plan` puts them in "
                       f".campaign/{CARRY_NAME}/whl and its command installs them)")
    data = stage_data(args, stage, toy) if stage.slices else toy_root(args, toy) / "data"
    out = Path(args.out) if args.out else REPO / "bench_out" / "gpu_campaign"
    work = Path(args.work) if args.work else toy_root(args, toy) / "work" / stage.name
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["POLYGLOT_GROC_DATA"] = str(data)
    os.environ["POLYGLOT_GROC_CACHE"] = str(work / "cache")
    os.environ["POLYGLOT_GROC_WN_DIR"] = str(work / "wn")
    now = time.time()
    if args.deadline is not None:
        deadline: float | None = float(args.deadline)
    elif args.minutes is not None:
        deadline = now + 60 * args.minutes
    else:
        deadline = None if (args.full or toy) else now + 60 * DEFAULT_RUN_MINUTES
    device = "cpu" if toy else "cuda"
    header = {"stage": stage.name, "title": stage.title, "campaign": {
        "dry_run": toy, "device": device_name(torch.device(device)),
        "cuda_device_name": torch.cuda.get_device_name(0) if cuda and not toy else None,
        "torch": torch.__version__, "started": _iso(PROCESS_STARTED), "updated": None, "finished": None,
        "status": "running", "deadline": _iso(deadline) if deadline is not None else None,
        "deadline_epoch": deadline, "minutes_budget": args.minutes, "full_length": bool(args.full),
        "parts_asked": parts, "command": shlex.join(["python3", "benchmarks/gpu_campaign.py", *args.argv]),
        "data": str(data), "files": [f"{stage.name}.json"], "notes": []}}
    record = StageRecord(out / f"{stage.name}.json", header, parts)
    ledger = load_ledger(ledger_path(args, toy))["stages"]
    ctx = Ctx(stage=stage, toy=toy, full=bool(args.full), device=device, data=data, work=work, out=out,
              deadline=deadline, steps=args.steps, threads=args.threads or (1 if toy else 12),
              measured=ledger[stage.name], ledger=ledger, record=record, slices=load_slices(data).get("slices", {}))
    record.ctx = ctx
    record.write()  # from here on a kill leaves this JSON (every part owed, or what is done)
    c = record.obj["campaign"]
    order = [g for g in runner.groups() if set(g) <= set(parts)]
    try:
        with stop_signals(), deadline_alarm(deadline):
            try:
                started = time.monotonic()
                runner.setup(ctx, parts)
                record.obj["timings"]["setup_s"] = round(time.monotonic() - started, 1)
                started = time.monotonic()
                try:
                    runner.run(ctx, order)
                finally:
                    record.obj["timings"]["run_s"] = round(time.monotonic() - started, 1)
            except (KeyboardInterrupt, Terminated) as exc:
                signum = exc.args[0] if isinstance(exc, Terminated) and exc.args else None
                cause = ("the deadline (SIGALRM, past its grace)" if _ALARM["fired"] or signum == signal.SIGALRM
                         else "SIGINT" if not isinstance(exc, Terminated) and getattr(exc, "signal", "") != "SIGTERM"
                         else "SIGTERM")
                c["stopped_by"] = cause
                for part in record.running():
                    record.set(part, "interrupted", reason=f"stopped by {cause}")
            except Exception as exc:  # setup, or a stage's own loop: the parts done so far are kept
                c["error"] = f"{type(exc).__name__}: {exc}"
                c["traceback"] = traceback.format_exc()[-4000:]
                for part in record.running():
                    record.set(part, "failed", error=c["error"])
    finally:
        # overhead: the process's seconds outside its parts (start, imports, setup): a stage's own cost
        timings = record.obj["timings"]
        process_s = time.time() - PROCESS_STARTED
        timings.update(process_s=round(process_s, 1), overhead_s=round(process_s - timings.get("run_s", 0.0), 1))
        record.write(final=True)
    if not args.json_only:  # figures from the JSON (a window leaves them to `record`: 8 files come back)
        try:
            ctx.files.extend(runner.render(record.obj, out))
            record.write(final=True)
        except Exception as exc:  # a figure: the numbers are in the JSON already
            ctx.notes.append(f"render: {type(exc).__name__}: {exc}")
    return {"stage": stage.name, "status": c["status"], "out": str(out / f"{stage.name}.json"),
            "parts": {p: e["status"] for p, e in record.obj["parts"].items()}, "wall_seconds": c["wall_seconds"],
            "deadline": c["deadline"], **({"error": c["error"]} if c.get("error") else {})}


DEFAULT_RUN_MINUTES = 8.5  # `run STAGE` with neither --deadline, --minutes nor --full


# -- record: file what came back ---------------------------------------------------------------------
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


def _log_time(line: str) -> float | None:
    m = _LOG_TIME.match(line)
    if not m:
        return None
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.UTC)
    return t.timestamp() + int(m.group(2)) / 1000


def thesis_log_figures(text: str) -> dict[str, Any]:
    """What a thesis-align log says of each sub-run (the stage wrote no JSON before it ended): per
    trained model its validations, steps, size and seconds; per alignment how far it got."""
    runs: dict[str, dict[str, Any]] = {}
    aligns: dict[str, dict[str, Any]] = {}
    current: tuple[str, str] | None = None  # ("run", name) | ("align", tgt)
    last_t: float | None = None
    first_t: float | None = None
    run_re = re.compile(r"=== (\S+) \(target (\w+), (\S+) \(([^)]*)\)\): (\d+) steps")
    info_re = re.compile(r"\[(\S+)\] (\d+) steps, ([\d,]+) parameters, vocabulary ([\d,]+), (\d+) steps/epoch")
    valid_re = re.compile(r"\[(\S+)\] step (\d+): valid ppl (.*)$")
    tok_re = re.compile(r"\[(\S+)\] step \d+ \(\w+\) loss [\d.]+, (\d+) tok/s")
    cap_re = re.compile(r"--max-minutes (\S+)")
    cap = None

    def close(at: float | None) -> None:
        if current is None or at is None:
            return
        target = runs[current[1]] if current[0] == "run" else aligns[current[1]]
        target["seconds"] = round(at - target["_start"], 1)

    for line in text.splitlines():
        t = _log_time(line)
        if line.startswith("[gpu_campaign]"):
            close(last_t)
            if (m := cap_re.search(line)) and "polyglot_table" in line:
                cap = float(m.group(1))
            if "align_polyglot" in line and (m := re.search(r"--tgt (\w+)", line)):
                current = ("align", m.group(1))
                aligns[m.group(1)] = {"_start": last_t, "models": [], "refinements": 0}
            else:
                current = None
            continue
        if t is None:
            continue
        first_t = first_t if first_t is not None else t
        last_t = t
        if m := run_re.search(line):
            close(t)
            current = ("run", m.group(1))
            runs[m.group(1)] = {"_start": t, "kind": m.group(3), "target": m.group(2), "steps_asked": int(m.group(5)),
                                "cap_minutes": cap, "validations": []}
        elif (m := info_re.search(line)) and m.group(1) in runs:
            runs[m.group(1)].update(params=int(m.group(3).replace(",", "")), vocab=int(m.group(4).replace(",", "")),
                                    steps_per_epoch=int(m.group(5)), _train_start=t)
        elif (m := valid_re.search(line)) and m.group(1) in runs:
            ppl = {k: float(v) for k, v in (x.split() for x in m.group(3).split(", "))}
            r = runs[m.group(1)]
            r["validations"].append({"step": int(m.group(2)), "valid_perplexity": ppl})
            r["steps"] = int(m.group(2))
            if "_train_start" in r:
                r["train_seconds"] = round(t - r["_train_start"], 1)
        elif (m := tok_re.search(line)) and m.group(1) in runs:
            runs[m.group(1)]["tokens_per_s"] = int(m.group(2))
        elif current is not None and current[0] == "align":
            if m := re.search(r"align_polyglot === (\w[\w-]*):", line):
                aligns[current[1]]["models"].append(m.group(1))
            elif re.search(r"eval\.align iteration \d+: procrustes", line):
                aligns[current[1]]["refinements"] += 1
    close(last_t)
    for d in (*runs.values(), *aligns.values()):
        for k in [k for k in d if k.startswith("_")]:
            del d[k]
    return {"first": _iso(first_t) if first_t else None, "last": _iso(last_t) if last_t else None,
            "runs": runs, "alignments": aligns}


def result_from_log(stage: str, log: Path, siblings: Sequence[dict[str, Any]], reason: str) -> dict[str, Any]:
    """A stage JSON for a run that left only its log (killed before it wrote one: the 2026-11-27
    thesis-align), with the log's figures, so the ledger can say why it failed and what it measured.
    The device is taken from the other stage JSONs of the same call (``siblings``)."""
    if stage != "thesis-align":
        raise BadInput(f"{log.name}: a log without {stage}.json can be filed for thesis-align only")
    if not siblings:
        raise BadInput(f"{log.name}: no stage JSON of the same call beside it, so the device that ran it is unknown")
    figures = thesis_log_figures(log.read_text(encoding="utf-8", errors="replace"))
    parts: dict[str, Any] = {}
    for r in figures["runs"].values():
        pair = f"en-{r['target']}.{r['kind']}"
        parts[pair] = {"status": "killed", "reason": "the stage was killed before this model's test perplexity was "
                                                      "written anywhere; its log keeps the validations",
                       **{k: r[k] for k in ("seconds", "train_seconds") if k in r},
                       "softmax": "full", "cap_minutes": r.get("cap_minutes"),
                       "steps_per_s": round(r["steps"] / r["train_seconds"], 2) if r.get("train_seconds") else None}
    for tgt, a in figures["alignments"].items():
        parts[f"en-{tgt}.align"] = {"status": "killed", "seconds_lower_bound": a.get("seconds"),
                                    "reason": f"killed after {a.get('seconds')} s: models started "
                                              f"{', '.join(a['models']) or 'none'}, {a['refinements']} refinement(s)"}
    for part in RUNNERS[stage].parts:
        parts.setdefault(part, {"status": "owed", "reason": "not reached before the kill"})
    sib = siblings[0]["campaign"]
    return {"stage": stage, "title": STAGES[stage].title, "campaign": {
        "dry_run": bool(sib["dry_run"]), "device": sib["device"], "cuda_device_name": sib.get("cuda_device_name"),
        "torch": sib.get("torch"), "started": figures["first"], "updated": figures["last"], "finished": None,
        "status": "killed", "reason": reason, "synthesized_by": f"gpu_campaign.py record, from {log.name}",
        "files": [f"{stage}.json", log.name]},
        "parts": parts, "timings": {}, "summary": {"ok": False, "error": reason},
        "invocations": [], "results": {"log_figures": figures}}


def legacy_parts(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Parts of a stage JSON written before stages had parts (2026-11-27): cuda-tests' one pytest
    run; throughput's configurations, those skipped for time owed."""
    stage, summary, inv = result["stage"], result["summary"], result.get("invocations", [])
    if stage == "throughput":
        parts: dict[str, dict[str, Any]] = {}
        timed = iter(inv)
        for label, conf in summary.get("configs", {}).items():
            name = label.replace(" ", "-")
            if "skipped" in conf:
                parts[name] = {"status": "skipped", "reason": conf["skipped"]}
            else:
                parts[name] = {"status": "done", "seconds": next(timed, {"seconds": None})["seconds"]}
        return parts
    status = "done" if summary.get("ok", True) else "failed"
    seconds = sum(i.get("seconds", 0.0) for i in inv) or result["campaign"].get("wall_seconds")
    return {p: {"status": status, "seconds": seconds, **({"error": summary.get("error")} if status == "failed" else {})}
            for p in RUNNERS[stage].parts}


def _json_objects(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Stage JSONs in ``folder`` and its subfolders (``$OUT/<file>`` flattened, or ``$OUT/<dir>/<file>``)."""
    found = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*/*.json")]):
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(obj, dict) and "campaign" in obj and obj.get("stage") in STAGES:
            found.append((path, obj))
    return found


def _stage_of_file(name: str) -> str | None:
    return max((s for s in STAGES if name.startswith(s)), key=len, default=None)


def _file_as(dst_dir: Path, name: str, src: Path, suffix: str) -> Path:
    """``dst_dir/gpu_campaign_<name>``, or with ``_<suffix>`` where another run's file holds that name."""
    dst = dst_dir / f"gpu_campaign_{name}"
    if dst.is_file() and dst.read_bytes() != src.read_bytes():
        stem, dot, ext = name.partition(".")
        dst = dst_dir / f"gpu_campaign_{stem}_{suffix}{dot}{ext}"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def cmd_record(args: argparse.Namespace) -> dict[str, Any]:
    """File a device call's output folder (``files_at``): every stage JSON (a partial one too),
    the files it names, its log, and for a stage that left only a log, a JSON made from the log;
    the ledger marks each part."""
    folder = Path(args.folder)
    toy = bool(args.dry_run)
    if not folder.is_dir():
        raise BadInput(f"{folder} is not a folder; pass the device call's files_at")
    objects = _json_objects(folder)
    logs = [p for p in sorted([*folder.glob("*.log"), *folder.glob("*/*.log")])]
    results: list[tuple[Path, dict[str, Any], list[Path]]] = []
    with_json = {obj["stage"] for _, obj in objects}
    for path, obj in objects:
        extra = [p for p in logs if _stage_of_file(p.name) == obj["stage"]]
        results.append((path, obj, extra))
    for log in logs:
        stage = _stage_of_file(log.name)
        if stage and stage not in with_json:
            reason = args.reason or "killed before it wrote its JSON (only its log came back)"
            obj = result_from_log(stage, log, [o for _, o in objects], reason)
            results.append((folder / f"{stage}.json", obj, [log]))
    if not results:
        raise BadInput(f"{folder} holds no gpu_campaign stage result (<stage>.json or <stage>*.log)")
    for _, obj, _ in results:  # every check before anything is copied
        c = obj["campaign"]
        if toy and not c["dry_run"]:
            raise BadInput(f"{obj['stage']}: a GPU run; record it without --dry-run")
        if not toy and (c["dry_run"] or not str(c["device"]).startswith("cuda") or not c.get("cuda_device_name")):
            raise BadInput(f"{obj['stage']}: a run on {c['device']} (dry run: {c['dry_run']}) cannot mark a GPU stage "
                           "done; only a run on CUDA can (a dry run: record --dry-run)")
    path_l = ledger_path(args, toy)
    ledger = load_ledger(path_l)
    recorded = []
    window_logs = [p for p in logs if p.name.startswith("window")]
    for src, obj, extra in results:
        stage, c = obj["stage"], obj["campaign"]
        when = c.get("finished") or c.get("updated") or c.get("started") or _now()
        day, suffix = when[:10], when[11:19].replace(":", "")
        dst_dir = results_dir(args, toy) / day
        files = []
        if src.is_file():
            files.append(_file_as(dst_dir, f"{stage}.json", src, suffix))
        else:  # made from its log
            files.append(dst_dir / f"gpu_campaign_{stage}.json")
            write_json(files[-1], obj)
        for name in c.get("files", [])[1:]:
            path = src.parent / name
            if path.is_file() and path not in extra:
                files.append(_file_as(dst_dir, name, path, suffix))
        files += [_file_as(dst_dir, p.name, p, suffix) for p in extra]
        if (folder / "README.md").is_file():
            files.append(_file_as(dst_dir, "README.md", folder / "README.md", suffix))
        have = {f.name for f in files}
        if "parts" in obj:  # figures drawn here from the JSON (a window brings back JSON only)
            drawn = RUNNERS[stage].render(obj, dst_dir, prefix="gpu_campaign_")
            files += [dst_dir / n for n in drawn if n not in have]
        names = [str(f.relative_to(REPO)) if f.is_relative_to(REPO) else str(f) for f in files]
        parts = obj["parts"] if "parts" in obj else legacy_parts(obj)
        status = c.get("status") or ("complete" if all(p["status"] == "done" for p in parts.values()) else "partial")
        if status == "running":  # the file of a process that is gone: killed (SIGKILL, the call's limit)
            status = "killed"
            parts = {p: {**e, "status": "killed"} if e["status"] == "running" else e for p, e in parts.items()}
        for info in parts.values():
            info["file"] = names[0]
            if info.get("status") == "done":
                info.setdefault("at", when)
                info["device"] = c.get("cuda_device_name") or c["device"]
        parts_s = sum(e.get("seconds") or 0.0 for e in parts.values() if e.get("status") == "done")
        timings = obj.get("timings", {})
        overhead = timings.get("overhead_s")
        if overhead is None and c.get("wall_seconds") and status != "killed":
            # 2026-11-27's stages imported the wordnet on the GPU; `prepare` does that now
            imported = sum(float(m.group(1)) for n in c.get("notes", [])
                           if (m := re.search(r"^wordnet .* imported into .* in ([\d.]+) s", n)))
            overhead = round(max(c["wall_seconds"] - parts_s - imported, 0.0), 1)
        run = {"started": c.get("started"), "finished": c.get("finished") or c.get("updated"), "status": status,
               "reason": c.get("reason") or c.get("error") or (f"stopped by {c['stopped_by']}"
                                                                if c.get("stopped_by") else None),
               "device": c.get("cuda_device_name") or c["device"], "torch": c.get("torch"),
               "wall_seconds": c.get("wall_seconds"), "overhead_s": overhead, "setup_s": timings.get("setup_s"),
               "command": c.get("command"), "files": names, "parts": {p: e["status"] for p, e in parts.items()}}
        merge_run(ledger, stage, {k: v for k, v in run.items() if v is not None}, parts)
        recorded.append({"stage": stage, "run_status": status, "stage_status": ledger["stages"][stage]["status"],
                         "parts": run["parts"], "files": names})
    for log in window_logs:
        _file_as(results_dir(args, toy) / (recorded[0]["files"][0].split("/")[-2] if recorded else _now()[:10]),
                 log.name, log, _now()[11:19].replace(":", ""))
    save_ledger(path_l, ledger)
    return {"ledger": str(path_l), "recorded": recorded,
            "owed": {s: owed_parts(e, RUNNERS[s]) for s, e in ledger["stages"].items() if owed_parts(e, RUNNERS[s])}}


# -- plan: one window ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Planned:
    stage: Stage
    parts: list[str]
    budget_s: float
    estimates: dict[str, float]
    overhead_s: float


def plan_window(ledger: dict[str, Any], toy: bool, avail_s: float,
                only: Sequence[str] = ()) -> tuple[list[Planned], dict[str, Any]]:
    """The owed work that fits ``avail_s`` seconds, in priority order: a fixed-cost stage takes the
    groups of parts whose estimates fit (a group with any owed part is redone whole); an elastic
    stage (training to a time cap) takes the rest of the window if at least its minimum is left."""
    chosen: list[Planned] = []
    deferred: dict[str, Any] = {}
    for name, stage in STAGES.items():
        runner, entry = RUNNERS[name], ledger["stages"][name]
        owed = owed_parts(entry, runner)
        if not owed or (only and name not in only):
            continue
        groups = [g for g in runner.groups() if set(g) & set(owed)]
        overhead = runner.overhead_s(entry, toy)
        est = {p: round(runner.estimate(p, entry["parts"].get(p, {}), toy), 1) for g in groups for p in g}
        if runner.elastic:
            need = overhead + runner.min_s(toy)
            if avail_s >= need:
                parts = [p for g in groups for p in g]
                take = min(avail_s, overhead + runner.max_s(toy))
                chosen.append(Planned(stage, parts, take, {p: est[p] for p in parts}, overhead))
                avail_s -= take
            else:
                deferred[name] = {"parts": owed, "why": f"needs at least {need:.0f} s, {max(avail_s, 0):.0f} s left"}
            continue
        picked: list[str] = []
        used = overhead
        for g in groups:
            cost = sum(est[p] for p in g)
            if used + cost <= avail_s:
                picked += g
                used += cost
        if picked:
            chosen.append(Planned(stage, picked, used, {p: est[p] for p in picked}, overhead))
            avail_s -= used
        rest = [p for p in owed if p not in picked]
        if rest:
            deferred[name] = {"parts": rest, "why": f"out of this window ({max(avail_s, 0):.0f} s left; estimates "
                                                    f"{', '.join(f'{p} {est[p]:.0f} s' for p in rest if p in est)})"}
    return chosen, deferred


def forecast_windows(ledger: dict[str, Any], toy: bool, avail_s: float, first: Sequence[str],
                     limit: int = 12) -> list[dict[str, list[str]]]:
    """The windows after this one that the owed work needs, by today's estimates (each window
    planned as ``plan`` would once the one before it is done; carry and file limits aside)."""
    sim = json.loads(json.dumps(ledger))
    windows: list[dict[str, list[str]]] = []
    chosen, _ = plan_window(sim, toy, avail_s, first)
    for _ in range(limit + 1):
        for p in chosen:
            for part in p.parts:
                sim["stages"][p.stage.name]["parts"][part] = {**sim["stages"][p.stage.name]["parts"].get(part, {}),
                                                              "status": "done"}
        if windows or chosen:
            windows.append({p.stage.name: p.parts for p in chosen})
        chosen, _ = plan_window(sim, toy, avail_s)
        if not chosen:
            break
    return windows[1:]


def assemble_carry(args: argparse.Namespace, toy: bool, stages: Sequence[Stage]) -> dict[str, Any]:
    """``.campaign/carry`` (``toy/carry`` for a dry run): exactly the data slices and wheels of
    ``stages``, hard-linked from what ``prepare`` made; returns sizes in MiB."""
    root = toy_root(args, toy)
    carry = root / CARRY_NAME
    if carry.exists():
        shutil.rmtree(carry)
    src = data_dir(args, toy)
    info = load_slices(src)
    need = slice_union([s for s in stages if s.slices])
    missing = [k for k in need if k not in info.get("slices", {})]
    missing += [f"{k}:{lang}" for k, langs in need.items() if k.startswith("corpora")
                for lang in langs if lang not in info.get("slices", {}).get(k, {}).get("langs", {})]
    if missing:
        flag = " --toy" if toy else ""
        raise BadInput(f"the window needs data not prepared ({', '.join(missing)}): run `python benchmarks/"
                       f"gpu_campaign.py prepare {' '.join(s.name for s in stages)}{flag}` first")

    def link(a: Path, b: Path) -> None:
        b.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(a, b)
        except OSError:
            shutil.copyfile(a, b)

    slices: dict[str, Any] = {}
    for key, langs in need.items():
        entry = dict(info["slices"][key])
        if key.startswith("corpora"):
            entry["langs"] = {lang: v for lang, v in entry["langs"].items() if lang in langs}
        for rel in slice_files(src, key, entry, langs):
            link(src / rel, carry / "data" / rel)
        slices[key] = entry
    if need:
        write_json(carry / "data" / "slices.json", {**info, "slices": slices, "carried_for": [s.name for s in stages]})
    wheels: dict[str, Path] = {}
    if not toy:
        for stage in stages:
            if not stage.packages:
                continue
            folder = wheel_dir(args, stage)
            plan = wheel_plan(stage)
            have = {_wheel_project(p): p for p in folder.glob("*.whl")} if folder.is_dir() else {}
            lacking = [n for n in plan if n not in have]
            if lacking:
                raise BadInput(f"{stage.name} needs wheels not downloaded ({', '.join(lacking)}): run `python "
                               f"benchmarks/gpu_campaign.py prepare {stage.name} --wheels` on a machine with PyPI")
            for p in have.values():
                wheels.setdefault(p.name, p)
        for name, p in wheels.items():
            link(p, carry / "whl" / name)
    data_mib = tree_mib(carry / "data")
    whl_mib = tree_mib(carry / "whl")
    return {"path": str(carry), "data": round(data_mib, 2), "wheels": round(whl_mib, 2),
            "carry": round(data_mib + whl_mib, 2), "n_wheels": len(wheels)}


def window_command(chosen: Sequence[Planned], deadline_after: int, toy: bool, wheels: bool) -> str:
    """The one shell command of a window: the deadline D first (the install's time counts), the
    wheels, then each stage with its budget and its deadline (D less the budgets after it); stderr
    to $OUT/window.log, each stage's one-line JSON to stdout (the tool's output_tail)."""
    py = shlex.quote(sys.executable) if toy else "python3"
    steps = ["export PYTHONPATH=$PWD PYTHONUNBUFFERED=1", f"D=$(($(date +%s)+{deadline_after}))"]
    if wheels:
        steps.append(f"{py} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "
                     f".campaign/{CARRY_NAME}/whl/*.whl >>$OUT/window.log 2>&1 && export PYTHONPATH=/tmp/site:$PWD")
    steps.append(f'G="{py} benchmarks/gpu_campaign.py run"')
    later = [sum(p.budget_s for p in chosen[i + 1:]) for i in range(len(chosen))]
    for p, after in zip(chosen, later, strict=True):
        dl = "$D" if after < 1 else f"$((D-{int(math.ceil(after))}))"
        flags = " --json-only" + (" --dry-run --block-missing" if toy else "")
        steps.append(f"$G {p.stage.name} --deadline {dl} --minutes {p.budget_s / 60:.2f} --parts {','.join(p.parts)} "
                     f"--out $OUT{flags} 2>>$OUT/window.log")
    return "; ".join(steps)


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    toy = bool(args.dry_run)
    window = args.minutes * 60 - MACHINE_START_S - IDLE_AFTER_S
    call_s = int(min(window, CALL_MAX_S))
    deadline_after = int(call_s - CALL_MARGIN_S)
    if deadline_after < 60:
        raise BadInput(f"--minutes {args.minutes:g} leaves {max(call_s, 0)} s for the call after the machine's start "
                       f"({MACHINE_START_S:.0f} s) and its idle time ({IDLE_AFTER_S:.0f} s); give at least "
                       f"{(MACHINE_START_S + IDLE_AFTER_S + CALL_MARGIN_S + 60) / 60:.1f}")
    ledger = load_ledger(ledger_path(args, toy))
    only = [stage_of(s).name for s in args.stages]
    tree = working_tree_mib()
    chosen: list[Planned] = []
    deferred: dict[str, Any] = {}
    install = INSTALL_S
    dropped: dict[str, Any] = {}
    while True:  # drop the last stage while the carry or $OUT's file count would not fit
        chosen, deferred = plan_window(ledger, toy, deadline_after - install,
                                       [s for s in (only or STAGES) if s not in dropped])
        if not chosen:
            break
        needs_wheels = not toy and any(p.stage.packages for p in chosen)
        install = INSTALL_S if needs_wheels else 0.0
        carry = assemble_carry(args, toy, [p.stage for p in chosen])
        files = ["window.log", *(f"{p.stage.name}.json" for p in chosen)]
        total = tree + carry["carry"]
        if total <= CARRY_LIMIT_MIB and len(files) <= OUT_MAX_FILES:
            break
        why = (f"carry {total:.1f} MiB > {CARRY_LIMIT_MIB:g}" if total > CARRY_LIMIT_MIB
               else f"{len(files)} files from $OUT > {OUT_MAX_FILES}")
        dropped[chosen[-1].stage.name] = {"parts": chosen[-1].parts, "why": f"not with the stages before it: {why}"}
    deferred.update(dropped)
    waiting = {s: failed_parts(e, RUNNERS[s]) for s, e in ledger["stages"].items() if failed_parts(e, RUNNERS[s])}
    if not chosen:
        why = f" ({json.dumps(deferred)})" if deferred else ": every part is done" + (
            f" or waiting for `reset` ({waiting})" if waiting else "")
        raise BadInput("nothing owed fits a window" + why)
    # Re-plan with the install time of the chosen stages (it was assumed above).
    chosen, again = plan_window(ledger, toy, deadline_after - install, [p.stage.name for p in chosen])
    deferred.update({k: v for k, v in again.items() if k not in deferred})
    carry = assemble_carry(args, toy, [p.stage for p in chosen])
    command = window_command(chosen, deadline_after, toy, carry["n_wheels"] > 0)
    if len(command) > COMMAND_MAX_CHARS:
        raise BadInput(f"the window's command is {len(command)} characters (the tool takes {COMMAND_MAX_CHARS}); "
                       "plan fewer stages with `plan --minutes N STAGE...`")
    files = ["window.log", *(f"{p.stage.name}.json" for p in chosen)]
    forecast = forecast_windows(ledger, toy, deadline_after - INSTALL_S, [p.stage.name for p in chosen])
    out = {
        "dry_run": toy,
        "window": {"minutes": args.minutes, "machine_start_s": MACHINE_START_S, "idle_after_s": IDLE_AFTER_S,
                   "call_s": call_s, "deadline_after_s": deadline_after, "install_s": install,
                   "margin_s": CALL_MARGIN_S},
        "timeout_s": call_s,
        "stages": [{"stage": p.stage.name, "parts": p.parts, "budget_s": round(p.budget_s, 1),
                    "overhead_s": round(p.overhead_s, 1), "estimates_s": p.estimates,
                    "elastic": RUNNERS[p.stage.name].elastic} for p in chosen],
        "deferred": deferred, "waiting_for_reset": waiting,
        "command": command, "command_chars": len(command),
        "carry": [f".campaign/{CARRY_NAME}"] if not toy else [],
        "carry_mib": {"tree": round(tree, 2), **{k: carry[k] for k in ("data", "wheels", "carry")},
                      "total": round(tree + carry["carry"], 2), "limit": CARRY_LIMIT_MIB},
        "out_files": files,
        "forecast": forecast,
        "then": f"python benchmarks/gpu_campaign.py record{' --dry-run' if toy else ''} FILES_AT",
    }
    return out


# -- the other commands ------------------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> dict[str, Any]:
    toy = bool(args.dry_run)
    ledger = load_ledger(ledger_path(args, toy))
    stages = {}
    for name, entry in ledger["stages"].items():
        runner = RUNNERS[name]
        stages[name] = {"status": entry["status"], **({"reason": entry["reason"]} if entry.get("reason") else {}),
                        "done": [p for p in runner.parts if entry["parts"].get(p, {}).get("status") == "done"],
                        "owed": owed_parts(entry, runner), "failed": failed_parts(entry, runner),
                        "last_run": entry["runs"][-1].get("finished") if entry.get("runs") else None}
    nxt = next((n for n, s in stages.items() if s["owed"]), None)
    return {"ledger": str(ledger_path(args, toy)), "next": nxt, "stages": stages}


def cmd_reset(args: argparse.Namespace) -> dict[str, Any]:
    stage = stage_of(args.stage)
    runner = RUNNERS[stage.name]
    toy = bool(args.dry_run)
    path = ledger_path(args, toy)
    ledger = load_ledger(path)
    entry = ledger["stages"][stage.name]
    parts = [args.part] if args.part else list(runner.parts)
    unknown = [p for p in parts if p not in runner.parts]
    if unknown:
        raise BadInput(f"unknown part {unknown[0]!r} of {stage.name}; its parts are {', '.join(runner.parts)}")
    for p in parts:  # owed again; measured seconds stay (estimates)
        old = entry["parts"].get(p, {})
        entry["parts"][p] = {**{k: v for k, v in old.items() if k in ("seconds", "train_seconds", "steps_per_s",
                                                                      "eval_s", "seconds_lower_bound")},
                             "status": "pending", "reset": _now()}
    entry["status"], reason = stage_status({**entry, "runs": []}, runner)
    entry.pop("reason", None)
    save_ledger(path, ledger)
    return {"stage": stage.name, "status": entry["status"], "owed": owed_parts(entry, runner)}


def cmd_prepare(args: argparse.Namespace) -> dict[str, Any]:
    stages = [stage_of(s) for s in (args.stages or list(STAGES))]
    src = Path(args.data_root or os.environ.get("POLYGLOT_GROC_DATA", ""))
    if not str(src) or not src.is_dir():
        raise BadInput("set POLYGLOT_GROC_DATA (or --data-root) to the shared data folder (../shared/data)")
    toy = bool(args.toy)
    root = toy_root(args, toy)
    info = prepare_data(src, data_dir(args, toy), stages, toy, campaign_dir(args) / "cache")
    report: dict[str, Any] = {"toy": toy, "data": str(data_dir(args, toy)), "slices": info["slices"], "stages": {}}
    tree = working_tree_mib()
    for stage in stages:
        entry: dict[str, Any] = {}
        if args.wheels and not toy:
            entry.update(prepare_wheels(args, stage))
        elif stage.packages:
            entry["wheel_plan"] = wheel_plan(stage)
        need = slice_union([stage])
        data_mib = sum(info["slices"][k]["mib"] for k in need)
        whl_mib = tree_mib(wheel_dir(args, stage)) if stage.packages and not toy else 0.0
        entry["carry_mib"] = {"tree": round(tree, 2), "data": round(data_mib, 2), "wheels": round(whl_mib, 2),
                              "total": round(tree + data_mib + whl_mib, 2), "limit": args.carry_limit_mib}
        if stage.packages and not toy and not args.wheels and not whl_mib:
            entry["note"] = "wheels not downloaded (pass --wheels on a machine that reaches PyPI)"
        report["stages"][stage.name] = entry
    over = {n: e["carry_mib"]["total"] for n, e in report["stages"].items()
            if e["carry_mib"]["total"] > args.carry_limit_mib}
    if over:
        raise BadInput("carry over the device tool's limit: " + ", ".join(
            f"{n} {mib:.3g} MiB > {args.carry_limit_mib:g} MiB" for n, mib in over.items()))
    report["root"] = str(root)
    return report


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign-dir", default=os.environ.get("GPU_CAMPAIGN_DIR"),
                    help="where prepared data, wheels, the carry and work go (default .campaign/ in the repository)")
    ap.add_argument("--ledger", default=os.environ.get("GPU_CAMPAIGN_LEDGER"),
                    help="ledger file (default benchmarks/results/gpu_campaign_ledger.json; a dry run's is "
                         "<campaign-dir>/toy/ledger.json)")
    ap.add_argument("--results", default=os.environ.get("GPU_CAMPAIGN_RESULTS"),
                    help="where record files results (default benchmarks/results/, as <day>/gpu_campaign_<file>)")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="the ledger: per stage, the parts done, owed and failed")
    p.add_argument("--dry-run", action="store_true", help="the dry run's ledger")
    p = sub.add_parser("plan", help="the next window's device command, carry and timeout")
    p.add_argument("stages", nargs="*", help="only these stages (default: every stage with owed parts)")
    p.add_argument("--minutes", type=float, default=12.0,
                   help="device minutes of the window, the machine's start and idle time included (default 12)")
    p.add_argument("--dry-run", action="store_true", help="a command that runs the toy stages here, on CPU")
    p = sub.add_parser("prepare", help="fill .campaign/ with the stages' data (and --wheels)")
    p.add_argument("stages", nargs="*")
    p.add_argument("--toy", action="store_true", help="the dry run's tiny slices (under .campaign/toy/)")
    p.add_argument("--wheels", action="store_true", help="download the missing packages' wheels (needs PyPI)")
    p.add_argument("--data-root", default=None, help="shared data folder (default $POLYGLOT_GROC_DATA)")
    p.add_argument("--carry-limit-mib", type=float, default=CARRY_LIMIT_MIB)
    p = sub.add_parser("run", help="run one stage (its owed parts, or --parts, or --full)")
    p.add_argument("stage")
    p.add_argument("--out", default=os.environ.get("OUT"), help="output folder (default $OUT)")
    p.add_argument("--dry-run", "--toy", dest="dry_run", action="store_true",
                   help="CPU, toy sizes, toy data; never marks the ledger")
    p.add_argument("--deadline", type=float, default=None,
                   help="absolute end, seconds since the epoch (`date +%%s`): the stage starts no part that "
                        "does not fit before it, caps its trainings by it, and stops itself past it")
    p.add_argument("--minutes", type=float, default=None,
                   help=f"the stage's budget (its deadline when --deadline is not given; default "
                        f"{DEFAULT_RUN_MINUTES}, none with --full)")
    p.add_argument("--parts", default=None, help="comma-separated parts (default: those the ledger says are owed)")
    p.add_argument("--all", action="store_true", help="every part, done or not")
    p.add_argument("--full", action="store_true",
                   help="your own CUDA machine: every part at the stage's full length, no deadline")
    p.add_argument("--work", default=None)
    p.add_argument("--steps", type=int, default=None, help="the stage's step budget (default: its own)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--block-missing", action="store_true",
                   help="refuse imports of the packages the GPU machine lacks and the stage does not carry")
    p.add_argument("--json-only", action="store_true",
                   help="write only <stage>.json (a window: `record` draws the figures from it)")
    p = sub.add_parser("record", help="file a device call's output folder; the ledger moves on")
    p.add_argument("folder")
    p.add_argument("--reason", default=None, help="why a stage that left only its log stopped")
    p.add_argument("--dry-run", action="store_true", help="file dry-run results into the dry run's ledger")
    p = sub.add_parser("reset", help="mark a stage's parts (or --part) owed again")
    p.add_argument("stage")
    p.add_argument("--part", default=None)
    p.add_argument("--dry-run", action="store_true", help="the dry run's ledger")
    argv = list(argv)
    if argv[:1] == ["--prepare"]:  # the issue's spelling
        argv[0] = "prepare"
    args = ap.parse_args(argv)
    args.argv = argv
    return args


COMMANDS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "status": cmd_status, "plan": cmd_plan, "prepare": cmd_prepare, "run": cmd_run, "record": cmd_record,
    "reset": cmd_reset,
}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = COMMANDS[args.command](args)
    emit(out, "gpu_campaign", save=False)
    return out


def _exit_code(out: dict[str, Any]) -> int:
    """A stage run's status as the process's exit status (the window's command goes on either way)."""
    return {"interrupted": 143, "failed": 1}.get(str(out.get("status")), 0)


if __name__ == "__main__":
    script_main(lambda: _exit_code(main()))
