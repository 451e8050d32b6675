"""Offline wordnet installation: PWN 3.0 WNDB + OMW tab files + the ILI map -> WN-LMF -> ``wn``.

``wn`` loads only WN-LMF XML and its downloads need the network, so this module converts the
shared data (``$POLYGLOT_GROC_DATA``, see ``shared/README.md``) itself:

* English: Princeton WordNet 3.0 from ``wordnet/pwn-3.0-wndb-lf.tar.xz`` (or an unpacked
  ``wordnet/`` directory), with definitions, examples, irregular forms from ``*.exc`` and the
  synset relations GroC needs (hypernym / hyponym and their instance variants).  Lexicon id
  ``omw-en``.
* Other languages: ``omw/tab/<project>/wn-data-<iso3>.tab`` (lexicon id ``omw-<lang>``), else
  the Wiktionary-derived ``omw/wikt/wn-wikt-<iso3>.tab`` (id ``wikt-<lang>``).  Their synsets
  are the PWN synsets they have lemmas for, linked to ILI ids (``omw/ili-map-pwn30.tab``) so
  ``wn``'s cross-lingual links and our English-gloss fallback work, with definitions where the
  tab file has ``<iso3>:def`` lines and the hyponym/hypernym relations of the linked PWN synsets
  (kept where both ends have lemmas in the language).

Versions are ``3.0+<hash>`` where the hash covers the input files and this converter's format
version: re-importing unchanged data is a no-op, and changed data gets a new specifier, which
invalidates every cache keyed on lexicon specs.  English is always imported with other
languages: it supplies their glosses.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import tarfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from groc_base.checks import option
from groc_base.errors import (
    InputError,
    LexiconDownloadError,
    LexiconError,
    LexiconFormatError,
    LexiconMissingError,
)
from groc_base.fileio import atomic_write, file_digest
from groc_base.textio import decode_text, read_text
from groc_base.wording import agree, counted
from lexicons.protocol import normalize_lang, to_iso3
from lexicons.wn_backend import default_wn_dir, wn_data_dir
from lexicons.wn_install import writing_wordnets

__all__ = [
    "DATA_ENV",
    "download",
    "import_omw",
    "import_tab_file",
    "lexicon_id",
    "read_pwn",
    "split_gloss",
    "write_lmf",
]

logger = logging.getLogger(__name__)

#: Environment variable naming the shared data root (``shared/data``).
DATA_ENV = "POLYGLOT_GROC_DATA"
#: Bumped whenever the produced LMF changes for the same input, so versions change too.
CONVERTER_VERSION = "2"
_PWN_VERSION = "3.0"
_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# WNDB pointer symbols -> WN-LMF synset relation types.  Only the taxonomy: GroC uses synonyms and
# hyponyms, and skipping the other ~20 relation types keeps the import fast.
_POINTERS = {"@": "hypernym", "@i": "instance_hypernym", "~": "hyponym", "~i": "instance_hyponym"}
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


# --------------------------------------------------------------------------------------------
# PWN WNDB
# --------------------------------------------------------------------------------------------


@dataclass
class PwnSynset:
    """One WNDB synset: ``key`` is ``<offset>-<pos>`` with satellites under ``a`` (OMW's keys)."""

    offset: str
    ss_type: str  # n v a s r
    words: list[str]  # data-line order, WNDB spelling (underscores)
    pointers: list[tuple[str, str]]  # (relation type, target key), semantic pointers only
    definition: str
    examples: list[str]

    @property
    def key(self) -> str:
        return f"{self.offset}-{'a' if self.ss_type == 's' else self.ss_type}"


@dataclass
class Pwn:
    """PWN 3.0 parsed from WNDB: synsets by key, sense order per lemma, irregular forms."""

    synsets: dict[str, PwnSynset] = field(default_factory=dict)
    # (lowercase lemma with underscores, pos group) -> synset keys in sense-number order
    index: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    exceptions: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (lemma, pos) -> forms
    # synset key -> SemCor tag count summed over its senses (index.sense); frequency for ordering
    tag_counts: dict[str, int] = field(default_factory=dict)
    # synset key -> best (lowest) sense number it has for any English lemma
    best_rank: dict[str, int] = field(default_factory=dict)

    def sense_order_key(self, key: str) -> tuple[int, int, str]:
        """Most frequent synset first, then the one that is a more primary sense of its lemmas."""
        return (-self.tag_counts.get(key, 0), self.best_rank.get(key, 1 << 30), key)


_QUOTED = re.compile(r'"([^"]*)"')


def split_gloss(gloss: str) -> tuple[str, list[str]]:
    """Split a WNDB gloss into its definition and its quoted examples.

    Parts are separated by ``;`` outside quotes; parts that start with a quote are examples (an
    attribution after the closing quote, ``"..."--Albert Camus``, is dropped with them).  NLTK
    instead deletes every quoted span, which leaves attributions and half sentences in the
    definition (``usually expressed as rather than``).
    """
    parts: list[str] = []
    if gloss.count('"') % 2:  # unbalanced quotes: plain '; ' split
        parts = gloss.split("; ")
    else:
        buf: list[str] = []
        quoted = False
        for ch in gloss:
            if ch == '"':
                quoted = not quoted
            if ch == ";" and not quoted:
                parts.append("".join(buf))
                buf = []
            else:
                buf.append(ch)
        parts.append("".join(buf))
    definitions, examples = [], []
    for part in (p.strip() for p in parts):
        if part.startswith('"'):
            examples.extend(_QUOTED.findall(part) or [part.strip('"')])
        elif part:
            definitions.append(part)
    return "; ".join(definitions), examples


def _parse_data_line(line: str, pos_group: str) -> PwnSynset:
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    offset, ss_type = fields[0], fields[2]
    w_cnt = int(fields[3], 16)
    words = [_ADJ_MARKER.sub("", fields[4 + 2 * i]) for i in range(w_cnt)]
    i = 4 + 2 * w_cnt
    p_cnt = int(fields[i])
    pointers = []
    for j in range(p_cnt):
        symbol, target, target_pos, source_target = fields[i + 1 + 4 * j : i + 5 + 4 * j]
        rel = _POINTERS.get(symbol)
        if rel is not None and source_target == "0000":
            pointers.append((rel, f"{target}-{'a' if target_pos == 's' else target_pos}"))
    definition, examples = split_gloss(gloss)
    return PwnSynset(offset, ss_type, words, pointers, definition, examples)


def _wndb_files(source: Path) -> dict[str, str]:
    """The WNDB text files we need, from a ``.tar.xz`` or a directory holding ``data.noun``."""
    wanted = {f"{kind}.{name}" for name in _POS_FILES.values() for kind in ("data", "index")}
    wanted |= {f"{name}.exc" for name in _POS_FILES.values()} | {"index.sense"}
    files: dict[str, str] = {}
    if source.is_dir():
        base = source / "wordnet" if (source / "wordnet" / "data.noun").is_file() else source
        for name in wanted:
            path = base / name
            if path.is_file():
                files[name] = read_text(path, what="wordnet file")
    elif source.is_file():
        try:
            with tarfile.open(source, "r:*") as tar:
                for member in tar.getmembers():
                    name = member.name.rsplit("/", 1)[-1]
                    if member.isfile() and name in wanted:
                        fh = tar.extractfile(member)
                        if fh is not None:
                            files[name] = decode_text(fh.read(), f"{source}:{member.name}", what="wordnet file")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise InputError(f"cannot read wordnet archive {str(source)!r}: {exc}; re-fetch it") from exc
    missing = sorted(n for n in wanted if n.startswith(("data.", "index.")) and n not in files)
    if missing:
        raise LexiconMissingError(
            f"wordnet source {str(source)!r} lacks {', '.join(missing)}; "
            "point it at pwn-3.0-wndb-lf.tar.xz or an unpacked WNDB 'wordnet/' directory"
        )
    return files


def read_pwn(source: Path | str) -> Pwn:
    """Parse PWN 3.0 WNDB (``data.*``, ``index.*``, ``*.exc``) from an archive or directory."""
    files = _wndb_files(Path(source))
    pwn = Pwn()
    sense_pos = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}
    for line in files.get("index.sense", "").splitlines():
        # sense_key synset_offset sense_number tag_cnt; the pos is the digit after '%'
        fields = line.split()
        if len(fields) == 4 and "%" in fields[0]:
            key = f"{fields[1]}-{sense_pos.get(fields[0].split('%', 1)[1][:1], 'n')}"
            pwn.tag_counts[key] = pwn.tag_counts.get(key, 0) + int(fields[3])
    for pos_group, name in _POS_FILES.items():
        for lineno, line in enumerate(files[f"data.{name}"].splitlines(), 1):
            if not line or line.startswith(" "):
                continue  # licence header lines start with two spaces
            try:
                synset = _parse_data_line(line, pos_group)
            except (IndexError, ValueError) as exc:
                raise InputError(f"data.{name} line {lineno} is not a WNDB data line: {line[:60]!r}") from exc
            pwn.synsets[synset.key] = synset
        for line in files[f"index.{name}"].splitlines():
            if not line or line.startswith(" "):
                continue
            fields = line.split()
            lemma, p_cnt = fields[0], int(fields[3])
            synset_cnt = int(fields[2])
            offsets = fields[6 + p_cnt : 6 + p_cnt + synset_cnt]
            keys = [f"{o}-{pos_group}" for o in offsets]
            pwn.index[(lemma, pos_group)] = keys
            for rank, key in enumerate(keys):
                if rank < pwn.best_rank.get(key, 1 << 30):
                    pwn.best_rank[key] = rank
        for line in files.get(f"{name}.exc", "").splitlines():
            fields = line.split()
            for base in fields[1:]:
                pwn.exceptions.setdefault((base, pos_group), []).append(fields[0])
    return pwn


