"""``data prepare --lang xx --input FILE...``: corpora from the user's own text and CoNLL-U files.

Plain text (a sentence per line, a paragraph per line, or running text), CoNLL-U (syntactic words)
and .gz; NFC; deterministic splits by line or document with sizes or fractions; dedupe; several
languages in one folder; ``prepare.json`` with counts and the exact settings; bad input is one line,
exit 2 and nothing written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groc_base.errors import ConfigError, CorpusError
from langpairs.corpus import MultilingualCorpus
from langpairs.files import parse_split_size, prepare_language
from langpairs.registry import LanguageRegistry, default_registry
from polyglot_groc.cli import app
from tests.conftest import one_error_line

runner = CliRunner()
NO_ENV = {"POLYGLOT_GROC_DATA": "", "POLYGLOT_GROC_LANGUAGES": ""}

LANGUAGES = """
[languages.ceb]
name = "Cebuano"
iso3 = "ceb"
script = "Latin"
related = ["tl"]
"""

CONLLU = """# newdoc id = a
# sent_id = 1
1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_
1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_
2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_
3\tchat\tchat\tNOUN\t_\t_\t0\troot\t_\t_
3.1\tvu\tvoir\tVERB\t_\t_\t_\t_\t0:root\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# newdoc id = b
# sent_id = 2
1\tun\tun\tDET\t_\t_\t2\tdet\t_\t_
2\tchien\tchien\tNOUN\t_\t_\t0\troot\t_\t_

# sent_id = 3
1\tdeux\tdeux\tNUM\t_\t_\t2\tnummod\t_\t_
2\tchiens\tchien\tNOUN\t_\t_\t0\troot\t_\t_

