"""Data: CoNLL-U reading and writing, treebank files, vocabularies, and batching."""
