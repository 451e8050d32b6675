"""The wn backend's on-disk cache (``WnLexicon(cache_dir=...)``): same answers, never stale, self-healing."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexicons.wn_backend import WnLexicon
from polyglot_groc.commands.lexicon import app
from tests.test_lexicons import EN_WORDS, FR_WORDS

WORDS = {"en": [*EN_WORDS, "dogs", "geese", "hound_dog", "Dog", "nonsense"], "fr": [*FR_WORDS, "inconnu"]}


def _answers(lex: WnLexicon) -> dict[str, list[list[str]]]:
    return {f"{lang}/{w}": [lex.related(w, lang), lex.definition(w, lang)] for lang, ws in WORDS.items() for w in ws}


def _cache_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.wnlex"))


def _is_cached(lex: WnLexicon) -> bool:
    from lexicons.wn_mirror import CachedColumn

    return all(isinstance(d.synset_pos, CachedColumn) for d in lex._data.values())


def test_cache_hit_answers_exactly_as_a_rebuild(wn_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fresh = _answers(WnLexicon(wn_dir=wn_dir))
    first = WnLexicon(wn_dir=wn_dir, cache_dir=cache)  # builds and writes the cache
    assert _answers(first) == fresh
    assert len(_cache_files(cache)) == 2  # test-en and test-fr
    warm = WnLexicon(wn_dir=wn_dir, cache_dir=cache)
    assert _answers(warm) == fresh and _is_cached(warm)  # read row by row from the cache files
    assert warm.translation_pairs(["dog", "puppy"], "en", ["chien", "chiot"], "fr") == \
        WnLexicon(wn_dir=wn_dir).translation_pairs(["dog", "puppy"], "en", ["chien", "chiot"], "fr")
    assert warm.lemmas("en") == WnLexicon(wn_dir=wn_dir).lemmas("en")
    warm.load()  # bulk use reads the cache into memory: same answers
    assert not _is_cached(warm) and _answers(warm) == fresh


def test_changed_database_invalidates_the_cache(wn_dir: Path, tmp_path: Path) -> None:
    db_dir, cache = tmp_path / "wn", tmp_path / "cache"
    shutil.copytree(wn_dir, db_dir)
    before = WnLexicon(wn_dir=db_dir, cache_dir=cache).definition("dog", "en")
    old_files = _cache_files(cache)
    with sqlite3.connect(db_dir / "wn.db") as conn:  # a re-import that changes one gloss
        conn.execute("UPDATE definitions SET definition = 'a changed gloss' WHERE definition LIKE 'a member of%'")
    conn.close()
    after = WnLexicon(wn_dir=db_dir, cache_dir=cache)
    assert before != ["a", "changed", "gloss"]
    assert after.definition("dog", "en") == ["a", "changed", "gloss"]
    assert _answers(after) == _answers(WnLexicon(wn_dir=db_dir))
    new_files = _cache_files(cache)
    assert len(new_files) == 2 and not set(new_files) & set(old_files)  # stale files removed


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_cache_file_is_rebuilt_with_a_warning(
    wn_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    cache = tmp_path / "cache"
    fresh = _answers(WnLexicon(wn_dir=wn_dir, cache_dir=cache))
    path = next(p for p in _cache_files(cache) if p.name.startswith("test-en"))
    blob = bytearray(path.read_bytes())
    if damage == "flip":
        blob[len(blob) // 2] ^= 0xFF
    elif damage == "truncate":
        blob = blob[: len(blob) // 3]
    else:
        blob = bytearray(b"not a database" * 10)
    path.write_bytes(bytes(blob))
    with caplog.at_level(logging.WARNING, logger="lexicons.wn_backend"):
        lex = WnLexicon(wn_dir=wn_dir, cache_dir=cache)
        assert _answers(lex) == fresh
    assert any("damaged wordnet cache" in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records)
    assert len(_cache_files(cache)) == 2
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lexicons.wn_backend"):  # the rebuilt file is good
        again = WnLexicon(wn_dir=wn_dir, cache_dir=cache)
        assert _answers(again) == fresh and _is_cached(again)
    assert not caplog.records


def test_cli_lookup_uses_the_cache(wn_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYGLOT_GROC_CACHE", str(tmp_path / "c"))
    runner = CliRunner()
    args = ["lookup", "chien", "--lang", "fr", "--wn-dir", str(wn_dir), "--json"]
    cold, warm = runner.invoke(app, args), runner.invoke(app, args)
    assert cold.exit_code == 0 and warm.exit_code == 0, cold.output
    assert json.loads(cold.stdout) == json.loads(warm.stdout)
    assert json.loads(warm.stdout)["related"] == ["canis familiaris", "chiot", "chien de chasse"]
    assert len(_cache_files(tmp_path / "c" / "wordnets")) == 2  # fr, and en for its glosses


def test_warm_cli_lookup_imports_no_heavy_module(wn_dir: Path, tmp_path: Path) -> None:
    # What keeps a warm `lexicon lookup` well under a second: no numpy, torch, NLTK or wn import.
    root = Path(__file__).resolve().parent.parent
    code = (
        "import sys\n"
        "from polyglot_groc.cli import app\n"
        "try:\n"
        f"    app(['lexicon', 'lookup', 'dog', '--lang', 'en', '--json', '--wn-dir', {str(wn_dir)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('numpy', 'torch', 'nltk', 'wn', 'scipy', 'faiss') if m in sys.modules))\n"
    )
    env = {**os.environ, "POLYGLOT_GROC_CACHE": str(tmp_path / "c"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                           check=True) for _ in range(2)]
    assert '"related"' in runs[1].stdout
    assert runs[1].stdout.strip().splitlines()[-1] == "[]", runs[1].stdout[-300:]