"""


def _registry() -> LanguageRegistry:
    return LanguageRegistry.from_config({"languages": {"ceb": {"name": "Cebuano", "iso3": "ceb", "script": "Latin",
                                                              "related": "tl"}}})


def _lines(n: int, prefix: str = "Ang tawo") -> str:
    return "".join(f"{prefix} {i} miadto sa balay.\n" for i in range(n))


def _read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_lines_are_tokenised_split_and_recorded(tmp_path: Path) -> None:
    src = tmp_path / "ceb.txt"
    src.write_text(_lines(100), encoding="utf-8")
    res = prepare_language(lang="ceb", inputs=[src], out=tmp_path / "c", registry=_registry())
    lines = {s: _read(tmp_path / "c" / "ceb" / f"{s}.txt") for s in ("train", "valid", "test")}
    assert lines["train"][0] == "Ang tawo 0 miadto sa balay ."  # toktok split the final period
    assert lines["test"][-1] == "Ang tawo 99 miadto sa balay ."  # held-out text is the end
    assert [len(x) for x in lines.values()] == [80, 10, 10]
    manifest = json.loads((tmp_path / "c" / "prepare.json").read_text(encoding="utf-8"))
    entry = manifest["languages"]["ceb"]
    assert entry == {k: v for k, v in res.to_dict().items() if k not in ("lang", "out", "directory", "manifest")}
    assert entry["inputs"][0]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert entry["tokenizer"]["name"] == "toktok" and "nltk" in entry["tokenizer"]["versions"]
    assert entry["split"] == {"by": "line", "valid": 0.1, "test": 0.1, "order": "text order (held-out last)",
                              "shuffle": False, "seed": 0, "units": 100}
    assert entry["toolkit_version"] and entry["language"]["name"] == "Cebuano"
    train = entry["splits"]["train"]
    assert train["sentences"] == 80 and train["tokens"] == 80 * 7
    assert train["types"] == len({t for line in lines["train"] for t in line.split()})
    assert train["type_token_ratio"] == round(train["types"] / train["tokens"], 4)
    assert entry["counts"]["tokens"] == 100 * 7 and res.splits["valid"].tokens == 70
    # The corpus reads back as the trainer reads it.
    corpus = MultilingualCorpus.load(tmp_path / "c", ["ceb"])
    assert corpus.n_tokens("ceb", "train") == 80 * 8  # + <eos>


def test_same_input_same_corpus_and_shuffle_is_seeded(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_text(_lines(60), encoding="utf-8")

    def run(name: str, **kw: object) -> bytes:
        prepare_language(lang="ceb", inputs=[src], out=tmp_path / name, registry=_registry(), **kw)  # type: ignore[arg-type]
        return b"".join((tmp_path / name / "ceb" / f"{s}.txt").read_bytes() for s in ("train", "valid", "test"))

    assert run("a") == run("b")
    assert run("s1", shuffle=True, seed=1) == run("s1b", shuffle=True, seed=1) != run("s2", shuffle=True, seed=2)
    assert run("s1c", shuffle=True, seed=1) != run("c")


def test_sizes_in_tokens_and_fractions(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_text(_lines(50), encoding="utf-8")  # 7 tokens a line
    res = prepare_language(lang="ceb", inputs=[src], out=tmp_path / "c", registry=_registry(), valid="21", test=0.2)
    assert (res.splits["valid"].tokens, res.splits["test"].tokens) == (21, 70)
    assert parse_split_size("0.25") == 0.25 and parse_split_size("300") == 300 and parse_split_size(5) == 5
    for bad in ("0", "1.0", "-3", "1.5", "ten", "nan"):
        with pytest.raises(ConfigError, match="fraction between 0 and 1"):
            parse_split_size(bad)


def test_nfc_gzip_conllu_and_dedupe(tmp_path: Path) -> None:
    text = tmp_path / "fr.txt.gz"
    nfd = unicodedata.normalize("NFD", "L'été est là.\nL'été est là.\nUn autre jour.\n")
    text.write_bytes(gzip.compress(nfd.encode("utf-8")))
    conllu = tmp_path / "fr.conllu"
    conllu.write_text(CONLLU, encoding="utf-8")
    res = prepare_language(lang="fr", inputs=[text, conllu], out=tmp_path / "c", dedupe=True, valid=1, test=1,
                           registry=default_registry())
    got = [line for s in ("train", "valid", "test") for line in _read(tmp_path / "c" / "fr" / f"{s}.txt")]
    # NFC; French elision stays on the article; the duplicate line is gone; CoNLL-U gives syntactic
    # words (de le, not the range du; the empty node 3.1 skipped).
    assert got == ["L' été est là .", "Un autre jour .", "de le chat .", "un chien", "deux chiens"]
    assert all(unicodedata.is_normalized("NFC", line) for line in got)
    entry = res.entry
    assert entry["duplicates_dropped"] == 1 and entry["dedupe"] is True
    assert [x["format"] for x in entry["inputs"]] == ["text/lines", "conllu"]


def test_paragraphs_and_running_text_are_split_into_sentences(tmp_path: Path) -> None:
    para = tmp_path / "p.txt"
    para.write_text("Artikulo 1\n" + "Ang tawo miadto. Ang bata mikaon sa balay.\n" * 30, encoding="utf-8")
    res = prepare_language(lang="ceb", inputs=[para], out=tmp_path / "p", registry=_registry(), text="paragraphs")
    assert res.entry["counts"]["sentences"] == 61 and "punkt" in res.entry["tokenizer"]["sentence_splitter"]
    assert _read(tmp_path / "p" / "ceb" / "train.txt")[:3] == ["Artikulo 1", "Ang tawo miadto .",
                                                                "Ang bata mikaon sa balay ."]
    running = tmp_path / "r.txt"  # hard-wrapped: a sentence goes on over a line break
    running.write_text("".join("Ang tawo\nmiadto. Ang bata\nmikaon.\n\n" for _ in range(30)), encoding="utf-8")
    res = prepare_language(lang="ceb", inputs=[running], out=tmp_path / "r", registry=_registry(), text="running")
    assert _read(tmp_path / "r" / "ceb" / "train.txt")[:2] == ["Ang tawo miadto .", "Ang bata mikaon ."]


def test_split_by_document_keeps_documents_whole(tmp_path: Path) -> None:
    src = tmp_path / "docs.txt"
    src.write_text("".join("".join(f"Doc {d} line {i} .\n" for i in range(5)) + "\n" for d in range(10)),
                   encoding="utf-8")
    prepare_language(lang="ceb", inputs=[src], out=tmp_path / "c", registry=_registry(), split_by="document")
    docs = {s: {line.split()[1] for line in _read(tmp_path / "c" / "ceb" / f"{s}.txt")}
            for s in ("train", "valid", "test")}
    assert docs == {"train": {str(d) for d in range(8)}, "valid": {"8"}, "test": {"9"}}
    one = tmp_path / "one.txt"
    one.write_text(_lines(40), encoding="utf-8")  # no blank line: one document
    with pytest.raises(CorpusError, match="split_by='line'"):
        prepare_language(lang="ceb", inputs=[one], out=tmp_path / "d", registry=_registry(), split_by="document")
    assert not (tmp_path / "d").exists()


def test_languages_share_a_folder_and_are_not_replaced_silently(tmp_path: Path) -> None:
    out = tmp_path / "c"
    for lang in ("ceb", "tl"):
        (tmp_path / f"{lang}.txt").write_text(_lines(30, lang), encoding="utf-8")
    prepare_language(lang="ceb", inputs=[tmp_path / "ceb.txt"], out=out, registry=_registry())
    prepare_language(lang="tl", inputs=[tmp_path / "tl.txt"], out=out, registry=_registry())
    manifest = json.loads((out / "prepare.json").read_text(encoding="utf-8"))
    assert sorted(manifest["languages"]) == ["ceb", "tl"]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (tmp_path / "new.txt").write_text(_lines(30, "bag-o"), encoding="utf-8")
    with pytest.raises(ConfigError, match="overwrite=True"):
        prepare_language(lang="ceb", inputs=[tmp_path / "new.txt"], out=out, registry=_registry())
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    prepare_language(lang="ceb", inputs=[tmp_path / "new.txt"], out=out, registry=_registry(), overwrite=True)
    assert _read(out / "ceb" / "train.txt")[0].startswith("bag-o 0")
    assert sorted(json.loads((out / "prepare.json").read_text())["languages"]) == ["ceb", "tl"]
    assert not [p for p in out.iterdir() if p.name.endswith((".tmp",)) or ".old-" in p.name]


def test_parallel_calls_keep_every_language(tmp_path: Path) -> None:
    codes = ["en", "fr", "de", "nl", "it", "es"]
    for code in codes:
        (tmp_path / f"{code}.txt").write_text(_lines(30, code), encoding="utf-8")
    out = tmp_path / "c"
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda c: prepare_language(lang=c, inputs=[tmp_path / f"{c}.txt"], out=out,
                                                 registry=default_registry()), codes))
    assert sorted(json.loads((out / "prepare.json").read_text())["languages"]) == sorted(codes)


# -- the command ------------------------------------------------------------------------------------------
def _one_error(res) -> str:  # type: ignore[no-untyped-def]
    line = one_error_line(res)
    assert "Traceback" not in res.output
    return line


def test_cli_prepares_a_user_language(tmp_path: Path) -> None:
    langs = tmp_path / "languages.toml"
    langs.write_text(LANGUAGES, encoding="utf-8")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(_lines(30), encoding="utf-8")
    b.write_text(_lines(30, "Ang bata"), encoding="utf-8")
    out = tmp_path / "c"
    res = runner.invoke(app, ["data", "prepare", "--lang", "ceb", "--input", str(a), str(b), "--out", str(out),
                              "--languages", str(langs), "--valid", "0.2", "--test", "70"], env=NO_ENV)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["lang"] == "ceb" and [Path(x["path"]).name for x in summary["inputs"]] == ["a.txt", "b.txt"]
    assert summary["splits"]["test"]["tokens"] == 70 and "sha256" not in summary["splits"]["test"]
    assert summary["counts"]["tokens"] == 60 * 7
    # The environment variable works like --languages.
    res = runner.invoke(app, ["data", "prepare", "--lang", "ceb", "--input", str(a), "--out", str(tmp_path / "e")],
                        env={**NO_ENV, "POLYGLOT_GROC_LANGUAGES": str(langs)})
    assert res.exit_code == 0, res.output


BAD_INPUTS = {
    "empty": b"  \n\n",
    "binary": b"\x7fELF\x02\x01\x00\x00binary",
    "latin1": "caf\u00e9 na\u00efve\n".encode("latin-1"),
    "bad-gzip": b"not gzip at all",
}


@pytest.mark.parametrize(("case", "needle"), [
    ("empty", "is empty"),
    ("binary", "looks binary"),
    ("latin1", "not valid utf-8"),
    ("bad-gzip", "not a valid gzip"),
    ("unknown-lang", "[languages.pam]"),
    ("missing-input", "does not exist"),
    ("no-lang", "--input needs --lang"),
    ("auto", "name one"),
    ("bad-valid", "fraction between 0 and 1"),
    ("too-much-held-out", "held-out tokens"),
    ("budget-flag", "--train-tokens"),
    ("registry-missing-field", "needs iso3"),
    ("registry-wrong-type", "'script'"),
    ("registry-not-toml", "not valid toml"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path: Path, case: str, needle: str) -> None:
    langs = tmp_path / "languages.toml"
    langs.write_text(LANGUAGES, encoding="utf-8")
    src = tmp_path / "in.txt"
    src.write_text(_lines(20), encoding="utf-8")
    lang, extra = "ceb", []
    if case in BAD_INPUTS:
        src = tmp_path / ("in.txt.gz" if case == "bad-gzip" else "in.txt")
        src.write_bytes(BAD_INPUTS[case])
    elif case == "unknown-lang":
        lang = "pam"
    elif case == "missing-input":
        src = tmp_path / "nowhere.txt"
    elif case == "auto":
        extra = ["--tokenize", "auto"]
    elif case == "bad-valid":
        extra = ["--valid", "1.5"]
    elif case == "too-much-held-out":
        extra = ["--valid", "100", "--test", "100"]
    elif case == "budget-flag":
        extra = ["--train-tokens", "100"]
    elif case == "registry-missing-field":
        langs.write_text('[languages.ceb]\nname = "Cebuano"\n', encoding="utf-8")
    elif case == "registry-wrong-type":
        langs.write_text('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = ["Latin"]\n', encoding="utf-8")
    elif case == "registry-not-toml":
        langs.write_text('[languages.ceb\nname = "Cebuano"\n', encoding="utf-8")
    args = ["data", "prepare", "--input", str(src), "--out", str(tmp_path / "out"), "--languages", str(langs),
            *extra]
    if case != "no-lang":
        args += ["--lang", lang]
    res = runner.invoke(app, args, env=NO_ENV)
    line = _one_error(res)
    assert needle.lower() in line.lower(), line
    assert not (tmp_path / "out").exists()


def test_shared_text_and_own_files_share_one_manifest(tmp_path: Path) -> None:
    from langpairs.prepare import prepare_corpora

    palito = tmp_path / "shared" / "text" / "palito"
    palito.mkdir(parents=True)
    (palito / "wiki_parallel.tl").write_text(_lines(200, "Ang bahay"), encoding="utf-8")
    (tmp_path / "ceb.txt").write_text(_lines(30), encoding="utf-8")
    out = tmp_path / "c"
    prepare_language(lang="ceb", inputs=[tmp_path / "ceb.txt"], out=out, registry=_registry())
    prepare_corpora(tmp_path / "shared", out, ["tl"], train_tokens=300, eval_tokens=50)
    languages = json.loads((out / "prepare.json").read_text(encoding="utf-8"))["languages"]
    assert languages["ceb"]["tool"] == "langpairs.files.prepare_language" and languages["tl"]["tokenizer"] == "toktok"
