"""Language registry, tokenisation, corpora, batching and bilingual dictionaries."""
