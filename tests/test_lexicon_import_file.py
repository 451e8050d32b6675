"""``lexicon import FILE``: a user's WN-LMF or OMW tab wordnet under wn's own specifiers, and no
silent English fallback: glosses and hyponyms come from English through ILI only when asked
(``--fallback en`` or ``fallback = "en"`` in the languages file); glosses say their language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexicons.wn_backend import WnLexicon
from polyglot_groc.commands.lexicon import app
from polyglot_groc.config import LexiconConfig
from polyglot_groc.model.lexforms import lexicon_for_languages
from tests.conftest import MINI_ILI, MINI_LMF, install_wordnets, one_error_line

runner = CliRunner()
NO_ENV = {"POLYGLOT_GROC_DATA": "", "POLYGLOT_GROC_LANGUAGES": ""}

#: A user wordnet: Cebuano "ido" (dog) and "itoy" (puppy), linked to the English fixture's synsets
#: by ILI, with neither definitions nor relations of its own.
USER_LMF = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE LexicalResource SYSTEM "http://globalwordnet.github.io/schemas/WN-LMF-1.1.dtd">
<LexicalResource xmlns:dc="https://globalwordnet.github.io/schemas/dc/">
  <Lexicon id="test-ceb" label="Test Cebuano" language="ceb" email="a@b.c"
           license="https://creativecommons.org/publicdomain/zero/1.0/" version="1">
    <LexicalEntry id="test-ceb-ido-n">
      <Lemma writtenForm="ido" partOfSpeech="n" />
      <Sense id="test-ceb-ido-n-1" synset="test-ceb-1-n" />
    </LexicalEntry>
    <LexicalEntry id="test-ceb-itoy-n">
      <Lemma writtenForm="itoy" partOfSpeech="n" />
      <Sense id="test-ceb-itoy-n-1" synset="test-ceb-2-n" />
    </LexicalEntry>
    <Synset id="test-ceb-1-n" ili="i9101" partOfSpeech="n" />
    <Synset id="test-ceb-2-n" ili="i9102" partOfSpeech="n" />
  </Lexicon>
</LexicalResource>
"""


@pytest.fixture
def user_wn(tmp_path: Path) -> tuple[Path, Path]:
    """A wn folder with the English fixture, and the user's LMF file (not yet imported)."""
    lmf = tmp_path / "ceb.xml"
    lmf.write_text(USER_LMF, encoding="utf-8")
    return install_wordnets(tmp_path / "wn", MINI_ILI, MINI_LMF), lmf


def test_lmf_is_installed_under_wns_own_specifier(user_wn: tuple[Path, Path]) -> None:
    wn_dir, lmf = user_wn
    res = runner.invoke(app, ["import", str(lmf), "--wn-dir", str(wn_dir)], env=NO_ENV)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["installed"] == ["test-ceb:1"] and out["languages"] == ["ceb"] and out["format"] == "wn-lmf"
    assert out["already_installed"] == []
    again = json.loads(runner.invoke(app, ["import", str(lmf), "--wn-dir", str(wn_dir)], env=NO_ENV).stdout)
    assert again["already_installed"] == ["test-ceb:1"]
    info = json.loads(runner.invoke(app, ["info", "--wn-dir", str(wn_dir), "--json"]).stdout)
    assert "test-ceb:1" in [x["spec"] for x in info["lexicons"]]


def test_no_english_fallback_unless_asked(user_wn: tuple[Path, Path], tmp_path: Path) -> None:
    wn_dir, lmf = user_wn
    assert runner.invoke(app, ["import", str(lmf), "--wn-dir", str(wn_dir)], env=NO_ENV).exit_code == 0

    def lookup(*extra: str) -> dict:
        res = runner.invoke(app, ["lookup", "ido", "--lang", "ceb", "--wn-dir", str(wn_dir), "--json", *extra],
                            env=NO_ENV)
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    plain = lookup()
    assert plain["definition"] == [] and plain["related"] == []  # an entry, but no forms of its own
    assert plain["no_fallback"] == ["ceb"]
    asked = lookup("--fallback", "en")
    assert asked["definition_lang"] == "en" and asked["definition"][:3] == ["a", "member", "of"]
    assert asked["related"] == ["itoy"]  # the English hyponym structure, through ILI
    langs = tmp_path / "languages.toml"
    langs.write_text('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = "Latin"\nfallback = "en"\n',
                     encoding="utf-8")
    assert lookup("--languages", str(langs))["definition"] == asked["definition"]
    assert lookup("--languages", str(langs), "--fallback", "none")["definition"] == []
    text = runner.invoke(app, ["lookup", "ido", "--lang", "ceb", "--wn-dir", str(wn_dir)], env=NO_ENV)
    assert "no English fallback" in text.stdout and "definition: -" in text.stdout
    # Built-in languages keep the thesis's behaviour: French words take English glosses.
    fr = runner.invoke(app, ["lookup", "chien", "--lang", "fr", "--wn-dir", str(wn_dir), "--json"], env=NO_ENV)
    assert json.loads(fr.stdout)["definition_lang"] == "en"


