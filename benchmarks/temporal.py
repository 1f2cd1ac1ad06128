"""Temporal recall benchmark: does recall return what is true *now* (or at revision R), not what used to be?

Why it is built this way:

* **Versions are near-paraphrases.** Every key (e.g. "patient Maria Okafor's warfarin dose") is written
  `--versions` times, each time with a new value and a different wording template. A similarity-only
  retriever cannot tell versions apart by meaning — they all answer the query equally well — so this is
  exactly the case where keeping only the current version has to come from the memory, not from the
  embedding model. Using several templates keeps an exact-wording match from deciding the winner.
* **Queries are phrased unlike any claim**, so top-1 depends on semantic retrieval rather than string
  overlap, and each query names its subject, so "the right key" is well defined.
* **Subjects are combinatorial and shared.** Keys are drawn from (subject × attribute) products over word
  lists in four domains (clinical, devops, legal, finance); one patient can have two medication keys, one
  service several SLO keys, and distractor claims (no `claim_key`) talk about the same subjects. That makes
  retrieval realistically crowded instead of trivially separable.
* **Rounds, not keys, drive the write order.** Round v writes version v of every key (shuffled, ≤1000 per
  `ingest_many` call, distractors spread over the rounds), the way a live system receives updates. The
  ingest results say which claim id was current after every store revision, which is the ground truth for
  both the "now" check and the as-of check; nothing is hard-coded.
* **Same process, same data, same Neo4j for both systems.** The plain-RAG baseline is top-k cosine over the
  very same vector search of the namespace's claims (graph.claims.index; no supersession, no status). So the
  only difference measured is what Palimpsest adds on top of the index.
* **Latency is comparable work.** Both systems embed the query on every call (Palimpsest's per-process
  query-embedding cache is bypassed here, since the baseline has none and each query would otherwise be
  embedded once and then served from memory), and both are timed with `time.perf_counter` around the
  whole call, after an untimed warm-up of the model and of both query paths. Systems alternate which
  goes first per query so neither always hits a warmer page cache.
* **Determinism is measured, not assumed:** two consecutive recalls per query and system; Palimpsest must
  return the same packet fingerprint, the baseline the same id list.
* **Seeded.** All randomness comes from `random.Random(seed)`-style generators, so a seed gives the same
  corpus, write order and as-of sample. (Claim ids are UUIDs, so exact tie-breaks may differ between runs.)

* **`--no-keys`: the same corpus without claim keys.** Nothing then tells the store which claims are
  versions of one fact; only inferred supersession (a policy option, run by the background worker) can
  hide the old versions. The corpus is written twice into two namespaces of the same Neo4j, by the same
  process, with inference OFF (the default policy) and ON, and the worker is run until caught up after
  every round, as a live system would. Besides accuracy and staleness it reports every inferred link
  classified against the ground truth: a link between versions of one key is right; anything else —
  above all the same attribute of another subject — is a false supersession. Its results go to
  `temporal-nokeys-*.json`; the keyed run's output is unchanged.

Run `python -m benchmarks.temporal --help`; `--quick` is a small smoke-sized run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import secrets
import string
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from palimpsest.graph.claims.index import vector_hits

DEFAULT_RESULTS_DIR = Path(__file__).resolve().parent / "results"
MAX_BATCH = 1000  # schema.limits.MAX_BATCH_ITEMS; repeated so the corpus code needs no Palimpsest import

BASELINE_CYPHER = (
    # The namespace's own claims only, as recall searches them (graph.claims.index).
    "MATCH (st:Store {namespace: $ns}) " + vector_hits("st", "$vec", "$n") + "WITH node, score "
    "RETURN node.id AS id, node.content AS content, node.claim_key AS claim_key, score "
    "ORDER BY score DESC, node.id LIMIT $k"
)


# ------------------------------------------------------------------------------------------------
# Corpus: word lists and templates
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attribute:
    """One kind of fact about a subject. Templates use {s} (subject), {v} (value) and `fields`."""

    slug: str
    label: str
    claims: tuple[str, ...]
    queries: tuple[str, ...]
    values: tuple[str, ...]
    fields: tuple[tuple[str, str], ...] = ()

    def render(self, template: str, subject: str, value: str = "") -> str:
        return template.format(s=subject, sp=possessive(subject), v=value, **dict(self.fields))


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


@dataclass(frozen=True)
class Domain:
    name: str
    subjects: tuple[str, ...]
    attributes: tuple[Attribute, ...]
    sources: tuple[str, ...]
    subject_distractors: tuple[str, ...]
    generic_distractors: tuple[str, ...]
    slots: tuple[tuple[str, tuple[str, ...]], ...]


def _product(*parts: Sequence[str], sep: str = " ") -> tuple[str, ...]:
    out: list[str] = [""]
    for part in parts:
        out = [f"{a}{sep}{b}" if a else b for a in out for b in part]
    return tuple(out)


DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

# ---- clinical ----------------------------------------------------------------------------------
_FIRST = ("Maria", "James", "Aisha", "Tomasz", "Priya", "Daniel", "Yuki", "Fatima", "Lucas", "Ingrid",
          "Kwame", "Sofia", "Hiroshi", "Elena", "Mateo", "Grace", "Omar", "Chloe", "Ravi", "Nadia")
_LAST = ("Okafor", "Lindqvist", "Haddad", "Kowalski", "Raman", "Whitfield", "Tanaka", "Benali", "Moreau",
         "Svensson", "Mensah", "Rossi", "Nakamura", "Petrova", "Alvarez", "Osei", "Farouk", "Dubois", "Iyer",
         "Brennan")
_DRUGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("warfarin", "mg daily", ("1", "2", "2.5", "3", "4", "5", "6", "7.5", "10")),
    ("metformin", "mg twice daily", ("250", "500", "750", "850", "1000")),
    ("lisinopril", "mg once daily", ("2.5", "5", "10", "20", "30", "40")),
    ("atorvastatin", "mg at night", ("10", "20", "40", "60", "80")),
    ("levothyroxine", "mcg every morning", ("25", "50", "75", "88", "100", "112", "125", "150")),
    ("insulin glargine", "units at bedtime", ("8", "10", "12", "14", "16", "20", "24", "30", "36")),
    ("prednisone", "mg daily", ("5", "10", "15", "20", "30", "40", "60")),
    ("amlodipine", "mg daily", ("2.5", "5", "7.5", "10")),
    ("furosemide", "mg daily", ("20", "40", "60", "80", "120")),
    ("sertraline", "mg daily", ("25", "50", "100", "150", "200")),
)


def _dose(drug: str, unit: str, amounts: tuple[str, ...]) -> Attribute:
    return Attribute(
        slug=f"{drug.replace(' ', '-')}-dose",
        label="{sp} {d} dose",
        claims=(
            "{sp} {d} dose is {v}.",
            "{D} for {s} was changed to {v}.",
            "Medication review: patient {s} should now take {d} {v}.",
            "The prescriber adjusted {sp} {d} to {v}.",
            "Current {d} order for {s}: {v}.",
            "Per the latest ward round, {s} receives {d} {v}.",
        ),
        queries=(
            "What {d} dosage is {s} currently on?",
            "How much {d} is patient {s} taking these days?",
            "Which {d} regimen has been prescribed for {s}?",
        ),
        values=tuple(f"{a} {unit}" for a in amounts),
        fields=(("d", drug), ("D", drug[0].upper() + drug[1:])),
    )


CLINICAL = Domain(
    name="clinical",
    subjects=_product(_FIRST, _LAST),
    attributes=tuple(_dose(*d) for d in _DRUGS),
    sources=("ehr-orders", "pharmacy-review", "ward-round-note", "discharge-summary"),
    subject_distractors=(
        "{s} has a follow-up appointment in {dept} on {day}.",
        "{s} reported an allergy to {allergen}.",
        "The emergency contact for {s} is their {rel}.",
        "Nurse note: {s} tolerated the morning walk well.",
        "{sp} blood pressure this morning was {bp}.",
        "{s} was admitted to ward {ward} on {day}.",
    ),
    generic_distractors=(
        "{D} levels should be rechecked after any change in therapy.",
        "{D} can interact with {other}; review the full medication list.",
        "Hand hygiene compliance on ward {ward} was {pct}% last month.",
        "The outpatient pharmacy closes at 8 pm on {day}s.",
    ),
    slots=(
        ("dept", ("cardiology", "nephrology", "endocrinology", "dermatology", "physiotherapy", "ophthalmology")),
        ("day", DAYS),
        ("allergen", ("penicillin", "latex", "shellfish", "sulfa drugs", "peanuts", "iodine contrast")),
        ("rel", ("daughter", "son", "spouse", "sister", "brother", "neighbour")),
        ("bp", ("128/82", "135/88", "118/76", "142/90", "121/79", "110/70")),
        ("ward", ("3B", "4A", "5C", "6D", "7E")),
        ("D", tuple(d[0][0].upper() + d[0][1:] for d in _DRUGS)),
        ("other", ("aspirin", "ibuprofen", "clarithromycin", "grapefruit juice", "St John's wort")),
        ("pct", ("88", "91", "94", "97")),
    ),
)

# ---- devops ------------------------------------------------------------------------------------
_SVC_PREFIX = ("checkout", "payments", "search", "inventory", "auth", "billing", "notifications", "catalog",
               "shipping", "recommendations", "ledger", "profile", "media", "pricing", "reporting")
_SVC_SUFFIX = ("api", "worker", "gateway", "scheduler")

DEVOPS = Domain(
    name="devops",
    subjects=_product(_SVC_PREFIX, _SVC_SUFFIX, sep="-"),
    attributes=(
        Attribute(
            slug="p99-latency-budget", label="the {s} service's p99 latency budget",
            claims=(
                "The p99 latency budget for the {s} service is {v}.",
                "The {s} service must now keep p99 latency under {v}.",
                "SLO update: {s} p99 latency budget set to {v}.",
                "The {s} service's 99th-percentile latency target was revised to {v}.",
                "Per the SRE review, the {s} service has a p99 latency budget of {v}.",
            ),
            queries=(
                "How fast must {s} answer at the 99th percentile?",
                "What tail-latency target applies to {s} right now?",
            ),
            values=tuple(f"{n} ms" for n in (100, 120, 150, 180, 200, 250, 300, 350, 400, 500, 600, 750)),
        ),
        Attribute(
            slug="replicas", label="the {s} service's production replica count",
            claims=(
                "The {s} service runs {v} replicas in production.",
                "The {s} deployment was scaled to {v} replicas.",
                "Production replica count for {s}: {v}.",
                "Deployment spec: {s} is pinned at {v} pods in production.",
            ),
            queries=(
                "How many production instances of {s} are running?",
                "What is the size of the {s} fleet in prod?",
            ),
            values=tuple(str(n) for n in (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24)),
        ),
        Attribute(
            slug="memory-limit", label="the {s} container memory limit",
            claims=(
                "The memory limit of the {s} container is {v}.",
                "The {s} pods were given a {v} memory limit.",
                "Resource change: {s} memory limit set to {v}.",
                "Containers of the {s} service may use at most {v} of memory.",
            ),
            queries=(
                "How much RAM can each {s} pod use?",
                "What memory cap is configured for {s}?",
            ),
            values=("256 MiB", "512 MiB", "768 MiB", "1 GiB", "1.5 GiB", "2 GiB", "3 GiB", "4 GiB", "6 GiB",
                    "8 GiB"),
        ),
        Attribute(
            slug="request-timeout", label="the {s} request timeout",
            claims=(
                "Upstream calls from {s} time out after {v}.",
                "The {s} request timeout is {v}.",
                "Config change: the {s} timeout was set to {v}.",
                "The {s} service now aborts requests that take longer than {v}.",
            ),
            queries=(
                "After how long does {s} give up on a slow request?",
                "What timeout is configured on {s}?",
            ),
            values=("2 s", "3 s", "5 s", "8 s", "10 s", "15 s", "20 s", "30 s", "45 s", "60 s"),
        ),
        Attribute(
            slug="rate-limit", label="the {s} rate limit",
            claims=(
                "The {s} service is rate-limited to {v} requests per second.",
                "The {s} rate limit is {v} req/s.",
                "Throttling for {s} was set to {v} requests per second.",
                "Clients may send the {s} service at most {v} requests each second.",
            ),
            queries=(
                "How many requests per second will {s} accept?",
                "What throttle applies to traffic into {s}?",
            ),
            values=("100", "200", "250", "500", "750", "1000", "1500", "2000", "3000", "5000"),
        ),
    ),
    sources=("sre-runbook", "slo-registry", "deploy-manifest", "incident-review"),
    subject_distractors=(
        "The {s} service is owned by the {team} team.",
        "The {s} service is deployed with {tool}.",
        "Logs from {s} are shipped to {sink}.",
        "The {s} service keeps its state in {dep}.",
        "The {s} service runs in {region}.",
        "On-call for {s} is handled by the {team} rotation.",
    ),
    generic_distractors=(
        "Canary deployments soak for {n} minutes before promotion.",
        "Incident {inc} was caused by an expired TLS certificate.",
        "The {team} team runs a game day every quarter in {region}.",
        "Deploy freezes start on {day} evenings before public holidays.",
    ),
    slots=(
        ("team", ("platform", "payments", "search", "identity", "growth", "data", "edge")),
        ("tool", ("Argo CD", "Helm", "Spinnaker", "Flux", "Terraform")),
        ("sink", ("Loki", "Elasticsearch", "Datadog", "Splunk")),
        ("dep", ("Postgres", "Redis", "Cassandra", "MySQL", "MongoDB")),
        ("region", ("eu-west-1", "us-east-1", "ap-southeast-2", "eu-central-1")),
        ("n", ("10", "15", "20", "30", "45")),
        ("inc", tuple(f"INC-{n}" for n in range(1040, 1100))),
        ("day", DAYS),
    ),
)

# ---- legal -------------------------------------------------------------------------------------
_PARTIES = ("Acme", "Borealis", "Cobalt", "Dunmore", "Everly", "Fairhaven", "Granite", "Halcyon", "Ironwood",
            "Juniper", "Keystone", "Lumen")
_CONTRACT_TYPES = ("supply", "licensing", "services", "distribution", "lease", "reseller")

LEGAL = Domain(
    name="legal",
    subjects=tuple(f"{a}–{b} {t} contract" for a in _PARTIES for b in _PARTIES if a != b for t in _CONTRACT_TYPES),
    attributes=(
        Attribute(
            slug="notice-period", label="the notice period in the {s}",
            claims=(
                "The notice period in the {s} is {v}.",
                "Under the {s}, either party must give {v} of notice to terminate.",
                "An amendment set the termination notice period of the {s} to {v}.",
                "Termination under the {s} now requires {v} of written notice.",
            ),
            queries=(
                "How much advance warning is needed to end the {s}?",
                "What termination notice does the {s} require?",
            ),
            values=("14 days", "30 days", "45 days", "60 days", "90 days", "120 days", "180 days"),
        ),
        Attribute(
            slug="liability-cap", label="the liability cap in the {s}",
            claims=(
                "Liability under the {s} is capped at {v}.",
                "The {s} limits each party's liability to {v}.",
                "The liability cap in the {s} was amended to {v}.",
                "Per the {s}, total damages may not exceed {v}.",
            ),
            queries=(
                "What is the maximum liability exposure in the {s}?",
                "How much can be claimed in damages under the {s}?",
            ),
            values=("$250,000", "$500,000", "$750,000", "$1 million", "$2 million", "$2.5 million", "$5 million",
                    "$10 million"),
        ),
        Attribute(
            slug="governing-law", label="the governing law of the {s}",
            claims=(
                "The {s} is governed by the laws of {v}.",
                "Governing law for the {s}: {v}.",
                "The parties amended the {s} so that the law of {v} applies.",
                "Disputes under the {s} are decided under the law of {v}.",
            ),
            queries=(
                "Which jurisdiction's law controls the {s}?",
                "Under whose law would a dispute about the {s} be resolved?",
            ),
            values=("New York", "Delaware", "California", "England and Wales", "Ontario", "Singapore",
                    "the Netherlands", "Switzerland"),
        ),
        Attribute(
            slug="payment-terms", label="the payment terms of the {s}",
            claims=(
                "Invoices under the {s} are payable within {v}.",
                "The {s} sets payment terms of {v} from the invoice date.",
                "Payment under the {s} is now due {v} after invoicing.",
                "Amended payment terms in the {s}: net {v}.",
            ),
            queries=(
                "How long does the buyer have to pay invoices under the {s}?",
                "What are the invoice due terms of the {s}?",
            ),
            values=("15 days", "30 days", "45 days", "60 days", "75 days", "90 days"),
        ),
        Attribute(
            slug="renewal-term", label="the renewal term of the {s}",
            claims=(
                "The {s} renews automatically for {v}.",
                "Each renewal of the {s} runs for {v}.",
                "The renewal term of the {s} was changed to {v}.",
                "Per the latest amendment, the {s} auto-renews in {v} increments.",
            ),
            queries=(
                "For how long does the {s} extend when it rolls over?",
                "What is the auto-renewal period of the {s}?",
            ),
            values=("6 months", "12 months", "18 months", "24 months", "36 months", "48 months", "60 months"),
        ),
    ),
    sources=("contract-repository", "counsel-memo", "amendment-log", "legal-ops-tracker"),
    subject_distractors=(
        "The {s} was signed in {city} in {year}.",
        "Counsel {counsel} manages the {s}.",
        "The {s} includes a {clause} clause.",
        "The {s} is filed in the contract repository under {ref}.",
    ),
    generic_distractors=(
        "Force majeure clauses rarely cover ordinary price increases; see memo {ref}.",
        "Outside counsel in {city} reviews every indemnity above the standard template.",
        "Contracts signed before {year} use the old {clause} wording.",
    ),
    slots=(
        ("city", ("London", "New York", "Zurich", "Singapore", "Toronto", "Amsterdam")),
        ("year", tuple(str(y) for y in range(2016, 2026))),
        ("counsel", ("Dana Whitcombe", "Rafael Ortiz", "Mei Lin", "Samuel Adeyemi", "Clara Novak")),
        ("clause", ("confidentiality", "non-solicitation", "audit rights", "most-favoured-nation pricing",
                    "exclusivity")),
        ("ref", tuple(f"CR-{n}" for n in range(1000, 1200))),
    ),
)

# ---- finance -----------------------------------------------------------------------------------
_CO_PREFIX = ("Northwind", "Bluewater", "Ironbridge", "Silverline", "Redwood", "Harborview", "Summit", "Crescent",
              "Oakmont", "Sterling", "Westbrook", "Evergreen")
_CO_SUFFIX = ("Traders", "Holdings", "Logistics", "Foods", "Systems", "Energy")


def _revenue(quarter: str) -> Attribute:
    return Attribute(
        slug=f"{quarter.lower()}-revenue-guidance", label="{q} revenue guidance of {s}",
        claims=(
            "{s} guides {q} revenue to {v}.",
            "{sp} {q} revenue guidance is {v}.",
            "{s} revised its {q} revenue outlook to {v}.",
            "Management at {s} now expects {q} revenue of about {v}.",
            "Updated guidance: {s} sees {q} sales near {v}.",
        ),
        queries=(
            "How much revenue does {s} expect for {q}?",
            "What top-line forecast has {s} given for {q}?",
        ),
        values=tuple(f"${n} million" for n in (85, 92, 104, 118, 126, 140, 155, 170, 185, 210, 240, 275)),
        fields=(("q", quarter),),
    )


FINANCE = Domain(
    name="finance",
    subjects=_product(_CO_PREFIX, _CO_SUFFIX),
    attributes=(
        *(_revenue(q) for q in ("Q1", "Q2", "Q3", "Q4")),
        Attribute(
            slug="dividend", label="the quarterly dividend of {s}",
            claims=(
                "{s} pays a quarterly dividend of {v} per share.",
                "{sp} board set the dividend at {v} a share.",
                "The quarterly dividend of {s} was changed to {v} per share.",
                "Shareholders of {s} now receive {v} per share each quarter.",
            ),
            queries=(
                "How much does {s} pay shareholders per share every quarter?",
                "What is the current per-share payout from {s}?",
            ),
            values=("$0.12", "$0.15", "$0.18", "$0.20", "$0.22", "$0.25", "$0.28", "$0.30", "$0.35", "$0.40"),
        ),
        Attribute(
            slug="credit-rating", label="the long-term credit rating of {s}",
            claims=(
                "{sp} long-term credit rating is {v}.",
                "The agency moved the issuer rating of {s} to {v}.",
                "{s} now carries a long-term debt rating of {v}.",
                "Credit update: {s} is rated {v} for long-term debt.",
            ),
            queries=(
                "How creditworthy is {s} according to the agencies?",
                "What grade does the long-term debt of {s} carry?",
            ),
            values=("AAA", "AA+", "AA", "AA-", "A+", "A", "A-", "BBB+", "BBB", "BBB-", "BB+"),
        ),
        Attribute(
            slug="capex-budget", label="the annual capex budget of {s}",
            claims=(
                "{s} plans capital expenditure of {v} this year.",
                "{sp} capex budget is {v}.",
                "{s} set its annual capex plan at {v}.",
                "Capital spending at {s} is budgeted at {v} for the year.",
            ),
            queries=(
                "How much does {s} intend to invest in capital projects this year?",
                "What is the yearly investment plan for plant and equipment at {s}?",
            ),
            values=tuple(f"${n} million" for n in (12, 18, 25, 30, 40, 55, 70, 90, 120, 150)),
        ),
    ),
    sources=("earnings-call", "press-release", "investor-deck", "analyst-note"),
    subject_distractors=(
        "{s} is headquartered in {city}.",
        "The chief financial officer of {s} is {cfo}.",
        "{s} reports quarterly earnings on a {day}.",
        "{s} listed its shares on the {exchange} in {year}.",
        "{s} is audited by {auditor}.",
    ),
    generic_distractors=(
        "Analysts expect {sector} margins to compress next year.",
        "Currency swings hurt {sector} exporters last quarter.",
        "The {exchange} closes early on the {day} before the holiday.",
    ),
    slots=(
        ("city", ("Chicago", "Seattle", "Boston", "Denver", "Atlanta", "Austin")),
        ("cfo", ("Helen Park", "Marcus Reed", "Anika Sharma", "Jonas Berg", "Lucia Ferreira")),
        ("day", DAYS),
        ("exchange", ("NYSE", "Nasdaq")),
        ("year", tuple(str(y) for y in range(1996, 2016))),
        ("auditor", ("Baker & Lowe", "Crane Partners", "Whitmore LLP", "Dalton Young")),
        ("sector", ("industrial", "consumer", "technology", "energy", "logistics")),
    ),
)

DOMAINS: tuple[Domain, ...] = (LEGAL, CLINICAL, FINANCE, DEVOPS)


# ------------------------------------------------------------------------------------------------
# Corpus generation
# ------------------------------------------------------------------------------------------------
@dataclass
class KeySpec:
    """One versioned fact. `ids`/`revisions` are filled from the ingest results, one per version."""

    index: int
    domain: str
    claim_key: str
    subject: str
    label: str
    query: str
    values: list[str]
    contents: list[str]
    sources: list[str]
    ids: list[str] = field(default_factory=list)
    revisions: list[int] = field(default_factory=list)

    @property
    def expected_value(self) -> str:
        return self.values[-1]

    @property
    def expected_content(self) -> str:
        return self.contents[-1]

    def current_at(self, revision: int) -> int | None:
        """Index of the version that was current at a store revision (None: not yet written)."""
        current: int | None = None
        for version, rev in enumerate(self.revisions):
            if rev <= revision:
                current = version
        return current


@dataclass
class Distractor:
    domain: str
    content: str
    source: str
    id: str | None = None
    revision: int | None = None


@dataclass
class Corpus:
    keys: list[KeySpec]
    distractors: list[Distractor]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _fill(template: str, slots: dict[str, tuple[str, ...]], rng: random.Random, subject: str = "") -> str:
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    values = {name: rng.choice(slots[name]) for name in sorted(names) if name not in ("s", "sp")}
    return template.format(s=subject, sp=possessive(subject), **values)


def _pick_values(rng: random.Random, pool: tuple[str, ...], n: int) -> list[str]:
    """n values, all distinct when the pool allows it, never the same value twice in a row."""
    if n <= len(pool):
        return rng.sample(pool, n)
    out = [rng.choice(pool)]
    while len(out) < n:
        out.append(rng.choice([v for v in pool if v != out[-1]]))
    return out


def generate_corpus(keys_per_domain: int, versions: int, distractors: int, seed: int) -> Corpus:
    rng = random.Random(seed)
    keys: list[KeySpec] = []
    subjects_used: dict[str, list[str]] = {}
    for domain in DOMAINS:
        combos = [(s, a) for s in domain.subjects for a in domain.attributes]
        if keys_per_domain > len(combos):
            raise ValueError(f"domain {domain.name} has only {len(combos)} distinct keys; asked for {keys_per_domain}")
        for subject, attr in rng.sample(combos, keys_per_domain):
            templates = list(attr.claims)
            rng.shuffle(templates)
            values = _pick_values(rng, attr.values, versions)
            contents = [attr.render(templates[v % len(templates)], subject, value) for v, value in enumerate(values)]
            keys.append(KeySpec(
                index=len(keys), domain=domain.name, claim_key=f"{domain.name}/{slug(subject)}/{attr.slug}",
                subject=subject, label=attr.render(attr.label, subject),
                query=attr.render(rng.choice(attr.queries), subject), values=values, contents=contents,
                sources=[rng.choice(domain.sources) for _ in values],
            ))
            subjects_used.setdefault(domain.name, []).append(subject)
    assert len({k.claim_key for k in keys}) == len(keys), "claim keys must be distinct"

    seen = {c for k in keys for c in k.contents}
    out: list[Distractor] = []
    for i in range(distractors):
        domain = DOMAINS[i % len(DOMAINS)]
        slots = dict(domain.slots)
        content = ""
        for _ in range(100):  # avoid exact duplicates; give up gracefully on tiny word lists
            if rng.random() < 0.7:
                subject = rng.choice(subjects_used[domain.name])
                content = _fill(rng.choice(domain.subject_distractors), slots, rng, subject)
            else:
                content = _fill(rng.choice(domain.generic_distractors), slots, rng)
            if content not in seen:
                break
        seen.add(content)
        out.append(Distractor(domain.name, content, rng.choice(domain.sources)))
    return Corpus(keys, out)


# ------------------------------------------------------------------------------------------------
# Measurement helpers
# ------------------------------------------------------------------------------------------------
def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (no interpolation): always a latency that was actually observed."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass
class Call:
    ids: list[str]
    ms: float
    signature: str  # what determinism compares: fingerprint (Palimpsest) or the id list (baseline)


@dataclass
class SystemRun:
    calls: dict[int, list[Call]] = field(default_factory=dict)  # key index -> consecutive calls

    def latencies(self) -> list[float]:
        return [c.ms for calls in self.calls.values() for c in calls]


class _FreshQueryEmbedder:
    """Embeds every query afresh, so both systems pay the same embedding cost on every call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.dimension: int = inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return cast(list[list[float]], self.inner.embed(texts))

    def embed_query(self, text: str) -> list[float]:
        return cast(list[float], self.inner.embed([text])[0])