# --------------------------------------------------------------------------------------------
# OMW tab files and the ILI map
# --------------------------------------------------------------------------------------------


@dataclass
class TabData:
    """Lemmas and definitions of one language, keyed by PWN synset key, in file order."""

    lemmas: dict[str, list[str]] = field(default_factory=dict)
    definitions: dict[str, list[tuple[int, str]]] = field(default_factory=dict)


def read_tab(path: Path, iso3: str) -> TabData:
    """Read an OMW tab file (``offset-pos<TAB>[lang:]lemma|def<TAB>[index<TAB>]text``)."""
    data = TabData()
    text = read_text(path, what="omw tab file")
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 3:
            raise InputError(f"{path.name} line {lineno}: expected 'offset-pos<TAB>label<TAB>value', got {line!r}")
        key, label, value = cols[0].strip(), cols[1].strip(), cols[-1].strip()
        prefix, _, attr = label.rpartition(":")
        if prefix and prefix != iso3:
            continue  # another language's line in a shared file
        if len(key) < 10 or key[8] != "-" or not key[:8].isdigit():
            raise InputError(f"{path.name} line {lineno}: bad synset key {key!r}; expected e.g. 02084071-n")
        key = key[:9] + ("a" if key[9] == "s" else key[9])
        if attr == "lemma" and value:
            lemmas = data.lemmas.setdefault(key, [])
            if value not in lemmas:
                lemmas.append(value)
        elif attr == "def" and value:
            index = int(cols[2]) if len(cols) >= 4 and cols[2].strip().isdigit() else 0
            data.definitions.setdefault(key, []).append((index, value))
    return data


