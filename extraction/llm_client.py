"""The two things every LLM caller here needs from litellm + instructor: a JSON-mode client (built on
first use, so importing a module never imports litellm) and a response's price."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def json_client(completion: Callable[..., Any] | None = None) -> Any:
    """An instructor client over `completion` (litellm's by default; tests pass their own), with the
    local cost map so that pricing never fetches one over the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import instructor
    import litellm

    litellm.suppress_debug_info = True
    return instructor.from_litellm(completion or litellm.completion, mode=instructor.Mode.JSON)


def price(raw: Any, model: str) -> float | None:
    """The USD cost of one raw response; None when litellm cannot price the model (a local server):
    say "unpriced", never guess."""
    try:
        import litellm

        return float(litellm.completion_cost(completion_response=raw, model=model))
    except Exception:
        return None
