"""Evaluation maths on plain arrays: perplexity loop, Procrustes/CSLS/P@k, word similarity."""