def read_ili_map(path: Path) -> dict[str, str]:
    """``ili-map-pwn30.tab`` (``iNNN<TAB>offset-pos``) as PWN synset key -> ILI id."""
    out: dict[str, str] = {}
    lines = read_text(path, what="ili map", error=LexiconMissingError).splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 2 or len(cols[1]) < 10:
            raise InputError(f"{path.name} line {lineno}: expected 'iNNN<TAB>offset-pos', got {line!r}")
        key = cols[1].strip()
        out[key[:9] + ("a" if key[9] == "s" else key[9])] = cols[0].strip()
    return out


# --------------------------------------------------------------------------------------------
# WN-LMF writing
# --------------------------------------------------------------------------------------------


@dataclass
class LmfEntry:
    """One ``<LexicalEntry>``: lemma as written, pos, other forms, senses (synset keys in order).

    ``numbers`` are WN-LMF 1.4 sense numbers (``n``): the sense order of the lemma across entries
    that differ only in case (WNDB's ``north`` covers entries "north" and "North").
    """

    lemma: str
    pos: str
    forms: list[str]
    synsets: list[str]
    numbers: list[int] | None = None


@dataclass
class LmfLexicon:
    """Everything needed to write one ``<Lexicon>`` element."""

    id: str
    version: str
    language: str
    label: str
    license: str
    entries: list[LmfEntry]
    synsets: list[str]  # PWN keys in output order
    ss_type: dict[str, str]
    ili: dict[str, str]
    definitions: dict[str, str]
    examples: dict[str, list[str]]
    relations: dict[str, list[tuple[str, str]]]  # key -> [(type, target key)]
    # key -> lemmas in the source's order; a synset's members follow it (NLTK's lemma order)
    member_order: dict[str, list[str]] = field(default_factory=dict)


def _lmf_lines(lex: LmfLexicon) -> Iterator[str]:
    q = quoteattr
    yield (
        f"  <Lexicon id={q(lex.id)} label={q(lex.label)} language={q(lex.language)} "
        f'email="polyglot-groc@localhost" license={q(lex.license)} version={q(lex.version)}>\n'
    )
    synset_id = {key: f"{lex.id}-{key[:9]}{lex.ss_type[key]}" for key in lex.synsets}
    members: dict[str, list[tuple[str, str]]] = {key: [] for key in lex.synsets}
    for n, e in enumerate(lex.entries):
        entry = f"{lex.id}-e{n}"
        yield f"    <LexicalEntry id={q(entry)}>\n      <Lemma partOfSpeech={q(e.pos)} writtenForm={q(e.lemma)} />\n"
        for form in e.forms:
            yield f"      <Form writtenForm={q(form)} />\n"
        for k, key in enumerate(e.synsets):
            sense = f"{entry}-{k}"
            members[key].append((e.lemma, sense))
            number = f' n="{e.numbers[k]}"' if e.numbers else ""
            yield f"      <Sense id={q(sense)} synset={q(synset_id[key])}{number} />\n"
        yield "    </LexicalEntry>\n"
    for key in lex.synsets:
        ili = lex.ili.get(key, "")
        attrs = f"id={q(synset_id[key])} ili={q(ili)} partOfSpeech={q(lex.ss_type[key])}"
        body = []
        if key in lex.definitions:
            body.append(f"      <Definition>{xml_escape(lex.definitions[key])}</Definition>\n")
        for rel, target in lex.relations.get(key, ()):
            if target in synset_id:
                body.append(f"      <SynsetRelation relType={q(rel)} target={q(synset_id[target])} />\n")
        for example in lex.examples.get(key, ()):
            body.append(f"      <Example>{xml_escape(example)}</Example>\n")
        head = f"    <Synset {attrs} members={q(' '.join(_ordered_members(members[key], lex.member_order.get(key))))}"
        if body:
            yield head + ">\n" + "".join(body) + "    </Synset>\n"
        else:
            yield head + " />\n"
    yield "  </Lexicon>\n"


