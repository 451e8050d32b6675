"""Lexicon names and lookups as a newcomer meets them (hand-written wordnets, no shared data).

* A specifier names what is installed: ``id`` alone is the installed version, ``id:3.0`` any build
  ``3.0+<hash>`` (what ``lexicon import`` installs); an unknown one lists the installed ones.
* ``lexicon lookup --specs X`` uses X, in X's languages (the default ``--lang en`` used to make
  ``--specs omw-fr`` look French lexicons up in English); a ``--lang`` X does not cover is an error.
* Related words are a list (JSON) or ``" | "``-separated: multiword relatives stay apart.
* Every definition is labelled with its language (English glosses of French words included).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groc_base.errors import LexiconError, LexiconMissingError
from lexicons.service import LexiconService
from lexicons.tsv_backend import TsvLexicon
from lexicons.wn_backend import WnLexicon
from polyglot_groc.cli import app as cli_app
from polyglot_groc.commands.lexicon import app
from tests.conftest import MINI_ILI, MINI_LMF, install_wordnets, one_error_line

DATA = Path(__file__).parent / "data" / "lexicon"
runner = CliRunner()


@pytest.fixture(scope="module")
def built_wn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini wordnets with importer-style versions: test-en:3.0+1a2b3c, test-fr:3.0+4d5e6f."""
    folder = tmp_path_factory.mktemp("built")
    text = MINI_LMF.read_text(encoding="utf-8")
    text = text.replace('version="1">', 'version="3.0+1a2b3c">', 1).replace('version="1">', 'version="3.0+4d5e6f">', 1)
    assert text.count("3.0+") == 2
    (folder / "lmf.xml").write_text(text, encoding="utf-8")
    return install_wordnets(tmp_path_factory.mktemp("wn-built"), MINI_ILI, folder / "lmf.xml")


@pytest.mark.parametrize("spec", ["test-fr", "test-fr:3.0", "test-fr:3.0+4d5e6f", "test-fr:*"])
def test_specifiers_name_the_installed_build(built_wn: Path, spec: str) -> None:
    lex = WnLexicon(spec, wn_dir=built_wn)
    assert lex.selected_specs == ["test-fr:3.0+4d5e6f"] and lex.gloss_specs == ["test-en:3.0+1a2b3c"]


@pytest.mark.parametrize("spec", ["test-fr:1.4", "test-fr:3.0+000000", "test-fr:3", "omw-fr"])
def test_unknown_specifiers_list_the_installed_ones(built_wn: Path, spec: str) -> None:
    with pytest.raises(LexiconMissingError) as info:
        WnLexicon(spec, wn_dir=built_wn)
    message = str(info.value)
    assert f"{spec!r} is not installed" in message
    assert "installed: test-en:3.0+1a2b3c, test-fr:3.0+4d5e6f" in message
    if spec.startswith("test-fr"):
        assert "pass test-fr (the installed version) or test-fr:3.0+4d5e6f" in message


def test_a_version_prefix_with_two_builds_is_ambiguous(built_wn: Path, tmp_path: Path) -> None:
    text = MINI_LMF.read_text(encoding="utf-8")
    (tmp_path / "a.xml").write_text(text.replace('version="1">', 'version="3.0+aaaa">', 1), encoding="utf-8")
    (tmp_path / "b.xml").write_text(text.replace('version="1">', 'version="3.0+bbbb">', 1), encoding="utf-8")
    wn_dir = install_wordnets(tmp_path / "wn", MINI_ILI, tmp_path / "a.xml", tmp_path / "b.xml")
    with pytest.raises(LexiconError, match="ambiguous.*test-en:3.0\\+aaaa, test-en:3.0\\+bbbb"):
        WnLexicon("test-en:3.0", wn_dir=wn_dir)
    assert WnLexicon("test-en:3.0+bbbb", wn_dir=wn_dir).selected_specs == ["test-en:3.0+bbbb"]


