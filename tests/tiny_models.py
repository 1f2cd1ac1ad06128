"""Tiny random checkpoints the tests build, so model plumbing is tested without downloaded weights."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def save_tiny_bert(out: Path, words: Sequence[str], id2label: dict[int, str], *, max_positions: int = 64,
                   seed: int = 0) -> Path:
    """A random 2-layer BERT sequence classifier with the given labels and a vocabulary of `words`,
    saved to `out` like a hub checkpoint (loadable by sentence-transformers' CrossEncoder)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    # Once each: a repeated word would leave an id past the vocabulary's size (an out-of-range embedding).
    vocab = dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words])
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=max_positions, num_labels=len(id2label),
                     id2label=id2label, label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(seed)
    BertForSequenceClassification(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