def _ordered_members(senses: list[tuple[str, str]], order: list[str] | None) -> list[str]:
    if order:
        rank = {lemma.lower(): i for i, lemma in reversed(list(enumerate(order)))}
        senses = sorted(senses, key=lambda ls: rank.get(ls[0].lower(), len(rank)))
    return [sense for _, sense in senses]


def write_lmf(lexicons: Iterable[LmfLexicon], path: Path) -> Path:
    """Write WN-LMF 1.4 XML atomically (temporary file in the same directory, then rename).

    Hand-written rather than ``wn.lmf.dump`` because it is measurably faster for the same content.
    Measured on PWN 3.0 English (156,563 entries, 206,941 senses, 117,659 synsets, 195,332
    relations, 48,280 examples; 75 MB of XML), 2 shared cores, wn 1.1.1, the lexicon already in
    memory, two runs each:

    * this writer: 4.4-5.1 s, peak RSS +244 MB over the 275 MB baseline (519 MB);
    * ``wn.lmf.dump`` from equivalent ``wn.lmf`` TypedDicts (``Lexicon``, ``LexicalEntry``,
      ``Sense``, ``Synset``; same ids, ``n``, member order): 12.7-16.9 s (5.4-6.5 s building the
      dicts, the rest in dump's per-element ElementTree build and indent), or 9.9 s with the
      garbage collector off while building; peak RSS +285 MB (560 MB).

    ``wn.lmf.load`` reads both files back to identical structures (entries, forms, senses with
    ``n``, synsets, ILI ids, definitions, relations, examples, member order), so the library path
    loses nothing, but it costs 2-3x the time (the bar was 1.3x) and 1.17x the extra memory.
    """

    def write(fh: IO[bytes]) -> None:
        out = io.TextIOWrapper(fh, encoding="utf-8", newline="\n")
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write('<!DOCTYPE LexicalResource SYSTEM "http://globalwordnet.github.io/schemas/WN-LMF-1.4.dtd">\n')
        out.write('<LexicalResource xmlns:dc="https://globalwordnet.github.io/schemas/dc/">\n')
        for lex in lexicons:
            buf = io.StringIO()
            buf.writelines(_lmf_lines(lex))
            out.write(buf.getvalue())
        out.write("</LexicalResource>\n")
        out.flush()
        out.detach()  # leave the binary file open for atomic_write's fsync

    # mkstemp makes files 0600; an installed lexicon source is not secret.
    atomic_write(path, write, mode=0o644)
    return path


def _english_lexicon(pwn: Pwn, ili: dict[str, str], version: str) -> LmfLexicon:
    # WNDB index lemmas are lowercase while data lines keep each synset's spelling ("north" vs
    # "North", "Canis_familiaris").  One entry per spelling keeps that case in synset members (what
    # NLTK's lemma_names give); sense numbers ("n") keep the index's sense order across them.
    grouped: dict[tuple[str, str], LmfEntry] = {}
    for (lemma, pos), keys in pwn.index.items():
        for number, key in enumerate(keys, 1):
            written = next((w for w in pwn.synsets[key].words if w.lower() == lemma), lemma).replace("_", " ")
            entry = grouped.get((written, pos))
            if entry is None:
                entry = grouped[(written, pos)] = LmfEntry(written, pos, [], [], [])
            entry.synsets.append(key)
            entry.numbers.append(number)  # type: ignore[union-attr]
    # Irregular forms (*.exc: "geese" -> goose) belong to the lowercase spelling when there is one.
    variants: dict[tuple[str, str], LmfEntry] = {}
    for (written, pos), entry in grouped.items():
        if written == written.lower() or (written.lower(), pos) not in variants:
            variants[(written.lower(), pos)] = entry
    for (lemma, pos), forms in pwn.exceptions.items():
        target = variants.get((lemma.replace("_", " "), pos))
        if target is None:
            continue
        for form in forms:
            form = form.replace("_", " ")
            if form != target.lemma and form not in target.forms:
                target.forms.append(form)
    entries = list(grouped.values())
    synsets = list(pwn.synsets)
    return LmfLexicon(
        id=lexicon_id("en", "tab"),
        version=version,
        language="en",
        label="Princeton WordNet 3.0 (converted by polyglot-groc)",
        license="https://wordnet.princeton.edu/license-and-commercial-use",
        entries=_order_entries(entries),
        synsets=synsets,
        member_order={k: [w.replace("_", " ") for w in s.words] for k, s in pwn.synsets.items()},
        ss_type={k: s.ss_type for k, s in pwn.synsets.items()},
        ili=ili,
        definitions={k: s.definition for k, s in pwn.synsets.items() if s.definition},
        examples={k: s.examples for k, s in pwn.synsets.items() if s.examples},
        relations={k: s.pointers for k, s in pwn.synsets.items() if s.pointers},
    )


