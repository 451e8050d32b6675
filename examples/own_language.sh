#!/usr/bin/env bash
# Bring your own language: Cebuano (ceb), which polyglot-groc does not know, from its ~2,000-word
# Universal Declaration of Human Rights in the data bundle (udhr2.zip), trained alone and together
# with Tagalog (its related language, built in) and English; evaluated, exported, and aligned to
# English with a small hand-made dictionary. The language is defined in own_language/languages.toml
# and its wordnet is own_language/ceb-wordnet.xml (20 hand-made synsets, CC0): no code is edited.
#
#   POLYGLOT_GROC_DATA=/path/to/data bash examples/own_language.sh
#
# Sizes come from the environment: STEPS (training steps per model), TOKENS (training tokens of
# Tagalog and English each; Cebuano is the whole UDHR), ENGLISH_WORDNET=0 to skip importing
# Princeton WordNet (~40 s; without it Cebuano words get no English glosses), W (output folder),
# POLYGLOT_GROC (the command, default polyglot-groc) and PYTHON (default python3).
# tests/test_own_language_example.py runs this script with STEPS=4 TOKENS=3000 ENGLISH_WORDNET=0.
set -euo pipefail
export POLYGLOT_GROC_DATA="${POLYGLOT_GROC_DATA:?set POLYGLOT_GROC_DATA to the data bundle folder}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/own_language"
W=${W:-work-ceb}                     # everything is written under $W
STEPS=${STEPS:-600}                  # training steps per model
TOKENS=${TOKENS:-20000}              # training tokens of each helper language (tl, en)
ENGLISH_WORDNET=${ENGLISH_WORDNET:-1}
PYTHON=${PYTHON:-python3}
pg() { ${POLYGLOT_GROC:-polyglot-groc} "$@"; }
# The language registry: the built-in ten plus Cebuano. --languages FILE works on every command too.
export POLYGLOT_GROC_LANGUAGES="$HERE/languages.toml"
mkdir -p "$W"

# 1. Corpora. Cebuano from your own file (here: the UDHR, one paragraph per line), split 80/10/10
#    by tokens, held-out text last; Tagalog and English sampled from the bundle's shared text.
"$PYTHON" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("udhr2/ceb.txt"))' \
    "$POLYGLOT_GROC_DATA/text/nltk_data/udhr2.zip" > "$W/ceb-udhr.txt"
pg data prepare --lang ceb --input "$W/ceb-udhr.txt" --text paragraphs --valid 0.1 --test 0.1 \
    --out "$W/corpora" --overwrite > "$W/prepare-ceb.json"
pg data prepare --langs tl,en --out "$W/corpora" --train-tokens "$TOKENS" --eval-tokens $((TOKENS / 10)) \
    --overwrite > "$W/prepare-tl-en.json"

# 2. The wordnet: your WN-LMF file, installed under wn's own specifier (ceb-mini:1.0, printed);
#    English glosses only because languages.toml says fallback = "en" (--fallback none refuses them).
pg lexicon import "$HERE/ceb-wordnet.xml" --wn-dir "$W/wn" > "$W/wordnet-ceb.json"
if [ "$ENGLISH_WORDNET" = 1 ]; then
    pg lexicon import --langs en --wn-dir "$W/wn" > "$W/wordnet-en.json"
fi
pg lexicon lookup tawo --lang ceb --wn-dir "$W/wn"
pg lexicon lookup tawo --lang ceb --wn-dir "$W/wn" --fallback none

# 3. Train GroC on Cebuano alone, with its related language (Tagalog), and with Tagalog and English;
#    a tied lookup baseline at the same budget; and GroC with the Cebuano wordnet. Cebuano has ~1/12
#    of Tagalog's text: the proportional schedule would give it ~7% of a polyglot model's batches,
#    so the polyglot runs sample languages by temperature (shares ~ size^(1/5); benchmarks/own_language.py).
EVAL=$(( STEPS / 12 > 0 ? STEPS / 12 : 1 ))  # validate 12 times; the best checkpoint is kept
train() { pg train --data "$W/corpora" --size small --max-steps "$STEPS" --max-epochs 100000 \
              --set train.eval_every="$EVAL" --overwrite "$@" > /dev/null; }
mix=(--schedule temperature --set data.temperature=5)
train --langs ceb                                  --out "$W/runs/ceb"
train --langs ceb --with related "${mix[@]}"       --out "$W/runs/ceb+tl"
train --langs ceb --with related,en "${mix[@]}"    --out "$W/runs/ceb+tl+en"
train --langs ceb --with related,en "${mix[@]}"    --out "$W/runs/ceb+tl+en-tied" --model tied
train --langs ceb --model groc-lex --wn-dir "$W/wn" --out "$W/runs/ceb-lex"
pg runs list "$W/runs"

# 4. Test perplexity of every run (the runs recorded Cebuano's entry: no languages file needed now)
for run in ceb ceb+tl ceb+tl+en ceb+tl+en-tied ceb-lex; do
    POLYGLOT_GROC_LANGUAGES= pg evaluate "$W/runs/$run" --split test > "$W/eval-$run.json"
done

# 5. Embeddings: the polyglot model's Cebuano and English vocabularies, and unseen Cebuano words
pg export "$W/runs/ceb+tl+en" --lang ceb --vocab --out "$W/ceb.vec" --overwrite
pg export "$W/runs/ceb+tl+en" --lang en --vocab --out "$W/en.vec" --overwrite
printf 'katungod\nkatungdanan\nmanagsamang\n' > "$W/words.ceb.txt"
pg export "$W/runs/ceb+tl+en" --lang ceb --words "$W/words.ceb.txt" --out "$W/unseen.ceb.vec" --overwrite

# 6. Align Cebuano onto English with your dictionary (hand-made, own_language/ceb-en.*.txt): the
#    pairs both vocabularies hold; Procrustes + CSLS refinement, P@1/5/10 on the held-out pairs
pg align --src "$W/ceb.vec" --tgt "$W/en.vec" --train-dict "$HERE/ceb-en.train.txt" \
    --eval-dict "$HERE/ceb-en.test.txt" --refine 2 --out "$W/align" --overwrite > /dev/null

# 7. The figures: test perplexity of Cebuano in each run
"$PYTHON" - "$W" <<'EOF'
import json, pathlib, sys
w = pathlib.Path(sys.argv[1])
for run in ("ceb", "ceb+tl", "ceb+tl+en", "ceb+tl+en-tied", "ceb-lex"):
    ppl = json.loads((w / f"eval-{run}.json").read_text())["perplexity"]
    print(f"{run:16s} " + "  ".join(f"{lang} {value:8.1f}" for lang, value in ppl.items()))
EOF
