"""The data slices every stage reads: prepared on the CPU machine (``prepare``) in the shared data's
layout and carried, then unpacked on the device for the benchmark scripts."""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import io
import json
import lzma
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from benchmarks.campaign.stages import (
    ALIGN_TARGETS,
    BUDGETS,
    CARRY_NAME,
    TOY_PTB_LINES,
    TOY_WORDNET_SENSES,
    Stage,
    data_dir,
    slice_union,
    toy_root,
)
from benchmarks.common import BadInput
from groc_base.fileio import atomic_write, write_json

if TYPE_CHECKING:
    from benchmarks.campaign.runtime import Ctx


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


def _xz(fin: BinaryIO, fout: BinaryIO) -> None:
    with lzma.open(fout, "wb", preset=6) as packed:
        shutil.copyfileobj(fin, packed, 1 << 20)


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
            with open(Path(tmp) / "wn" / "wn.db", "rb") as fin:
                atomic_write(built / "wn.db.xz", functools.partial(_xz, fin))
            db_mib = (Path(tmp) / "wn" / "wn.db").stat().st_size / 2**20
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


# -- on the device: what a stage reads of the carried slices ------------------------------------------
def materialize_corpora(ctx: Ctx, budget: str, langs: Sequence[str], dst: Path) -> Path:
    """The carried (gzipped) corpora of ``budget`` as ``dst/<lang>/{split}.txt`` + ``prepare.json``,
    the layout benchmarks/polyglot_table.py's ``prepare`` finds fresh (nothing is tokenised here)."""
    src = ctx.data / "corpora" / budget
    for lang in langs:
        for split in ("train", "valid", "test"):
            target = dst / lang / f"{split}.txt"
            if target.is_file():
                continue
            with gzip.open(src / lang / f"{split}.txt.gz", "rb") as fin:
                atomic_write(target, functools.partial(shutil.copyfileobj, fin, length=1 << 20))
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
        with lzma.open(ctx.data / info["file"], "rb") as fin:
            atomic_write(db, functools.partial(shutil.copyfileobj, fin, length=1 << 20))
    ctx.notes.append(f"wordnet {info['spec']}: carried database unpacked into {wn_dir} in "
                     f"{time.monotonic() - started:.1f} s (imported on the CPU machine in {info.get('import_s')} s)")
    return str(info["spec"]), wn_dir