def _order_entries(entries: list[LmfEntry]) -> list[LmfEntry]:
    # Nouns, verbs, adjectives, adverbs, then lemma: wn orders a form's entries by insertion, so
    # this gives NLTK's synset order for a word (all noun senses first).
    order = {"n": 0, "v": 1, "a": 2, "r": 3}
    return sorted(entries, key=lambda e: (order.get(e.pos, 9), e.lemma.lower(), e.lemma))


def _other_lexicon(
    lang: str, source: str, tab: TabData, pwn: Pwn, ili: dict[str, str], version: str, label: str, license_: str
) -> LmfLexicon:
    keys = [k for k in tab.lemmas if k in pwn.synsets]
    dropped = len(tab.lemmas) - len(keys)
    if dropped:
        logger.warning("%s: %s %s not PWN 3.0 synsets; skipped", lang, counted(dropped, "synset key"),
                       agree(dropped, "is", "are"))
    present = set(keys)
    entries: dict[tuple[str, str], list[str]] = {}
    for key in keys:
        for lemma in tab.lemmas[key]:
            entries.setdefault((lemma, key[9]), []).append(key)
    # Tab files list synsets by offset, which says nothing about which sense is primary, and the
    # first synset supplies the definition.  Order each lemma's senses by (1) where the lemma
    # stands among the synset's lemmas in this language (first = its main translation), then
    # (2) PWN frequency and sense rank: French "chat" gets cat.n.01, not guy.n.01 or CT scan.
    for (lemma, _pos), senses in entries.items():

        def order(key: str, lemma: str = lemma) -> tuple[int, int, int, str]:
            return (tab.lemmas[key].index(lemma), *pwn.sense_order_key(key))

        senses.sort(key=order)
    definitions = {}
    for key, defs in tab.definitions.items():
        if key in present:
            definitions[key] = sorted(defs, key=lambda d: d[0])[0][1]
    relations = {key: [(rel, t) for rel, t in pwn.synsets[key].pointers if t in present] for key in keys}
    return LmfLexicon(
        id=lexicon_id(lang, source),
        version=version,
        language=lang,
        label=label,
        license=license_,
        entries=_order_entries([LmfEntry(lemma, pos, [], ks) for (lemma, pos), ks in entries.items()]),
        synsets=keys,
        member_order={k: tab.lemmas[k] for k in keys},
        ss_type={k: pwn.synsets[k].ss_type for k in keys},
        ili=ili,
        definitions=definitions,
        examples={},
        relations={k: v for k, v in relations.items() if v},
    )


# --------------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------------


def lexicon_id(lang: str, source: str = "tab") -> str:
    """Lexicon id our importer gives a language: ``omw-<lang>``, or ``wikt-<lang>`` (Wiktionary)."""
    return f"{'wikt' if source == 'wikt' else 'omw'}-{normalize_lang(lang)}"


def tab_source(path: Path) -> str:
    """``wikt`` for OMW's Wiktionary-derived files (``wn-wikt-<iso3>.tab``), else ``tab``: the same file gets
    the same lexicon id whichever way it is imported (``lexicon import --langs`` or a path)."""
    return "wikt" if Path(path).name.startswith("wn-wikt-") else "tab"


def _digest(paths: Sequence[Path]) -> str:
    h = hashlib.sha256(f"polyglot-groc-lmf/{CONVERTER_VERSION}".encode())
    for path in paths:
        h.update(path.name.encode())
        file_digest(path, into=h)
    return h.hexdigest()[:10]


def _find_pwn(data_root: Path) -> Path:
    for candidate in (data_root / "wordnet" / "pwn-3.0-wndb-lf.tar.xz", data_root / "wordnet" / "wordnet"):
        if candidate.exists():
            return candidate
    raise LexiconMissingError(
        f"no princeton wordnet 3.0 under {str(data_root)!r}; expected wordnet/pwn-3.0-wndb-lf.tar.xz "
        f"(set {DATA_ENV} to the shared data root)"
    )


