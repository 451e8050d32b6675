"""Train, evaluate, export and align through the Python API: the README's workflow without a shell.

    python examples/python_api.py --out runs/api-example [--steps 60] [--threads 2]

It trains GroC on the bundled en+fr sample, evaluates it in domain and on the other language's
sentences treated as new text (open vocabulary), exports both languages' embeddings plus a few
words the model never saw, and aligns English onto French with the sample's dictionaries. Every
step is one call of ``polyglot_groc`` and returns a result object; the script prints a summary.
tests/test_python_api_example.py runs it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polyglot_groc as pg

SAMPLE = Path(__file__).resolve().parent / "sample"


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/api-example"), help="folder for everything written")
    parser.add_argument("--steps", type=int, default=60, help="training steps")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    args = parser.parse_args(argv)
    out: Path = args.out

    # 1. Train a small polyglot GroC model; overrides are data (dotted keys to Python values).
    run = out / "enfr"
    trained = pg.train(out=run, langs=["en", "fr"], data=SAMPLE, size="small", max_steps=args.steps,
                       overrides={"train.eval_every": args.steps}, threads=args.threads, overwrite=True)

    # 2. Perplexity in domain, then open vocabulary on text given as another corpus.
    inside = pg.evaluate(run=run, split="test", threads=args.threads)
    other = pg.evaluate(run=run, split="test", data=SAMPLE, threads=args.threads)

    # 3. Embeddings: each language's vocabulary, and words the model never saw (GroC composes them).
    en = pg.export(run=run, lang="en", vocab=True, out=out / "en.vec", overwrite=True)
    fr = pg.export(run=run, lang="fr", vocab=True, out=out / "fr.vec", overwrite=True)
    unseen = pg.export(run=run, lang="fr", words=["chatons", "ordinateurs", "aujourd'hui"],
                       out=out / "unseen.fr.vec", overwrite=True)

    # 4. Align English onto French (Procrustes + CSLS refinement), P@k on the held-out pairs.
    aligned = pg.align(src=en.out, tgt=fr.out,
                       train_dict=SAMPLE / "dict.en-fr.txt", eval_dict=SAMPLE / "dict.en-fr.test.txt",
                       refine=1, out=out / "align", overwrite=True, threads=args.threads)

    summary = {
        "steps": trained.to_dict()["steps"],
        "valid_perplexity": trained.to_dict()["best_valid_perplexity"],
        "test_perplexity": inside.to_dict()["perplexity"],
        "open_vocabulary": {lang: v["perplexity"] for lang, v in other.to_dict()["languages"].items()},
        "exported": {"en": en.exported, "fr": fr.exported, "unseen_composed": unseen.composed_unseen},
        "align_p_at_1_csls": aligned.to_dict()["precision"]["csls"]["precision_at_1"],
    }
    print(json.dumps(summary, indent=2, default=str))
    return summary


if __name__ == "__main__":
    main()