def _parse(args_list: list[str] | None) -> argparse.Namespace:
    first_line = (__doc__ or "").strip().split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m benchmarks.temporal", description=first_line)
    p.add_argument("--keys", type=int, default=None, help="keys per domain (default 80; --quick: 10)")
    p.add_argument("--versions", type=int, default=4, help="versions per key (default 4)")
    p.add_argument("--distractors", type=int, default=None, help="claims without claim_key (default 400; --quick: 40)")
    p.add_argument("--k", type=int, default=5, help="items per recall (default 5)")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    p.add_argument("--asof-samples", type=int, default=None, help="(key, revision) as-of checks (default 200; "
                   "--quick: 30)")
    p.add_argument("--namespace", default=None, help="namespace to write into (default bench-temporal-<seed>-<hex>); "
                   "must be empty")
    p.add_argument("--keep", action="store_true", help="keep the namespace's nodes afterwards")
    p.add_argument("--fusion", choices=["linear", "rrf"], default=None,
                   help="register and use a policy with this fusion instead of the default policy")
    p.add_argument("--text-weight", type=float, default=1.0, help="text weight of that policy (default 1.0)")
    p.add_argument("--min-relevance", type=float, default=None,
                   help="register and use a policy with this relevance floor (policy min_relevance)")
    p.add_argument("--quick", action="store_true", help="smoke-test size: keys=10, distractors=40, asof-samples=30")
    p.add_argument("--no-keys", action="store_true", help="ingest without claim keys, twice: inferred supersession "
                   "OFF and ON (two namespaces), worker run after every round")
    p.add_argument("--inferred-min-similarity", type=float, default=None,
                   help="--no-keys: the ON policy's inferred_min_similarity (default: the Policy default)")
    p.add_argument("--inferred-min-confidence", type=float, default=None,
                   help="--no-keys: the ON policy's inferred_min_confidence (default: the Policy default)")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR, help="where JSON results go")
    a = p.parse_args(args_list)
    quick = {"keys": 10, "distractors": 40, "asof_samples": 30}
    full = {"keys": 80, "distractors": 400, "asof_samples": 200}
    for name, value in (quick if a.quick else full).items():
        if getattr(a, name) is None:
            setattr(a, name, value)
    for name in ("keys", "versions", "k"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    for name in ("distractors", "asof_samples"):
        if getattr(a, name) < 0:
            p.error(f"--{name.replace('_', '-')} must not be negative")
    if a.namespace is None:
        a.namespace = f"bench-temporal-{a.seed}-{secrets.token_hex(4)}"
    return a


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------
def run(args_list: list[str] | None = None) -> dict[str, Any]:
    """Generate, ingest, measure both systems, print the table, write JSON; return the results dict."""
    args = _parse(args_list)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.extraction.embeddings import Embedder

    started = time.perf_counter()
    load_start = list(os.getloadavg())
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    corpus = generate_corpus(args.keys, args.versions, args.distractors, args.seed)
    timings["generate_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    base_rt = Runtime.from_env()
    timings["runtime_s"] = time.perf_counter() - t0
    rt = Runtime(base_rt.settings, base_rt.driver, cast(Embedder, _FreshQueryEmbedder(base_rt.embedder)),
                 base_rt.schema_version, models=base_rt.models)
    ns, db = args.namespace, base_rt.settings.database
    namespaces = [f"{ns}-off", f"{ns}-on"] if args.no_keys else [ns]
    for name in namespaces:
        existing, _, _ = rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN count(s) AS n", ns=name,
                                                 database_=db)
        if existing[0]["n"]:
            base_rt.close()
            raise SystemExit(f"namespace {name!r} already holds data; choose an empty one")
    info = base_rt.info()
    args.policy_version = None
    try:
        if args.no_keys:
            results = _measure_no_keys(args, rt, timings)
        else:
            mem = Memory(rt, namespace=ns)
            if args.fusion or args.min_relevance is not None:
                from palimpsest.schema.models import Policy

                fusion = args.fusion or "linear"
                floor = args.min_relevance or 0.0
                args.policy_version = f"bench-{fusion}-tw{args.text_weight:g}-floor{floor:g}"
                mem.register_policy(Policy(version=args.policy_version, fusion=fusion,
                                           text_weight=args.text_weight, min_relevance=floor))
            results = _measure(args, corpus, rt, mem, timings)
        results["check"] = _check_all(rt, namespaces)
    finally:
        if not args.keep:
            t0 = time.perf_counter()
            for name in namespaces:
                _cleanup(rt, name)
            timings["cleanup_s"] = time.perf_counter() - t0
        base_rt.close()
    timings["total_s"] = time.perf_counter() - started
    results["timings"] = {k: round(v, 3) for k, v in timings.items()}
    results["environment"] = {
        "neo4j": info.neo4j_version, "edition": info.edition, "gds": info.gds_version,
        "embedding_model": rt.embedder.model_name, "python": platform.python_version(),
        "schema_version": rt.schema_version, "cpus": os.cpu_count(),
        # Latencies are wall-clock on a possibly shared machine; the load average says how shared.
        "loadavg_start": load_start, "loadavg_end": list(os.getloadavg()),
    }
    results["namespace_kept"] = bool(args.keep)
    print(render_no_keys_table(results) if args.no_keys else render_table(results))
    _write(results, args.results_dir, "temporal-nokeys" if args.no_keys else "temporal")
    return results


def _check_all(rt: Any, namespaces: Sequence[str]) -> dict[str, Any]:
    """`palimpsest check` on every namespace the run wrote: the store's invariants must hold after it."""
    from palimpsest.graph.claims.check import check

    out = {}
    for name in namespaces:
        report = check(rt.driver, name, rt.settings.database)
        out[name] = {"ok": report.ok, "claims": report.claims, "violations": report.violation_counts}
    return out


def _cleanup(rt: Any, ns: str) -> None:
    from palimpsest.graph.lifecycle.maintenance import drop_namespace

    drop_namespace(rt.driver, ns, database=rt.settings.database)


def _ingest(corpus: Corpus, mem: Any, versions: int, seed: int, *, keys: bool = True,
            after_round: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Round v writes version v of every key plus a share of the distractors, shuffled, in ≤1000 batches.

    `keys=False` leaves the claim keys out (the --no-keys mode); `after_round` runs after each round
    (there: the background worker, until caught up)."""
    rng = random.Random(seed + 1)
    chunks = [corpus.distractors[i::versions] for i in range(versions)]
    batches: list[dict[str, int]] = []
    round_revisions: list[int] = []
    mismatches = 0
    for version in range(versions):
        items: list[tuple[KeySpec | Distractor, int]] = [(k, version) for k in corpus.keys]
        items += [(d, version) for d in chunks[version]]
        rng.shuffle(items)
        for start in range(0, len(items), MAX_BATCH):
            batch = items[start:start + MAX_BATCH]
            payload = []
            for obj, v in batch:
                if isinstance(obj, KeySpec):
                    payload.append({"content": obj.contents[v], "source": obj.sources[v]}
                                   | ({"claim_key": obj.claim_key} if keys else {}))
                else:
                    payload.append({"content": obj.content, "source": obj.source})
            res = mem.ingest_many(payload)
            for (obj, v), item in zip(batch, res.items, strict=True):
                if not item.ok or item.id is None or item.revision is None:
                    raise RuntimeError(f"ingest failed for {payload[item.index]!r}: {item.error}")
                if isinstance(obj, KeySpec):
                    expected_prev = obj.ids[v - 1] if v > 0 and keys else None
                    mismatches += item.supersedes != expected_prev
                    obj.ids.append(item.id)
                    obj.revisions.append(item.revision)
                else:
                    obj.id, obj.revision = item.id, item.revision
            batches.append({"round": version + 1, "revision": res.revision, "items": len(batch)})
        round_revisions.append(batches[-1]["revision"])
        if after_round is not None:
            after_round(version)
    return {"batches": batches, "round_revisions": round_revisions, "supersession_mismatches": mismatches}


def _measure(args: argparse.Namespace, corpus: Corpus, rt: Any, mem: Any, timings: dict[str, float]) -> dict[str, Any]:
    k, ns, db = args.k, args.namespace, rt.settings.database

    t0 = time.perf_counter()
    write_log = _ingest(corpus, mem, args.versions, args.seed)
    timings["ingest_s"] = time.perf_counter() - t0
    final_revision = write_log["round_revisions"][-1]
    revisions = sorted({b["revision"] for b in write_log["batches"]})

    where: dict[str, tuple[int, int] | None] = {}  # claim id -> (key index, version), None for distractors
    content_of: dict[str, str] = {}
    for key in corpus.keys:
        for v, cid in enumerate(key.ids):
            where[cid] = (key.index, v)
            content_of[cid] = key.contents[v]
    for d in corpus.distractors:
        assert d.id is not None
        where[d.id] = None
        content_of[d.id] = d.content

    def baseline(query: str) -> Call:
        t = time.perf_counter()
        vec = rt.embedder.embed_query(query)
        records, _, _ = rt.driver.execute_query(BASELINE_CYPHER, n=k * 10, vec=vec, ns=ns, k=k, database_=db,
                                                routing_="r")
        ms = (time.perf_counter() - t) * 1000
        ids = [str(r["id"]) for r in records]
        return Call(ids, ms, "|".join(ids))

    def palimpsest(query: str, as_of: int | None = None) -> Call:
        t = time.perf_counter()
        packet = mem.recall(query, k=k, as_of_revision=as_of, policy_version=args.policy_version)
        ms = (time.perf_counter() - t) * 1000
        if as_of is not None and packet.store_revision != as_of:
            raise RuntimeError(f"as-of packet reports revision {packet.store_revision}, asked for {as_of}")
        return Call([it.id for it in packet.items], ms, str(packet.fingerprint))

    # Warm-up (untimed): the model's first single-text calls after the large ingest batches, the
    # driver's connections and the server's query plans. None of that is per-recall cost.
    t0 = time.perf_counter()
    for words in range(1, 21):
        rt.embedder.embed([" ".join(["warm-up"] * words)])
    for text in ("warm-up: what changed recently?", "warm-up: which limits apply?", "warm-up: who owns it?"):
        baseline(text)
        palimpsest(text)
    timings["warmup_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    systems: dict[str, Callable[[str], Call]] = {"plain_rag": baseline, "palimpsest": palimpsest}
    runs = {name: SystemRun() for name in systems}
    for key in corpus.keys:
        order = list(systems) if key.index % 2 == 0 else list(reversed(systems))
        for name in order:
            runs[name].calls[key.index] = [systems[name](key.query), systems[name](key.query)]
    timings["recall_s"] = time.perf_counter() - t0

    # As-of: (key, past revision) pairs at which the key already had a version.
    t0 = time.perf_counter()
    past = [r for r in revisions if r < final_revision] or revisions
    pairs = [(key.index, r) for key in corpus.keys for r in past if r >= key.revisions[0]]
    sample = random.Random(args.seed + 2).sample(pairs, min(args.asof_samples, len(pairs)))
    asof_calls = [(ki, r, palimpsest(corpus.keys[ki].query, r)) for ki, r in sample]
    timings["asof_s"] = time.perf_counter() - t0

    def describe(cid: str | None, key: KeySpec, expected_version: int) -> str:
        if cid is None:
            return "nothing returned"
        loc = where.get(cid)
        if cid not in where:
            return "a claim from another namespace"
        if loc is None:
            return "distractor"
        ki, v = loc
        if ki != key.index:
            return f"other key {corpus.keys[ki].claim_key} (version {v + 1})"
        if v == expected_version:
            return "expected"
        return f"{'superseded' if v < expected_version else 'future'} version {v + 1} of {len(key.ids)}"

    def failure(key: KeySpec, expected_version: int, got: str | None) -> dict[str, Any]:
        return {"claim_key": key.claim_key, "query": key.query, "expected": key.contents[expected_version],
                "got": content_of.get(got, "") if got else None, "got_kind": describe(got, key, expected_version)}

    metrics: dict[str, dict[str, Any]] = {}
    failures: dict[str, list[dict[str, Any]]] = {}
    per_key: list[dict[str, Any]] = []
    last = args.versions - 1
    for name, sr in runs.items():
        correct = stale = same = right_key = short = 0
        fails: list[dict[str, Any]] = []
        for key in corpus.keys:
            first, second = sr.calls[key.index]
            top = first.ids[0] if first.ids else None
            correct += top == key.ids[last]
            right_key += top is not None and (where.get(top) or (-1, -1))[0] == key.index
            stale += any(cid in key.ids[:last] for cid in first.ids)
            same += first.signature == second.signature
            short += len(first.ids) < k
            if top != key.ids[last]:
                fails.append(failure(key, last, top))
        n = len(corpus.keys)
        lat = sr.latencies()
        metrics[name] = {
            "temporal_accuracy": correct / n, "staleness_rate": stale / n, "determinism_rate": same / n,
            "right_key_at_1": right_key / n, "latency_ms_p50": percentile(lat, 50),
            "latency_ms_p95": percentile(lat, 95), "latency_ms_mean": sum(lat) / len(lat),
            "queries": n, "timed_calls": len(lat), "correct": correct, "stale": stale, "deterministic": same,
            "results_shorter_than_k": short, "asof_accuracy": None,
        }
        failures[name] = fails
    for key in corpus.keys:
        per_key.append({
            "claim_key": key.claim_key, "label": key.label, "query": key.query, "values": key.values,
            "expected_value": key.expected_value, "expected_content": key.expected_content,
            "revisions": key.revisions,
            "plain_rag_top1_ok": runs["plain_rag"].calls[key.index][0].ids[:1] == [key.ids[last]],
            "palimpsest_top1_ok": runs["palimpsest"].calls[key.index][0].ids[:1] == [key.ids[last]],
        })

    asof_ok = asof_leak = 0
    asof_fails: list[dict[str, Any]] = []
    for ki, r, call in asof_calls:
        key = corpus.keys[ki]
        expected = key.current_at(r)
        assert expected is not None
        top = call.ids[0] if call.ids else None
        asof_ok += top == key.ids[expected]
        asof_leak += any(cid in key.ids and cid != key.ids[expected] for cid in call.ids)
        if top != key.ids[expected]:
            asof_fails.append({**failure(key, expected, top), "as_of_revision": r})
    ns_asof = len(asof_calls)
    asof_lat = [c.ms for _, _, c in asof_calls]
    metrics["palimpsest"].update({
        "asof_accuracy": asof_ok / ns_asof if ns_asof else None,
        "asof_other_version_rate": asof_leak / ns_asof if ns_asof else None,
        "asof_samples": ns_asof, "asof_correct": asof_ok,
        "asof_latency_ms_p50": percentile(asof_lat, 50) if asof_lat else None,
        "asof_latency_ms_p95": percentile(asof_lat, 95) if asof_lat else None,
    })
    failures["palimpsest_asof"] = asof_fails

    rag, pal = metrics["plain_rag"], metrics["palimpsest"]
    n_versioned = len(corpus.keys) * args.versions
    return {
        "benchmark": "temporal",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "parameters": {
            "keys_per_domain": args.keys, "versions": args.versions, "distractors": args.distractors, "k": args.k,
            "seed": args.seed, "asof_samples": args.asof_samples, "namespace": ns, "quick": args.quick,
            "baseline_fetch_n": k * 10, "domains": [d.name for d in DOMAINS],
        },
        "counts": {
            "domains": len(DOMAINS), "keys": len(corpus.keys), "versioned_claims": n_versioned,
            "distractors": len(corpus.distractors), "claims_total": n_versioned + len(corpus.distractors),
            "batches": len(write_log["batches"]), "final_revision": final_revision,
            "round_revisions": write_log["round_revisions"], "asof_candidate_pairs": len(pairs),
            "supersession_mismatches": write_log["supersession_mismatches"],
        },
        "metrics": metrics,
        "ratios": {
            "latency_p50_palimpsest_over_rag": pal["latency_ms_p50"] / rag["latency_ms_p50"],
            "latency_p95_palimpsest_over_rag": pal["latency_ms_p95"] / rag["latency_ms_p95"],
        },
        "failures": {name: items[:50] for name, items in failures.items()},
        "failure_counts": {name: len(items) for name, items in failures.items()},
        "keys": per_key,
    }


# ------------------------------------------------------------------------------------------------
# --no-keys: the same corpus without claim keys, inferred supersession OFF vs ON
# ------------------------------------------------------------------------------------------------
NO_KEYS_ARMS = ("inference_off", "inference_on")

_INFERRED_CYPHER = (
    "MATCH (n:Claim {namespace: $ns})-[s:SUPERSEDES {reason: 'inferred'}]->(o:Claim {namespace: $ns}) "
    "RETURN n.id AS newer, o.id AS older, s.confidence AS confidence, s.kind AS kind, s.detail AS detail, "
    "s.revision AS revision ORDER BY s.revision, newer, older"
)


def classify_link(newer: tuple[int, int] | None, older: tuple[int, int] | None, keys: Sequence[KeySpec],
                  newer_text: str = "", older_text: str = "") -> str:
    """What an inferred link joined, by the corpus's ground truth. Only `same_key` is right.

    Distractor pairs restated with another value in the same wording ("… soak for 30 minutes" /
    "… for 45 minutes") are told apart as `distractor_restated`: textually they ARE a value update,
    so they are reported, but separately from links that no reading of the text supports.
    """
    if newer is not None and older is not None:
        kn, ko = keys[newer[0]], keys[older[0]]
        if kn.index == ko.index:
            return "same_key" if newer[1] > older[1] else "same_key_backwards"
        attr_n, attr_o = kn.claim_key.rsplit("/", 1)[1], ko.claim_key.rsplit("/", 1)[1]
        if kn.subject == ko.subject:
            return "same_subject_other_attribute"
        if attr_n == attr_o:
            return "same_attribute_other_subject"
        return "other_key"
    if newer is None and older is None:
        import difflib

        matcher = difflib.SequenceMatcher(None, newer_text.split(), older_text.split())
        # The same wording with one span swapped ("… audited by Dalton Young." / "… audited by Baker &
        # Lowe."): a restatement with another value, however long the value, as much as a ratio ≥ 0.75.
        changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        same = sum(i2 - i1 for op, i1, i2, _, _ in matcher.get_opcodes() if op == "equal")
        one_span = len(changes) == 1 and changes[0][0] == "replace" and same >= 4
        return "distractor_restated" if matcher.ratio() >= 0.75 or one_span else "distractor_distractor"
    return "distractor_and_key"


def _measure_no_keys(args: argparse.Namespace, rt: Any, timings: dict[str, float]) -> dict[str, Any]:
    """Both arms: ingest without keys (worker after every round), recall every key's query, classify links."""
    from palimpsest.api.memory import Memory
    from palimpsest.api.worker import WorkerConfig
    from palimpsest.schema.models import Policy

    k, db = args.k, rt.settings.database
    knobs: dict[str, Any] = {"fusion": args.fusion, "text_weight": args.text_weight} if args.fusion else {}
    thresholds = {name: value for name, value in (("inferred_min_similarity", args.inferred_min_similarity),
                                                  ("inferred_min_confidence", args.inferred_min_confidence))
                  if value is not None}
    policies = {"inference_off": Policy(version="bench-nokeys-off", **knobs),
                "inference_on": Policy(version="bench-nokeys-inferred", inferred_supersession=True, **knobs,
                                       **thresholds)}
    arms: dict[str, dict[str, Any]] = {}
    for arm in NO_KEYS_ARMS:
        ns = f"{args.namespace}-{'on' if arm == 'inference_on' else 'off'}"
        corpus = generate_corpus(args.keys, args.versions, args.distractors, args.seed)  # same data, own ids
        mem = Memory(rt, namespace=ns)
        policy = mem.register_policy(policies[arm])
        config = WorkerConfig(policy_version=policy.version, pagerank=False)
        passes: list[dict[str, Any]] = []

        def catch_up(_round: int, mem: Any = mem, config: WorkerConfig = config,
                     passes: list[dict[str, Any]] = passes) -> None:
            for _ in range(100):
                report = mem.run_projections(config)
                passes.append(report.as_dict())
                if report.caught_up:
                    return
            raise RuntimeError(f"the worker did not catch up on {mem.namespace!r}")

        t0 = time.perf_counter()
        log = _ingest(corpus, mem, args.versions, args.seed, keys=False, after_round=catch_up)
        timings[f"{arm}_ingest_and_worker_s"] = time.perf_counter() - t0
        arms[arm] = {"ns": ns, "corpus": corpus, "mem": mem, "policy": policy, "log": log, "passes": passes}

    def palimpsest(arm: str) -> Callable[[str], Call]:
        mem, version = arms[arm]["mem"], arms[arm]["policy"].version

        def call(query: str) -> Call:
            t = time.perf_counter()
            packet = mem.recall(query, k=k, policy_version=version)
            return Call([it.id for it in packet.items], (time.perf_counter() - t) * 1000, str(packet.fingerprint))
        return call

    def baseline(query: str) -> Call:
        t = time.perf_counter()
        vec = rt.embedder.embed_query(query)
        records, _, _ = rt.driver.execute_query(BASELINE_CYPHER, n=k * 10, vec=vec, ns=arms["inference_off"]["ns"],
                                                k=k, database_=db, routing_="r")
        ids = [str(r["id"]) for r in records]
        return Call(ids, (time.perf_counter() - t) * 1000, "|".join(ids))

    systems: dict[str, Callable[[str], Call]] = {"plain_rag": baseline, **{a: palimpsest(a) for a in NO_KEYS_ARMS}}
    data_of = {"plain_rag": "inference_off", "inference_off": "inference_off", "inference_on": "inference_on"}
    t0 = time.perf_counter()
    for words in range(1, 21):
        rt.embedder.embed([" ".join(["warm-up"] * words)])
    for text in ("warm-up: what changed recently?", "warm-up: which limits apply?", "warm-up: who owns it?"):
        for fn in systems.values():
            fn(text)
    timings["warmup_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    runs = {name: SystemRun() for name in systems}
    n_keys = len(arms["inference_off"]["corpus"].keys)
    for i in range(n_keys):
        order = list(systems) if i % 2 == 0 else list(reversed(systems))
        for name in order:
            query = arms[data_of[name]]["corpus"].keys[i].query
            runs[name].calls[i] = [systems[name](query), systems[name](query)]
    timings["recall_s"] = time.perf_counter() - t0

    last = args.versions - 1
    metrics: dict[str, dict[str, Any]] = {}
    failures: dict[str, list[dict[str, Any]]] = {}
    for name, sr in runs.items():
        corpus = arms[data_of[name]]["corpus"]
        content_of = {cid: key.contents[v] for key in corpus.keys for v, cid in enumerate(key.ids)}
        content_of.update({d.id: d.content for d in corpus.distractors if d.id})
        owner = {cid: key.index for key in corpus.keys for cid in key.ids}
        correct = stale = same = right_key = 0
        by_domain: dict[str, list[int]] = {}
        fails: list[dict[str, Any]] = []
        for key in corpus.keys:
            first, second = sr.calls[key.index]
            top = first.ids[0] if first.ids else None
            ok = top == key.ids[last]
            correct += ok
            right_key += top is not None and owner.get(top) == key.index
            is_stale = any(cid in key.ids[:last] for cid in first.ids)
            stale += is_stale
            same += first.signature == second.signature
            tally = by_domain.setdefault(key.domain, [0, 0, 0])
            tally[0] += 1
            tally[1] += ok
            tally[2] += is_stale
            if not ok:
                fails.append({"query": key.query, "expected": key.expected_content,
                              "got": content_of.get(top or ""), "stale_in_top_k": is_stale})
        lat = sr.latencies()
        metrics[name] = {
            "temporal_accuracy": correct / n_keys, "staleness_rate": stale / n_keys,
            "determinism_rate": same / n_keys, "right_key_at_1": right_key / n_keys,
            "latency_ms_p50": percentile(lat, 50), "latency_ms_p95": percentile(lat, 95),
            "queries": n_keys, "correct": correct, "stale": stale,
            "by_domain": {d: {"keys": t[0], "temporal_accuracy": t[1] / t[0], "staleness_rate": t[2] / t[0]}
                          for d, t in sorted(by_domain.items())},
        }
        failures[name] = fails[:50]

    inference = {arm: _inference_report(arms[arm]["corpus"], rt, arms[arm]["ns"], args.versions)
                 for arm in NO_KEYS_ARMS}
    corpus = arms["inference_on"]["corpus"]
    n_versioned = len(corpus.keys) * args.versions
    return {
        "benchmark": "temporal-nokeys",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "parameters": {
            "keys_per_domain": args.keys, "versions": args.versions, "distractors": args.distractors, "k": k,
            "seed": args.seed, "quick": args.quick, "namespaces": {a: arms[a]["ns"] for a in NO_KEYS_ARMS},
            "policies": {a: arms[a]["policy"].model_dump(mode="json") for a in NO_KEYS_ARMS},
            "baseline_fetch_n": k * 10, "domains": [d.name for d in DOMAINS], "worker_after_every_round": True,
        },
        "counts": {
            "domains": len(DOMAINS), "keys": len(corpus.keys), "versioned_claims": n_versioned,
            "distractors": len(corpus.distractors), "claims_total": n_versioned + len(corpus.distractors),
            "final_revision": {a: _revision(rt, arms[a]["ns"]) for a in NO_KEYS_ARMS},
            "worker_passes": {a: len(arms[a]["passes"]) for a in NO_KEYS_ARMS},
        },
        "metrics": metrics,
        "inference": inference,
        "worker": {a: _sum_passes(arms[a]["passes"]) for a in NO_KEYS_ARMS},
        "failures": failures,
    }


def _revision(rt: Any, ns: str) -> int:
    records, _, _ = rt.driver.execute_query("MATCH (s:Store {namespace: $ns}) RETURN s.revision AS r", ns=ns,
                                            database_=rt.settings.database)
    return int(records[0]["r"]) if records else 0


def _sum_passes(passes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    keys = ("batches", "subjects", "entities_created", "mentions_created", "inferred_pairs", "inferred_supersessions")
    out: dict[str, Any] = {key: sum(int(p.get(key, 0)) for p in passes) for key in keys}
    rejected: dict[str, int] = {}
    for p in passes:
        for reason, n in p.get("inferred_rejected", {}).items():
            rejected[reason] = rejected.get(reason, 0) + int(n)
    out["inferred_rejected"] = dict(sorted(rejected.items()))
    out["seconds"] = round(sum(float(p.get("seconds", 0.0)) for p in passes), 3)
    return out


def _inference_report(corpus: Corpus, rt: Any, ns: str, versions: int) -> dict[str, Any]:
    """Every inferred link in `ns`, classified; the false-supersession rates; how many versions were linked."""
    where: dict[str, tuple[int, int] | None] = {cid: (key.index, v) for key in corpus.keys
                                                for v, cid in enumerate(key.ids)}
    text: dict[str, str] = {cid: key.contents[v] for key in corpus.keys for v, cid in enumerate(key.ids)}
    for d in corpus.distractors:
        if d.id:
            where[d.id] = None
            text[d.id] = d.content
    records, _, _ = rt.driver.execute_query(_INFERRED_CYPHER, ns=ns, database_=rt.settings.database)
    links: list[dict[str, Any]] = []
    kinds: dict[str, int] = {}
    for r in records:
        newer, older = str(r["newer"]), str(r["older"])
        kind = classify_link(where.get(newer), where.get(older), corpus.keys, text.get(newer, ""),
                             text.get(older, ""))
        kinds[kind] = kinds.get(kind, 0) + 1
        loc_n, loc_o = where.get(newer), where.get(older)
        links.append({"kind": kind, "adjacent": bool(kind == "same_key" and loc_n and loc_o
                                                      and loc_n[1] - loc_o[1] == 1),
                      "newer": text.get(newer), "older": text.get(older), "confidence": r["confidence"],
                      "signal": r["kind"], "detail": r["detail"]})
    total = len(links)
    false_links = [link for link in links if link["kind"] != "same_key"]
    statuses, _, _ = rt.driver.execute_query("MATCH (c:Claim {namespace: $ns}) RETURN c.id AS id, c.status AS s",
                                             ns=ns, database_=rt.settings.database)
    status = {str(r["id"]): str(r["s"]) for r in statuses}
    superseded_by_other: set[str] = set()
    for r in records:
        newer, older = str(r["newer"]), str(r["older"])
        loc_n, loc_o = where.get(newer), where.get(older)
        if loc_o is None or loc_n is None or loc_n[0] != loc_o[0]:
            superseded_by_other.add(older)
    distractors = [d.id for d in corpus.distractors if d.id]
    keyed = [cid for key in corpus.keys for cid in key.ids]
    n_pairs = len(corpus.keys) * (versions - 1)
    adjacent = sum(1 for link in links if link["adjacent"])
    resolved = sum(all(status.get(cid) == "superseded" for cid in key.ids[:-1]) and status.get(key.ids[-1]) == "current"
                   for key in corpus.keys)
    return {
        "links": total, "links_by_kind": dict(sorted(kinds.items())),
        "false_links": len(false_links),
        "false_link_rate": len(false_links) / total if total else None,
        "false_links_strict": sum(1 for link in false_links if link["kind"] != "distractor_restated"),
        "same_attribute_other_subject": kinds.get("same_attribute_other_subject", 0),
        "distractors": len(distractors),
        "distractors_superseded": sum(1 for d in distractors if d in superseded_by_other),
        "distractor_superseded_rate": (sum(1 for d in distractors if d in superseded_by_other) / len(distractors)
                                       if distractors else None),
        "keyed_claims": len(keyed),
        "keyed_superseded_by_other_key": sum(1 for c in keyed if c in superseded_by_other),
        "keyed_wrongly_superseded_rate": sum(1 for c in keyed if c in superseded_by_other) / len(keyed),
        "version_pairs": n_pairs, "adjacent_versions_linked": adjacent,
        "inference_recall": adjacent / n_pairs if n_pairs else None,
        "keys_fully_resolved": resolved, "keys": len(corpus.keys),
        "false_link_examples": false_links[:100],
        "link_examples": [link for link in links if link["kind"] == "same_key"][:20],
    }


def render_no_keys_table(r: dict[str, Any]) -> str:
    m, c, p = r["metrics"], r["counts"], r["parameters"]
    inf = r["inference"]["inference_on"]
    off_links = r["inference"]["inference_off"]["links"]
    names = ("plain_rag", "inference_off", "inference_on")
    sibling = inf["links_by_kind"].get("same_subject_other_attribute", 0)
    other_false = inf["false_links_strict"] - inf["same_attribute_other_subject"] - sibling

    def row(label: str, key: str, fmt: Callable[[Any], str] = _pct) -> str:
        return f"| {label} | " + " | ".join(fmt(m[n][key]) for n in names) + " |"

    lines = [
        f"Temporal recall WITHOUT claim keys — {c['keys']} keys ({p['keys_per_domain']} × {c['domains']} domains) × "
        f"{p['versions']} versions + {c['distractors']} distractors = {c['claims_total']} claims, k={p['k']}, "
        f"seed={p['seed']}; worker caught up after every round",
        "",
        "| metric | plain RAG | Palimpsest, inference OFF | Palimpsest, inference ON |",
        "|---|---|---|---|",
        row("temporal accuracy (top-1 is the current version)", "temporal_accuracy"),
        row(f"staleness rate (a superseded version in top-{p['k']})", "staleness_rate"),
        row("right key at top-1 (any version; diagnostic)", "right_key_at_1"),
        row("determinism (2 consecutive recalls identical)", "determinism_rate"),
        row("recall latency p50 (ms)", "latency_ms_p50", lambda x: f"{x:.1f}"),
        row("recall latency p95 (ms)", "latency_ms_p95", lambda x: f"{x:.1f}"),
        "",
        "| by domain: temporal accuracy / staleness | inference OFF | inference ON |",
        "|---|---|---|",
        *(f"| {d} | {_pct(m['inference_off']['by_domain'][d]['temporal_accuracy'])} / "
          f"{_pct(m['inference_off']['by_domain'][d]['staleness_rate'])} | "
          f"{_pct(m['inference_on']['by_domain'][d]['temporal_accuracy'])} / "
          f"{_pct(m['inference_on']['by_domain'][d]['staleness_rate'])} |"
          for d in sorted(m["inference_on"]["by_domain"])),
        "",
        "| inferred supersession (ON) | value |",
        "|---|---|",
        f"| inferred links (OFF namespace: {off_links}) | {inf['links']} |",
        f"| links between versions of one key | {inf['links_by_kind'].get('same_key', 0)} |",
        f"| false links (not versions of one key) | {inf['false_links']} ({_pct(inf['false_link_rate'])} of links) |",
        f"| … same attribute, other subject | {inf['same_attribute_other_subject']} |",
        f"| … same subject, other attribute | {sibling} |",
        f"| … distractor restated with another value (same wording) | "
        f"{inf['links_by_kind'].get('distractor_restated', 0)} |",
        f"| … any other false link | {other_false} |",
        f"| distractor claims superseded | {inf['distractors_superseded']} / {inf['distractors']} "
        f"({_pct(inf['distractor_superseded_rate'])}) |",
        f"| versioned claims superseded by another key's claim | {inf['keyed_superseded_by_other_key']} / "
        f"{inf['keyed_claims']} ({_pct(inf['keyed_wrongly_superseded_rate'])}) |",
        f"| adjacent version pairs linked (inference recall) | {inf['adjacent_versions_linked']} / "
        f"{inf['version_pairs']} ({_pct(inf['inference_recall'])}) |",
        f"| keys with every old version hidden | {inf['keys_fully_resolved']} / {inf['keys']} |",
    ]
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def render_table(r: dict[str, Any]) -> str:
    rag, pal, c, p = r["metrics"]["plain_rag"], r["metrics"]["palimpsest"], r["counts"], r["parameters"]
    rows = [
        ("temporal accuracy (top-1 is the current version)", _pct(rag["temporal_accuracy"]),
         _pct(pal["temporal_accuracy"]), "—"),
        (f"staleness rate (a superseded version in top-{p['k']})", _pct(rag["staleness_rate"]),
         _pct(pal["staleness_rate"]), "—"),
        ("determinism (2 consecutive recalls identical)", _pct(rag["determinism_rate"]),
         _pct(pal["determinism_rate"]), "—"),
        (f"as-of accuracy ({pal['asof_samples']} key×revision samples)", "n/a", _pct(pal["asof_accuracy"]), "—"),
        ("right key at top-1 (any version; diagnostic)", _pct(rag["right_key_at_1"]), _pct(pal["right_key_at_1"]),
         "—"),
        ("recall latency p50 (ms)", f"{rag['latency_ms_p50']:.1f}", f"{pal['latency_ms_p50']:.1f}",
         f"{r['ratios']['latency_p50_palimpsest_over_rag']:.2f}×"),
        ("recall latency p95 (ms)", f"{rag['latency_ms_p95']:.1f}", f"{pal['latency_ms_p95']:.1f}",
         f"{r['ratios']['latency_p95_palimpsest_over_rag']:.2f}×"),
    ]
    lines = [
        f"Temporal recall benchmark — {c['keys']} keys ({p['keys_per_domain']} × {c['domains']} domains) × "
        f"{p['versions']} versions + {c['distractors']} distractors = {c['claims_total']} claims, "
        f"{c['final_revision']} revisions, k={p['k']}, seed={p['seed']}",
        "",
        "| metric | plain RAG | Palimpsest | ratio (Palimpsest / RAG) |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {cc} | {d} |" for a, b, cc, d in rows),
    ]
    return "\n".join(lines)


def _write(results: dict[str, Any], directory: Path, prefix: str = "temporal") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    paths = [directory / f"{prefix}-{stamp}.json", directory / f"{prefix}-latest.json"]
    results["results_files"] = [p.name for p in paths]  # names only: no machine paths in results
    text = json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False, default=str)
    for path in paths:
        path.write_text(text + "\n", encoding="utf-8")
    print(f"\nresults: {paths[0]}  (also {paths[1].name}); total {results['timings']['total_s']:.1f} s",
          file=sys.stdout)


def main() -> None:
    run()


if __name__ == "__main__":
    main()