def _find_tab(data_root: Path, lang: str) -> tuple[Path, str]:
    iso3 = to_iso3(lang)
    tabs = sorted((data_root / "omw" / "tab").glob(f"*/wn-data-{iso3}.tab"))
    if tabs:
        return tabs[0], "tab"
    wikt = data_root / "omw" / "wikt" / f"wn-wikt-{iso3}.tab"
    if wikt.is_file():
        return wikt, tab_source(wikt)
    have = sorted(
        {normalize_lang(p.stem.rsplit("-", 1)[-1]) for p in (data_root / "omw").glob("*/**/wn-*.tab")} | {"en"}
    )
    raise LexiconMissingError(
        f"no omw data for language {lang!r} under {str(data_root / 'omw')!r}; available: {', '.join(have)}"
    )


def _license_of(tab: Path) -> str:
    for line in read_text(tab, what="omw tab file").splitlines()[:1]:
        if line.startswith("#"):
            cols = line[1:].strip().split("\t")
            if len(cols) >= 4:
                return cols[3].strip() or "unknown"
    return "unknown"


def _label_of(tab: Path, lang: str) -> str:
    first = read_text(tab, what="omw tab file").split("\n", 1)[0]
    name = first[1:].split("\t")[0].strip() if first.startswith("#") else ""
    return f"{name or 'OMW ' + lang} (converted by polyglot-groc)"


def import_omw(
    data_root: Path | str | None,
    langs: Sequence[str],
    wn_dir: Path | str | None = None,
    *,
    force: bool = False,
) -> list[str]:
    """Convert PWN 3.0 + OMW tabs + ILI map to WN-LMF and add them to a ``wn`` data directory.

    Args:
        data_root: the shared data root (default ``$POLYGLOT_GROC_DATA``).
        langs: languages to install (``en`` is always added: it supplies cross-lingual glosses).
        wn_dir: the ``wn`` data directory (default :func:`lexicons.wn_backend.default_wn_dir`).
        force: re-add lexicons even when the same version is installed.

    Returns:
        The installed specifiers (``id:version``), English first.  The LMF files are kept in
        ``<wn_dir>/lmf/`` for inspection or re-use.
    """
    if data_root is None:
        env = os.environ.get(DATA_ENV)
        if not env:
            raise LexiconMissingError(f"no data root given and {DATA_ENV} is not set; pass {option('data_root')} DIR")
        data_root = env
    root = Path(data_root).expanduser()
    if not root.is_dir():
        raise LexiconMissingError(f"data root {str(root)!r} is not a directory; pass the shared data root")
    wanted = list(dict.fromkeys(["en"] + [normalize_lang(x) for x in langs]))
    if any(not x for x in wanted):
        raise InputError(f"empty language code in {list(langs)!r}")
    pwn_path = _find_pwn(root)
    ili_path = root / "omw" / "ili-map-pwn30.tab"
    tabs = {lang: _find_tab(root, lang) for lang in wanted if lang != "en"}
    wn_dir = Path(wn_dir).expanduser() if wn_dir is not None else default_wn_dir()

    # Versions first: when every lexicon is installed already there is nothing to parse.
    base_inputs = [pwn_path if pwn_path.is_file() else pwn_path / "data.noun", ili_path]
    for path in base_inputs:
        if not path.is_file():
            raise LexiconMissingError(f"missing {str(path)!r}; set {DATA_ENV} to the shared data root")
    versions = {"en": f"{_PWN_VERSION}+{_digest(base_inputs)}"}
    for lang, (tab, _) in tabs.items():
        versions[lang] = f"{_PWN_VERSION}+{_digest([*base_inputs, tab])}"
    specs = {lang: f"{lexicon_id(lang, tabs[lang][1] if lang in tabs else 'tab')}:{versions[lang]}" for lang in wanted}
    installed = _installed_specs(wn_dir)
    todo = [lang for lang in wanted if force or specs[lang] not in installed]
    if not todo:
        logger.info("already installed: %s", ", ".join(specs.values()))
        return list(specs.values())

    t0 = time.perf_counter()
    # Progress at INFO (the CLI shows it): an import takes about a minute, most of it in wn.add.
    logger.info("importing %s into %s: reading princeton wordnet 3.0 and the ili map...", ", ".join(
        specs[lang] for lang in todo), wn_dir)
    pwn = read_pwn(pwn_path)
    ili = read_ili_map(ili_path)
    logger.info("parsed pwn 3.0 (%d synsets) in %.1fs", len(pwn.synsets), time.perf_counter() - t0)
    lmf_dir = wn_dir / "lmf"
    # One import at a time into wn_dir, all the languages or none (lexicons.wn_install).
    with writing_wordnets(wn_dir) as db_dir:
        installed = _installed_specs(db_dir)  # again: an import that held the lock may have added them
        work = [x for x in todo if force or specs[x] not in installed]
        for done, lang in enumerate(work, start=1):
            t1 = time.perf_counter()
            logger.info("[%d/%d] converting %s to WN-LMF and adding it to wn's database (tens of seconds)...", done,
                        len(work), specs[lang])
            if lang == "en":
                lex = _english_lexicon(pwn, ili, versions["en"])
            else:
                tab, source = tabs[lang]
                lex = _other_lexicon(
                    lang,
                    source,
                    read_tab(tab, to_iso3(lang)),
                    pwn,
                    ili,
                    versions[lang],
                    _label_of(tab, lang),
                    _license_of(tab),
                )
            path = write_lmf([lex], lmf_dir / f"{lex.id}-{lex.version}.xml")
            _install(path, specs[lang], lex.id, db_dir)
            logger.info("installed %s (%d synsets) in %.1fs", specs[lang], len(lex.synsets), time.perf_counter() - t1)
    return list(specs.values())


