"""A benchmark row named "+ rerank" must be a reranked ranking.

The rerank stage degrades to the fused ranking when its model cannot be loaded or called
(`completeness.rerank_unavailable`, graph/recall/rerank.py): right for a service, wrong for a
measurement, where a mistyped `--rerank-model` would report the fused ranking under the reranker's
name. So the benchmarks pass every packet through `require_rerank` (only a policy that asks for a
rerank can set the flag, so other modes pass untouched).
"""

from __future__ import annotations

from collections.abc import Iterable

from palimpsest.schema.models import ContextPacket


class RerankNotRunError(SystemExit):
    """A mode that asks for a rerank got a packet the reranker did not score."""


def require_rerank(mode: str, packets: Iterable[ContextPacket]) -> None:
    """Stop the run when any of `packets` says its reranker was unavailable."""
    for packet in packets:
        if packet.completeness.rerank_unavailable:
            raise RerankNotRunError(f"mode {mode!r}: the reranker could not score (see the log: the model could "
                                    "not be loaded or called), so this row would be the fused ranking; check "
                                    "--rerank-model")


__all__ = ["RerankNotRunError", "require_rerank"]
