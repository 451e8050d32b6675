"""The ``crossdomain-en`` preset: an offline English stand-in for seed 000's cross-domain data (§5, Table 6).

Source (train) domain: Brown non-fiction genres. *near*: held-out Brown non-fiction documents.
*far*: Brown fiction, Leipzig English Wikipedia (2016 10K+30K samples, deduplicated) and UD
English-EWT web text. Case and punctuation are kept (raw-text, open-vocabulary modelling).

Every domain is written as a one-language corpus directory ``<out>/<domain>/en/{train,valid,test}.txt``,
one sentence per line, tokens separated by spaces. The far domains' train splits are their
finetuning data (the "other half" of the domain). Splits are by document (Brown files, EWT
documents) or sentence (Leipzig: random sentences already), in a fixed hash order, so the
output is deterministic. ``crossdomain.json`` records sizes and the OOV% of each test set
against the source training vocabulary (Table 6).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from groc_base.checks import check_output, option
from groc_base.errors import ConfigError, CorpusError
from groc_base.fileio import atomic_output_dir, atomic_write_bytes
from groc_base.textio import decode_text, iter_lines, read_text

__all__ = ["CROSSDOMAIN_DOMAINS", "prepare_crossdomain_en"]

BROWN_FICTION = frozenset({"fiction", "mystery", "science_fiction", "adventure", "romance", "humor"})
CROSSDOMAIN_DOMAINS = ("source", "near", "far-fiction", "far-wiki", "far-web")
Doc = list[list[str]]  # sentences of tokens


def _order(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _brown(text_root: Path) -> dict[str, list[tuple[str, Doc]]]:
    """Brown documents by kind ('nonfiction' | 'fiction'), tags stripped."""
    path = text_root / "nltk_data" / "brown.zip"
    if not path.is_file():
        raise CorpusError(f"{path} is missing; set POLYGLOT_GROC_DATA to the shared data folder")
    out: dict[str, list[tuple[str, Doc]]] = {"nonfiction": [], "fiction": []}
    with zipfile.ZipFile(path) as z:
        def member(name: str) -> str:
            return decode_text(z.read(name), f"{path}:{name}", error=CorpusError)

        cats = dict(line.split()[:2] for line in member("brown/cats.txt").splitlines() if line.strip())
        for fid, cat in sorted(cats.items()):
            sents = []
            for line in member(f"brown/{fid}").splitlines():
                toks = [t.rsplit("/", 1)[0] for t in line.split()]
                if toks:
                    sents.append(toks)
            out["fiction" if cat in BROWN_FICTION else "nonfiction"].append((fid, sents))
    return out


_TOKEN_RE = re.compile(r"\w+(?:[-'’.]\w+)*|[^\w\s]", re.UNICODE)


def _leipzig_wiki(text_root: Path) -> list[tuple[str, Doc]]:
    """Leipzig English Wikipedia sentences (each its own 'document'), deduplicated, regex-tokenised."""
    seen: set[str] = set()
    docs: list[tuple[str, Doc]] = []
    for name in ("eng_wikipedia_2016_10K-sentences.txt", "eng_wikipedia_2016_30K-sentences.txt"):
        path = text_root / "leipzig" / name
        if not path.is_file():
            raise CorpusError(f"{path} is missing; set POLYGLOT_GROC_DATA to the shared data folder")
        for line in read_text(path, what="corpus file", error=CorpusError).splitlines():
            sent = line.split("\t", 1)[-1].strip()
            if sent and sent not in seen:
                seen.add(sent)
                docs.append((sent, [_TOKEN_RE.findall(sent)]))
    return docs


def _ewt(text_root: Path) -> list[tuple[str, Doc]]:
    """UD English-EWT documents (web: blogs, reviews, email, answers); surface tokens (no multiword lines)."""
    docs: list[tuple[str, Doc]] = []
    for split in ("train", "dev", "test"):
        path = text_root / "ud" / f"en_ewt-ud-{split}.conllu.gz"
        if not path.is_file():
            raise CorpusError(f"{path} is missing; set POLYGLOT_GROC_DATA to the shared data folder")
        doc_id = f"{split}-0"
        sents: Doc = []
        cur: list[str] = []
        for line in iter_lines(path, what="treebank", error=CorpusError):
            if line.startswith("# newdoc id"):
                if sents:
                    docs.append((doc_id, sents))
                doc_id, sents = line.split("=", 1)[1].strip(), []
            elif not line.strip():
                if cur:
                    sents.append(cur)
                cur = []
            elif not line.startswith("#"):
                cols = line.split("\t")
                if "-" not in cols[0] and "." not in cols[0]:
                    cur.append(cols[1])
        if sents:
            docs.append((doc_id, sents))
    return docs


def _n(docs: Iterable[tuple[str, Doc]]) -> int:
    return sum(len(s) for _, d in docs for s in d)


def _take(docs: Sequence[tuple[str, Doc]], tokens: int) -> tuple[list[tuple[str, Doc]], list[tuple[str, Doc]]]:
    """Documents in order until ``tokens`` is reached; returns (taken, rest)."""
    acc = 0
    for i, (_, d) in enumerate(docs):
        if acc >= tokens:
            return list(docs[:i]), list(docs[i:])
        acc += sum(map(len, d))
    return list(docs), []


def _write(dirpath: Path, splits: dict[str, list[tuple[str, Doc]]]) -> dict[str, int]:
    sizes = {}
    for split, docs in splits.items():
        lines = [" ".join(s) for _, d in docs for s in d]
        if not lines:
            raise CorpusError(f"the {dirpath.parent.name} {split} split came out empty; lower the token budgets")
        atomic_write_bytes(dirpath / f"{split}.txt", ("\n".join(lines) + "\n").encode("utf-8"))
        sizes[split] = _n(docs)
    return sizes


def prepare_crossdomain_en(data_root: Path, out: Path, train_tokens: int = 1_000_000, eval_tokens: int = 20_000,
                           finetune_tokens: int = 250_000, *, overwrite: bool = False) -> dict[str, Any]:
    """Write the five domain corpora under ``out`` and return (and save) the manifest.

    All or none: the corpora are built in a temporary folder renamed to ``out`` at the end
    (:func:`groc_base.fileio.atomic_output_dir`); a non-empty ``out`` needs ``overwrite``.
    """
    check_output(out, overwrite, directory=True)
    if min(train_tokens, eval_tokens, finetune_tokens) < 100:
        raise ConfigError(f"token budgets must be at least 100; e.g. {option('train_tokens', 1000000)} "
                          f"{option('eval_tokens', 20000)}")
    text_root = Path(data_root) / "text"
    if not text_root.is_dir():
        raise CorpusError(f"{text_root} does not exist; pass {option('data_root')} or set POLYGLOT_GROC_DATA")
    brown = _brown(text_root)
    pools = {
        "nonfiction": sorted(brown["nonfiction"], key=lambda d: _order("nf:" + d[0])),
        "far-fiction": sorted(brown["fiction"], key=lambda d: _order("fi:" + d[0])),
        "far-wiki": sorted(_leipzig_wiki(text_root), key=lambda d: _order("wk:" + d[0])),
        "far-web": sorted(_ewt(text_root), key=lambda d: _order("web:" + d[0])),
    }
    layout: dict[str, dict[str, list[tuple[str, Doc]]]] = {}
    # Source/near: near's held-out documents are taken first so the source gets the rest.
    nf = pools["nonfiction"]
    near_test, nf = _take(nf, eval_tokens)
    near_valid, nf = _take(nf, eval_tokens)
    near_train, nf = _take(nf, eval_tokens)  # small; near is a zero-resource target
    src_valid, nf = _take(nf, eval_tokens)
    src_test, nf = _take(nf, eval_tokens)
    src_train, _ = _take(nf, train_tokens)
    layout["source"] = {"train": src_train, "valid": src_valid, "test": src_test}
    layout["near"] = {"train": near_train, "valid": near_valid, "test": near_test}
    for dom in ("far-fiction", "far-wiki", "far-web"):
        docs = pools[dom]
        test, docs = _take(docs, eval_tokens)
        valid, docs = _take(docs, eval_tokens)
        train, _ = _take(docs, finetune_tokens)
        layout[dom] = {"train": train, "valid": valid, "test": test}
    vocab = Counter(t for _, d in src_train for s in d for t in s)
    manifest: dict[str, Any] = {"preset": "crossdomain-en", "train_tokens": train_tokens, "eval_tokens": eval_tokens,
                                "finetune_tokens": finetune_tokens, "source_vocab": len(vocab), "domains": {}}
    with atomic_output_dir(Path(out), overwrite=overwrite) as tmp:
        for dom, splits in layout.items():
            sizes = _write(tmp / dom / "en", splits)
            test_toks = [t for _, d in splits["test"] for s in d for t in s]
            oov = sum(t not in vocab for t in test_toks) / max(len(test_toks), 1)
            manifest["domains"][dom] = {"tokens": sizes, "test_oov_percent": round(100 * oov, 2),
                                        "documents": {k: len(v) for k, v in splits.items()}}
        atomic_write_bytes(tmp / "crossdomain.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return manifest