def test_registry_wordnets_pick_the_lexicon(user_wn: tuple[Path, Path], tmp_path: Path) -> None:
    wn_dir, lmf = user_wn
    second = tmp_path / "ceb2.xml"
    second.write_text(USER_LMF.replace("test-ceb", "other-ceb").replace('"ido"', '"iro"'), encoding="utf-8")
    for path in (lmf, second):
        assert runner.invoke(app, ["import", str(path), "--wn-dir", str(wn_dir)], env=NO_ENV).exit_code == 0
    langs = tmp_path / "languages.toml"
    langs.write_text('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = "Latin"\n'
                     'wordnets = ["other-ceb:1"]\n', encoding="utf-8")
    res = runner.invoke(app, ["lookup", "iro", "--lang", "ceb", "--wn-dir", str(wn_dir), "--json",
                              "--languages", str(langs)], env=NO_ENV)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["lexicons"] == ["other-ceb:1"]


def test_train_gets_the_registry_settings(user_wn: tuple[Path, Path]) -> None:
    from langpairs.registry import LanguageRegistry

    wn_dir, lmf = user_wn
    assert runner.invoke(app, ["import", str(lmf), "--wn-dir", str(wn_dir)], env=NO_ENV).exit_code == 0
    reg = LanguageRegistry.from_config({"ceb": {"name": "Cebuano", "iso3": "ceb", "script": "Latin",
                                                "wordnets": ["test-ceb"]}})
    lex = lexicon_for_languages(LexiconConfig(wn_dir=str(wn_dir)), "groc-lex", ("ceb", "en"), reg)
    assert lex.no_fallback == ("ceb",) and lex.specs == ("test-en:1", "test-ceb:1")
    assert lexicon_for_languages(LexiconConfig(), "groc", ("ceb",), reg).specs == ()  # no lexicon, nothing opened
    opened = WnLexicon(list(lex.specs), wn_dir=wn_dir, no_fallback=lex.no_fallback)
    assert opened.definition("ido", "ceb") == [] and opened.settings["no_fallback"] == ["ceb"]
    assert "no_fallback" not in WnLexicon("test-en", wn_dir=wn_dir).settings  # older runs' settings unchanged


def test_omw_tab_file_with_the_ili_map(tmp_path: Path) -> None:
    tab = tmp_path / "wn-data-ceb.tab"
    tab.write_text("# Test Cebuano\tceb\thttp://example.org\tCC0\n00007846-n\tceb:lemma\ttawo\n"
                   "10787470-n\tceb:lemma\tbabaye\n10787470-n\tceb:def\t0\tusa ka hamtong nga babaye\n",
                   encoding="utf-8")
    ili = tmp_path / "ili.tab"
    ili.write_text("i35562\t00007846-n\ni94168\t10787470-n\n", encoding="utf-8")
    wn_dir = tmp_path / "wn"
    res = runner.invoke(app, ["import", str(tab), "--ili-map", str(ili), "--wn-dir", str(wn_dir)], env=NO_ENV)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    spec = out["installed"][0]
    assert spec.startswith("omw-ceb:3.0+") and out["languages"] == ["ceb"] and out["format"] == "omw-tab"
    lex = WnLexicon(spec, wn_dir=wn_dir)
    assert lex.definition("babaye", "ceb") == ["usa", "ka", "hamtong", "nga", "babaye"]
    assert lex.definition_lang("babaye", "ceb") == "ceb"
    again = runner.invoke(app, ["import", str(tab), "--ili-map", str(ili), "--wn-dir", str(wn_dir)], env=NO_ENV)
    assert json.loads(again.stdout)["already_installed"] == [spec]


@pytest.mark.parametrize(("case", "needle"), [
    ("broken-xml", "wn could not add"),
    ("no-doctype", "DOCTYPE"),
    ("not-a-wordnet", "neither WN-LMF"),
    ("tab-without-ili", "ili map"),
    ("tab-wrong-lang", "no lemmas labelled"),
    ("langs-with-file", "--langs"),
    ("missing", "does not exist"),
    ("bad-fallback", "--fallback"),
])
def test_bad_wordnet_files_are_one_line(tmp_path: Path, case: str, needle: str) -> None:
    path = tmp_path / "wordnet.xml"
    path.write_text(USER_LMF, encoding="utf-8")
    args = ["import", str(path), "--wn-dir", str(tmp_path / "wn")]
    if case == "broken-xml":
        path.write_text(USER_LMF.replace("</Lexicon>", ""), encoding="utf-8")
    elif case == "no-doctype":
        path.write_text("\n".join(x for x in USER_LMF.splitlines() if "DOCTYPE" not in x), encoding="utf-8")
    elif case == "not-a-wordnet":
        path.write_text("just some words\n", encoding="utf-8")
    elif case in ("tab-without-ili", "tab-wrong-lang"):
        path = tmp_path / "wn-data.tab"
        path.write_text("00007846-n\tzsm:lemma\torang\n", encoding="utf-8")
        ili = tmp_path / "ili.tab"
        ili.write_text("i35562\t00007846-n\n", encoding="utf-8")
        extra = ["--lang", "ceb", "--ili-map", str(ili)] if case == "tab-wrong-lang" else []
        args = ["import", str(path), "--wn-dir", str(tmp_path / "wn"), *extra]
    elif case == "langs-with-file":
        args += ["--langs", "en"]
    elif case == "missing":
        args = ["import", str(tmp_path / "nope.xml"), "--wn-dir", str(tmp_path / "wn")]
    else:
        args = ["lookup", "ido", "--lang", "ceb", "--wn-dir", str(tmp_path), "--fallback", "fr"]
    line = one_error_line(runner.invoke(app, args, env=NO_ENV))
    assert needle.lower() in line.lower(), line
    assert not (tmp_path / "wn").exists()