def _tab_languages(path: Path) -> list[str]:
    """The language labels a tab file uses (``zsm`` of ``zsm:lemma``, or the header's iso3)."""
    text = read_text(path, what="omw tab file")
    found: list[str] = []
    first = text.split("\n", 1)[0]
    if first.startswith("#"):
        cols = first[1:].split("\t")
        if len(cols) >= 2 and cols[1].strip():
            found.append(cols[1].strip())
    for line in text.splitlines()[:2000]:
        cols = line.split("\t")
        if len(cols) >= 3 and ":" in cols[1]:
            found.append(cols[1].split(":", 1)[0].strip())
    return list(dict.fromkeys(x for x in found if x))


def _pwn_stub(keys: Sequence[str]) -> Pwn:
    """A stand-in for PWN 3.0 built from the tab's own keys: synsets without relations or glosses."""
    pwn = Pwn()
    for key in keys:
        pwn.synsets[key] = PwnSynset(key[:8], key[9], [], [], "", [])
    return pwn


def import_tab_file(
    path: Path,
    wn_dir: Path,
    *,
    lang: str | None = None,
    ili_map: Path | str | None = None,
    data_root: Path | str | None = None,
    force: bool = False,
) -> tuple[str, str, bool, bool]:
    """Convert one user OMW tab file (PWN 3.0 offsets) to WN-LMF and install it as ``omw-<lang>:3.0+<hash>``
    (``wikt-<lang>`` for OMW's Wiktionary files: :func:`tab_source`), the specifier ``lexicon import --langs``
    gives the same file from the shared data.

    ``ili_map`` (default ``<data_root>/omw/ili-map-pwn30.tab``) links its synsets to ILI ids;
    with PWN 3.0 under ``data_root`` its hyponym relations and sense order are used, without it
    the synsets have none of their own. Returns ``(spec, language, was already installed,
    used PWN)``.
    """
    ili_map = Path(ili_map).expanduser() if ili_map is not None else None
    data_root = Path(data_root).expanduser() if data_root is not None else None
    try:
        labels = _tab_languages(path)
    except UnicodeDecodeError as exc:
        raise InputError(f"omw tab file {path} is not utf-8 ({exc}); re-encode it as utf-8") from exc
    code = normalize_lang(lang) if lang else (normalize_lang(labels[0]) if labels else "")
    if not code:
        raise InputError(f"cannot tell the language of {path} (no iso3 header, no 'xxx:lemma' labels); pass "
                         f"{option('lang')}")
    iso3 = to_iso3(code)
    if ili_map is None and data_root is not None:
        ili_map = data_root / "omw" / "ili-map-pwn30.tab"
    if ili_map is None or not ili_map.is_file():
        raise LexiconMissingError("an omw tab file needs the ili map (ili-map-pwn30.tab) to link its synsets: pass "
                                  f"{option('ili_map')} FILE or {option('data_root')} with the shared data root "
                                  "(omw/ili-map-pwn30.tab)"
                                  + (f"; {ili_map} does not exist" if ili_map is not None else ""))
    tab = read_tab(path, iso3)
    if not tab.lemmas:
        raise InputError(f"{path} has no lemmas labelled {iso3!r} (labels found: {', '.join(labels) or 'none'}); "
                                 f"pass {option('lang')} with the file's language")
    pwn_path = None
    if data_root is not None:
        try:
            pwn_path = _find_pwn(data_root)
        except LexiconMissingError:
            pwn_path = None
    # Hashed in import_omw's order (PWN, ILI map, tab): one file, one specifier, whichever way it comes in.
    inputs = [*([pwn_path if pwn_path.is_file() else pwn_path / "data.noun"] if pwn_path else []), ili_map, path]
    version = f"{_PWN_VERSION}+{_digest(inputs)}"
    source = tab_source(path)
    lex_id = lexicon_id(code, source)
    spec = f"{lex_id}:{version}"
    already = spec in _installed_specs(wn_dir)
    if already and not force:
        logger.info("already installed: %s", spec)
        return spec, code, True, pwn_path is not None
    logger.info("importing %s into %s (converting to WN-LMF, then adding it to wn's database)...", spec, wn_dir)
    ili = read_ili_map(ili_map)
    if pwn_path is not None:
        pwn = read_pwn(pwn_path)
        known, against = [k for k in tab.lemmas if k in pwn.synsets], f"princeton wordnet 3.0 ({pwn_path})"
    else:
        pwn = _pwn_stub(list(tab.lemmas))
        known, against = [k for k in tab.lemmas if k in ili], f"the ili map {ili_map}"
    if not known:  # a wordnet of no synsets is no wordnet: the offsets are of another version
        example = next(iter(tab.lemmas))
        raise LexiconFormatError(f"omw tab file {path}: none of its {len(tab.lemmas)} synset keys (e.g. {example!r}) "
                                 f"is a synset of {against}, so the wordnet would be empty; an omw tab file needs "
                                 "princeton wordnet 3.0 offsets (convert 3.1 or 2.0 offsets first)")
    if pwn_path is None:
        logger.warning("no princeton wordnet 3.0 given (%s): %s gets no relations of its own", option("data_root"),
                       spec)
    lex = _other_lexicon(code, source, tab, pwn, ili, version, _label_of(path, code), _license_of(path))
    with writing_wordnets(wn_dir) as db_dir:  # one import at a time, all or nothing (lexicons.wn_install)
        already = spec in _installed_specs(db_dir)
        if already and not force:  # an import that held the lock installed it meanwhile
            return spec, code, True, pwn_path is not None
        xml = write_lmf([lex], wn_dir / "lmf" / f"{lex.id}-{lex.version}.xml")
        _install(xml, spec, lex.id, db_dir)
    return spec, code, False, pwn_path is not None