def test_lookup_uses_the_given_specs_in_their_language(built_wn: Path) -> None:
    res = runner.invoke(app, ["lookup", "chien", "--specs", "test-fr", "--wn-dir", str(built_wn), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["lang"] == "fr" and out["lexicons"] == ["test-fr:3.0+4d5e6f"]
    assert out["gloss_lexicons"] == ["test-en:3.0+1a2b3c"]
    assert out["related"] == ["canis familiaris", "chiot", "chien de chasse"]
    assert out["definition_lang"] == "en"  # the French synset has no gloss: the English one, labelled
    # --specs with several languages: both are looked in, in --lang's order when given
    res = runner.invoke(app, ["lookup", "dog", "--specs", "test-fr,test-en", "--wn-dir", str(built_wn), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["lang"] == "en"
    line = one_error_line(runner.invoke(app, ["lookup", "dog", "--specs", "test-fr", "--lang", "en",
                                              "--wn-dir", str(built_wn)]))
    assert "--lang en is not a language of --specs test-fr" in line and "--lang fr" in line
    line = one_error_line(runner.invoke(app, ["lookup", "dog", "--specs", "test-fr", "--backend", "tsv",
                                              "--tsv", str(DATA / "mini-en-fr.tsv")]))
    assert "--specs selects wn lexicons" in line


def test_coverage_uses_the_given_specs_in_their_language(built_wn: Path, tmp_path: Path) -> None:
    (tmp_path / "fr").mkdir()
    (tmp_path / "fr" / "train.txt").write_text("le chien et le chiot\n", encoding="utf-8")
    res = runner.invoke(app, ["coverage", "--data", str(tmp_path), "--specs", "test-fr:3.0", "--wn-dir",
                              str(built_wn), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [row["lang"] for row in out["coverage"]] == ["fr"] and out["coverage"][0]["entry_pct"] == 50.0
    line = one_error_line(runner.invoke(app, ["coverage", "--data", str(tmp_path), "--specs", "test-fr",
                                              "--langs", "en", "--wn-dir", str(built_wn)]))
    assert "--langs en is not a language of --specs test-fr" in line


def test_text_output_keeps_multiword_relatives_apart_and_labels_glosses(built_wn: Path) -> None:
    res = runner.invoke(app, ["lookup", "chien", "--lang", "fr", "--wn-dir", str(built_wn)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == "chien (fr; test-fr:3.0+4d5e6f; glosses also from test-en:3.0+1a2b3c)"
    head, _, related = lines[1].partition(": ")
    assert head == "  related (3, GroC uses 3)"
    assert related.split(" | ") == ["canis familiaris", "chiot", "chien de chasse"]
    assert lines[2].startswith("  definition (en, 16 tokens, GroC uses 10): a member of the genus Canis")
    english = runner.invoke(app, ["lookup", "puppy", "--wn-dir", str(built_wn)])
    assert english.stdout.splitlines()[2].startswith("  definition (en, ")
    missing = runner.invoke(app, ["lookup", "zzz", "--lang", "fr", "--wn-dir", str(built_wn)])
    assert missing.stdout.splitlines() == ["zzz (not found in fr; test-fr:3.0+4d5e6f; glosses also from "
                                           "test-en:3.0+1a2b3c)", "  related (0, GroC uses 0): -", "  definition: -"]


def test_every_backend_labels_its_glosses(built_wn: Path, tmp_path: Path) -> None:
    tsv = tmp_path / "l.tsv"
    tsv.write_text("fr\tchat\tdefinition\tun petit félin\nfr\tchien\trelated\tloup|chien de garde\n",
                   encoding="utf-8")
    service = LexiconService(TsvLexicon(tsv))
    assert service.lookup("chat", ["fr"]).definition_lang == "fr"
    assert service.lookup("chien", ["fr"]).definition_lang is None  # no definition, no language
    wn = LexiconService(WnLexicon(langs=["en", "fr"], wn_dir=built_wn))
    assert wn.lookup("chien", ["fr"]).definition_lang == "en"
    assert wn.lookup("dog", ["en"]).definition_lang == "en"


def test_help_names_specifiers_that_exist() -> None:
    """No help offers omw-en:1.4, which `lexicon import` never installs."""
    for command in (["train"], ["align"], ["lexicon", "lookup"], ["lexicon", "coverage"]):
        res = runner.invoke(cli_app, [*command, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0 and ":1.4" not in res.output, command
        assert "lexicon info" in " ".join(res.output.split()), command
