"""A small demo namespace so a newcomer sees a real packet within a minute of `make run`.

Everything here is written to the namespace `demo` with source `demo:*`, and only when that
namespace does not exist yet — restarting never duplicates it and never touches other data.
"""

from __future__ import annotations

import logging

from palimpsest.api.memory import Memory
from palimpsest.api.runtime import Runtime
from palimpsest.schema.errors import NotFoundError

DEMO_NAMESPACE = "demo"

DEMO_CLAIMS: list[list[dict[str, object]]] = [
    [
        {"content": "The payments API stores its data on database host db-7.", "source": "demo:runbook",
         "claim_key": "payments.db"},
        {"content": "Deploys to production are allowed on weekdays.", "source": "demo:change-policy",
         "claim_key": "deploy.window"},
        {"content": "The on-call engineer for payments this week is Priya.", "source": "demo:pagerduty",
         "claim_key": "payments.oncall"},
        {"content": "Checkout p99 latency budget is 800 ms.", "source": "demo:slo-doc", "claim_key": "checkout.p99"},
    ],
    [
        {"content": "Payments API moved to database host db-9 after incident 142.", "source": "demo:incident-142",
         "claim_key": "payments.db"},
        {"content": "Production deploys are frozen until the end of the quarter.", "source": "demo:cab-minutes",
         "claim_key": "deploy.window"},
    ],
    [
        {"content": "Checkout p99 latency budget was tightened to 400 ms.", "source": "demo:slo-review",
         "claim_key": "checkout.p99"},
    ],
]


def load_demo(runtime: Runtime) -> None:
    memory = Memory(runtime, DEMO_NAMESPACE)
    try:
        memory.stats()
        return  # already there
    except NotFoundError:
        pass
    for batch in DEMO_CLAIMS:
        memory.ingest_many(batch)
    logging.getLogger("palimpsest").info("loaded the demo namespace 'demo' (sources 'demo:*')")