def _installed_specs(wn_dir: Path) -> set[str]:
    if not (wn_dir / "wn.db").is_file():
        return set()
    from lexicons.wn_backend import installed_lexicons

    return {x["spec"] for x in installed_lexicons(wn_dir)}


def _install(path: Path, spec: str, lex_id: str, db_dir: Path) -> None:
    """Add the LMF file ``path`` to the wn database in ``db_dir`` (the temporary folder of
    :func:`lexicons.wn_install.writing_wordnets`), replacing older versions of ``lex_id``."""
    import sqlite3

    import wn
    from wn.util import ProgressHandler  # the silent base class: the library never prints

    from lexicons.wn_install import describe_lmf_errors, sqlite_os_error

    with wn_data_dir(db_dir):
        try:
            # Older versions of the same lexicon are replaced, so `omw-fr` stays unambiguous.
            for old in wn.lexicons(lexicon=f"{lex_id}:*"):
                logger.info("removing %s", old.specifier())
                wn.remove(old.specifier(), progress_handler=ProgressHandler)
        except wn.Error:
            pass  # none installed
        try:
            wn.add(path, progress_handler=None)
        except sqlite3.Error as exc:
            if sqlite_os_error(exc, db_dir) is not None:
                raise  # a full disk: writing_wordnets names the user's wn.db
            problem = describe_lmf_errors(path) or " ".join(str(exc).split())
            raise LexiconFormatError(f"wn could not add {path} ({spec}): {problem}") from exc
        except (wn.Error, OSError) as exc:
            raise LexiconError(f"wn could not add {str(path)!r} ({spec}): {exc}") from exc
    # The LMF of replaced versions is dead weight (70 MB for English): keep only the current one.
    for old_xml in path.parent.glob(f"{lex_id}-{_PWN_VERSION}+*.xml"):
        if old_xml != path:
            old_xml.unlink(missing_ok=True)


def download(spec: str, wn_dir: Path | str | None = None) -> list[str]:
    """``wn.download(spec)`` into ``wn_dir``; offline this fails with a one-line hint to import."""
    import wn

    wn_dir = Path(wn_dir).expanduser() if wn_dir is not None else default_wn_dir()
    hint = (
        f"cannot download wordnet {spec!r} (no network or unknown project); install the offline "
        f"copies with `polyglot-groc lexicon import --data $POLYGLOT_GROC_DATA --langs en,fr`"
    )
    # One writer at a time, all or nothing, as an import (lexicons.wn_install).
    with writing_wordnets(wn_dir) as db_dir, wn_data_dir(db_dir):
        try:
            wn.download(spec, progress_handler=None)
        except Exception as exc:  # noqa: BLE001 - httpx, wn.Error, OSError: all mean "not available"
            detail = " ".join(str(exc).split())[:160]
            raise LexiconDownloadError(f"{hint} ({type(exc).__name__}: {detail})") from exc
    return sorted(_installed_specs(wn_dir))
