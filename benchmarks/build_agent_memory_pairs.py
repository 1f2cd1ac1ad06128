"""Build `benchmarks/data/agent_memory_pairs.jsonl`: labelled claim pairs as an agent would store them.

Why a home-made set: SICK is about captioned photos ("A man is playing a guitar"), while an
agent's memory holds ops facts, doses, contract terms and figures, where most contradictions are
a changed value or state and the hard cases are *look-alikes that do not conflict* (the same
sentence about another service, a refinement, the same amount in other units, another date).

Pairs come from hand-written templates filled by a seeded RNG, so the file is reproducible:
`python -m benchmarks.build_agent_memory_pairs` rewrites it byte for byte. The templates were
written before the heuristic detector was tuned and include contradictions no surface rule can
catch (implicit ones that need world knowledge), so the heuristic's recall here is not 1.

Each line: {id, domain, kind, relation, label, a, b}; `label` is "contradiction" or
"non_contradiction" (the class the benchmark scores), `relation` the finer
contradicts | compatible | unrelated, `kind` which template family made it.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

Rng = random.Random
Maker = Callable[[Rng], tuple[str, str]]

SERVICES = ["checkout-api", "payments-api", "search-service", "auth-gateway", "inventory-service",
            "orders-worker", "billing-worker", "notification-service", "ledger-api", "catalog-service"]
REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-2", "eu-central-1"]
HOSTS = ["db-7", "db-9", "pg-primary-2", "pg-replica-4", "redis-3", "kafka-broker-5"]
PEOPLE = ["Priya", "Marcus", "Chen", "Olga", "Tomas", "Aisha", "Daniel", "Keiko"]
TEAMS = ["payments team", "platform team", "search team", "identity team", "SRE team"]
FLAGS = ["new-checkout-flow", "async-refunds", "edge-caching", "strict-rate-limits", "dual-writes"]
PATIENTS = ["Patient 4471", "Patient 5230", "Patient 1187", "Patient 9042", "Patient 3318", "Patient 7765"]
DRUGS = {"metformin": [500, 850, 1000], "lisinopril": [5, 10, 20], "atorvastatin": [10, 20, 40],
         "amoxicillin": [250, 500, 875], "sertraline": [50, 100, 150]}
ALLERGENS = ["penicillin", "sulfonamides", "latex", "peanuts", "iodinated contrast", "codeine"]
DOCTORS = ["Dr. Okafor", "Dr. Lindqvist", "Dr. Ramirez", "Dr. Haddad", "Dr. Novak"]
LABS = {"potassium": ("mmol/L", [3.4, 4.1, 4.6, 5.9]), "creatinine": ("mg/dL", [0.8, 1.1, 1.4, 2.1]),
        "sodium": ("mmol/L", [128, 134, 139, 146])}
CONTRACTS = ["the master services agreement with Acme Corp", "the NDA with Globex", "the lease for the Denver office",
             "the supplier agreement with Initech", "the licence agreement with Umbrella Labs",
             "the reseller agreement with Hooli"]
LAWS = ["New York", "Delaware", "England and Wales", "California", "Ontario", "Singapore"]
COMPANIES = ["Northwind", "Contoso", "Fabrikam", "Tailspin", "Wingtip", "Litware"]
VENDORS = ["Globex Logistics", "Stark Components", "Wayne Freight", "Cyberdyne Supplies", "Soylent Foods"]
DEPARTMENTS = ["Marketing", "Engineering", "Customer Support", "Sales", "Legal"]


def pick(rng: Rng, seq: list[str], n: int = 2) -> list[str]:
    return rng.sample(seq, n)


def a_date(rng: Rng) -> date:
    return date(2026, 1, 5) + timedelta(days=rng.randrange(0, 330))


def fmt_date(d: date, style: int) -> str:
    if style == 0:
        return d.isoformat()
    if style == 1:
        return f"{d:%B} {d.day}, {d.year}"
    return f"{d.day} {d:%B} {d.year}"


def two_values(rng: Rng, values: list[float] | list[int]) -> tuple[float | int, float | int]:
    first, second = rng.sample(values, 2)
    return first, second


def cap(text: str) -> str:
    return text[0].upper() + text[1:]


# ---------------------------------------------------------------- ops
def ops_templates() -> list[tuple[str, str, Maker]]:
    def latency(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        x, y = two_values(r, [120, 180, 240, 320, 450, 800, 950, 1200])
        return (f"p99 latency of {s} is {x} ms", r.choice([f"{s} p99 latency is {y}ms",
                                                           f"The p99 latency for {s} sits at {y} ms"]))

    def replicas(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        x, y = two_values(r, [2, 3, 4, 6, 8, 12])
        return f"{s} runs {x} replicas in production", f"Production runs {y} replicas of {s}"

    def version(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        x, y = r.sample(["14.11", "15.6", "16.2", "16.4", "17.0"], 2)
        return f"{s} is pinned to Postgres {x}", f"{s} is pinned to Postgres {y}"

    def release(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        x, y = r.sample(["v2.14.0", "v2.14.1", "v2.15.0", "v3.0.0", "v3.0.2"], 2)
        return f"Production is running {s} {x}", f"{s} in production is on {y}"

    def window(r: Rng) -> tuple[str, str]:
        s, d1, d2, st = r.choice(SERVICES), a_date(r), a_date(r), r.randrange(3)
        while d2 == d1:
            d2 = a_date(r)
        return (f"The maintenance window for {s} is on {fmt_date(d1, st)}",
                f"The maintenance window for {s} is on {fmt_date(d2, st)}")

    def writes_to(r: Rng) -> tuple[str, str]:
        s, (h1, h2) = r.choice(SERVICES), pick(r, HOSTS)
        return f"{s} writes to {h1}", f"{s} writes to {h2}"

    def region(r: Rng) -> tuple[str, str]:
        s, (r1, r2) = r.choice(SERVICES), pick(r, REGIONS)
        return f"The primary region for {s} is {r1}", f"The primary region for {s} is {r2}"

    def oncall(r: Rng) -> tuple[str, str]:
        s, (p1, p2) = r.choice(SERVICES), pick(r, PEOPLE)
        return f"The on-call engineer for {s} this week is {p1}", f"The on-call engineer for {s} this week is {p2}"

    def health(r: Rng) -> tuple[str, str]:
        s, reg = r.choice(SERVICES), r.choice(REGIONS)
        a, b = r.choice([("healthy", "down"), ("up", "down"), ("healthy", "degraded")])
        return f"{s} is {a} in {reg}", f"{s} is {b} in {reg}"

    def flag(r: Rng) -> tuple[str, str]:
        f = r.choice(FLAGS)
        return f"Feature flag {f} is enabled in production", f"Feature flag {f} is disabled in production"

    def change(r: Rng) -> tuple[str, str]:
        s, n = r.choice(SERVICES), r.randrange(1000, 9999)
        return (f"Change request CR-{n} to upgrade {s} was approved",
                f"Change request CR-{n} to upgrade {s} was rejected")

    def smoke(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        return f"The last deploy of {s} passed its smoke tests", f"The last deploy of {s} failed its smoke tests"

    def depends(r: Rng) -> tuple[str, str]:
        s, h = r.choice(SERVICES), r.choice(HOSTS)
        return f"{s} depends on {h}", f"{s} does not depend on {h}"

    def legacy(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        return f"{s} is still deployed on the legacy VM fleet", f"{s} is no longer deployed on the legacy VM fleet"

    def tls(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        return (f"TLS for {s} is terminated at the load balancer",
                f"TLS for {s} isn't terminated at the load balancer")

    def unreachable(r: Rng) -> tuple[str, str]:
        s, reg = r.choice(SERVICES), r.choice(REGIONS)
        return (f"{s} is unreachable from the load balancer in {reg}",
                f"{s} is serving traffic normally in {reg}")

    def crashloop(r: Rng) -> tuple[str, str]:
        s, v = r.choice(SERVICES), r.choice(["v2.15.0", "v3.0.0", "v3.1.0"])
        return (f"All {s} pods are crash-looping after the {v} rollout",
                f"The {v} rollout of {s} finished with every pod ready")

    def incident(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        return f"The incident affecting {s} is still ongoing", f"The incident affecting {s} was resolved at 14:05 UTC"

    # non-contradictions
    def latency_other(r: Rng) -> tuple[str, str]:
        s1, s2 = pick(r, SERVICES)
        x, y = two_values(r, [120, 180, 240, 320, 450, 800])
        return f"p99 latency of {s1} is {x} ms", f"p99 latency of {s2} is {y} ms"

    def health_other(r: Rng) -> tuple[str, str]:
        s1, s2 = pick(r, SERVICES)
        reg = r.choice(REGIONS)
        return f"{s1} is down in {reg}", f"{s2} is healthy in {reg}"

    def health_other_region(r: Rng) -> tuple[str, str]:
        s, (r1, r2) = r.choice(SERVICES), pick(r, REGIONS)
        return f"{s} is healthy in {r1}", f"{s} is down in {r2}"

    def flag_other(r: Rng) -> tuple[str, str]:
        f1, f2 = pick(r, FLAGS)
        return f"Feature flag {f1} is enabled in production", f"Feature flag {f2} is disabled in production"

    def build_other(r: Rng) -> tuple[str, str]:
        s, n = r.choice(SERVICES), r.randrange(400, 900)
        return f"Build {n} of {s} passed all checks", f"Build {n + 1} of {s} failed the integration tests"

    def depends_other(r: Rng) -> tuple[str, str]:
        s1, s2 = pick(r, SERVICES)
        h = r.choice(HOSTS)
        return f"{s1} does not depend on {h}", f"{s2} depends on {h}"

    def down_refined(r: Rng) -> tuple[str, str]:
        s, reg = r.choice(SERVICES), r.choice(REGIONS)
        return f"{s} is down", f"{s} is down in {reg} since 09:40 UTC after a bad config push"

    def replicas_bound(r: Rng) -> tuple[str, str]:
        s, lo = r.choice(SERVICES), r.choice([2, 3, 4])
        return f"{s} must run at least {lo} replicas", f"{s} runs {lo + r.choice([1, 2, 3])} replicas in production"

    def latency_bound(r: Rng) -> tuple[str, str]:
        s, hi = r.choice(SERVICES), r.choice([500, 800, 1000])
        below = hi - r.choice([80, 150, 300])
        return f"The p99 latency SLO for {s} is under {hi} ms", f"p99 latency of {s} is {below} ms"

    def writes_refined(r: Rng) -> tuple[str, str]:
        s, h = r.choice(SERVICES), r.choice(HOSTS)
        return f"{s} writes to {h}", f"{s} writes to {h} through PgBouncer with a pool of 40 connections"

    def latency_units(r: Rng) -> tuple[str, str]:
        s, sec = r.choice(SERVICES), r.choice([1.2, 1.5, 2.0, 2.5])
        return f"p99 latency of {s} is {sec} s", f"{s} p99 latency is {int(sec * 1000)} ms"

    def outage_para(r: Rng) -> tuple[str, str]:
        s = r.choice(SERVICES)
        return f"{s} is down", f"{s} is experiencing a full outage"

    def flag_para(r: Rng) -> tuple[str, str]:
        f = r.choice(FLAGS)
        return f"Feature flag {f} is enabled in production", f"{f} is switched on for all production traffic"

    def replicas_words(r: Rng) -> tuple[str, str]:
        s, (n, w) = r.choice(SERVICES), r.choice([(4, "four"), (6, "six"), (8, "eight")])
        return f"{s} runs {n} replicas", f"There are {w} replicas of {s} running in production"

    def owner_unrelated(r: Rng) -> tuple[str, str]:
        s, t = r.choice(SERVICES), r.choice(TEAMS)
        return f"{s} is owned by the {t}", f"p99 latency of {s} is {r.choice([180, 240, 450])} ms"

    def deploy_unrelated(r: Rng) -> tuple[str, str]:
        s, h, d = r.choice(SERVICES), r.choice(HOSTS), a_date(r)
        return f"{s} writes to {h}", f"{s} was last deployed on {fmt_date(d, 0)}"

    def down_occasion(r: Rng) -> tuple[str, str]:
        s, d1 = r.choice(SERVICES), a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 20))
        return f"On {fmt_date(d1, 0)} {s} was down for 25 minutes", f"On {fmt_date(d2, 0)} {s} was up all day"

    def latency_occasion(r: Rng) -> tuple[str, str]:
        s, d1 = r.choice(SERVICES), a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 20))
        x, y = two_values(r, [180, 240, 450, 800])
        return (f"p99 latency of {s} was {x} ms on {fmt_date(d1, 1)}",
                f"p99 latency of {s} was {y} ms on {fmt_date(d2, 1)}")

    def oncall_other_week(r: Rng) -> tuple[str, str]:
        s, (p1, p2) = r.choice(SERVICES), pick(r, PEOPLE)
        return f"{p1} was on call for {s} last week", f"The on-call engineer for {s} this week is {p2}"

    return [
        ("value", "contradicts", latency), ("value", "contradicts", replicas), ("version", "contradicts", version),
        ("version", "contradicts", release), ("date", "contradicts", window), ("identifier", "contradicts", writes_to),
        ("identifier", "contradicts", region), ("person", "contradicts", oncall), ("state", "contradicts", health),
        ("state", "contradicts", flag), ("state", "contradicts", change), ("state", "contradicts", smoke),
        ("negation", "contradicts", depends), ("negation", "contradicts", legacy), ("negation", "contradicts", tls),
        ("implicit", "contradicts", unreachable), ("implicit", "contradicts", crashloop),
        ("implicit", "contradicts", incident),
        ("other_subject", "compatible", latency_other), ("other_subject", "compatible", health_other),
        ("other_subject", "compatible", health_other_region), ("other_subject", "compatible", flag_other),
        ("other_subject", "compatible", build_other), ("other_subject", "compatible", depends_other),
        ("refinement", "compatible", down_refined), ("bound", "compatible", replicas_bound),
        ("bound", "compatible", latency_bound), ("refinement", "compatible", writes_refined),
        ("paraphrase", "compatible", latency_units), ("paraphrase", "compatible", outage_para),
        ("paraphrase", "compatible", flag_para), ("paraphrase", "compatible", replicas_words),
        ("unrelated", "unrelated", owner_unrelated), ("unrelated", "unrelated", deploy_unrelated),
        ("other_occasion", "compatible", down_occasion), ("other_occasion", "compatible", latency_occasion),
        ("other_occasion", "compatible", oncall_other_week),
    ]


# ---------------------------------------------------------------- clinical
def clinical_templates() -> list[tuple[str, str, Maker]]:
    def dose(r: Rng) -> tuple[str, str]:
        p, drug = r.choice(PATIENTS), r.choice(list(DRUGS))
        x, y = r.sample(DRUGS[drug], 2)
        return (f"{p} takes {drug} {x} mg twice daily",
                r.choice([f"{p} takes {drug} {y} mg twice daily", f"{p} is on {drug} {y} mg twice a day"]))

    def lab(r: Rng) -> tuple[str, str]:
        p, name = r.choice(PATIENTS), r.choice(list(LABS))
        unit, values = LABS[name]
        x, y = r.sample(values, 2)
        d = fmt_date(a_date(r), 0)
        return f"{p}'s {name} on {d} was {x} {unit}", f"{p}'s {name} on {d} was {y} {unit}"

    def weight(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        x, y = r.sample([58, 64, 72, 81, 94], 2)
        return f"{p} weighs {x} kg", f"{p} weighs {y} kg"

    def surgery(r: Rng) -> tuple[str, str]:
        p, d1 = r.choice(PATIENTS), a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 15))
        st = r.randrange(3)
        return (f"{p}'s knee replacement is scheduled for {fmt_date(d1, st)}",
                f"{p}'s knee replacement is scheduled for {fmt_date(d2, st)}")

    def allergy_neg(r: Rng) -> tuple[str, str]:
        p, a = r.choice(PATIENTS), r.choice(ALLERGENS)
        return f"{p} is allergic to {a}", f"{p} is not allergic to {a}"

    def smoker(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        return f"{p} is a current smoker", f"{p} is not a smoker"

    def anticoag(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        return f"{p} is on anticoagulation with apixaban", f"{p} is no longer on anticoagulation with apixaban"

    def test_result(r: Rng) -> tuple[str, str]:
        p, t, d = r.choice(PATIENTS), r.choice(["COVID-19 PCR", "strep A", "influenza A"]), fmt_date(a_date(r), 0)
        return f"{p}'s {t} test from {d} is positive", f"{p}'s {t} test from {d} is negative"

    def started(r: Rng) -> tuple[str, str]:
        p, drug = r.choice(PATIENTS), r.choice(list(DRUGS))
        return f"{drug} was started for {p} this admission", f"{drug} was discontinued for {p} this admission"

    def attending(r: Rng) -> tuple[str, str]:
        p, (d1, d2) = r.choice(PATIENTS), pick(r, DOCTORS)
        return f"{p}'s attending physician is {d1}", f"{p}'s attending physician is {d2}"

    def nkda(r: Rng) -> tuple[str, str]:
        p, a = r.choice(PATIENTS), r.choice(ALLERGENS)
        return f"{p} has no known drug allergies", f"{p} has a documented allergy to {a}"

    def icu(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        return f"{p} remains in the ICU on a ventilator", f"{p} was discharged home yesterday"

    def code_status(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        return f"{p} is full code", f"{p} has a do-not-resuscitate order on file"

    # non-contradictions
    def dose_other_patient(r: Rng) -> tuple[str, str]:
        (p1, p2), drug = pick(r, PATIENTS), r.choice(list(DRUGS))
        x, y = r.sample(DRUGS[drug], 2)
        return f"{p1} takes {drug} {x} mg twice daily", f"{p2} takes {drug} {y} mg twice daily"

    def dose_other_drug(r: Rng) -> tuple[str, str]:
        p, (d1, d2) = r.choice(PATIENTS), pick(r, list(DRUGS))
        return f"{p} takes {d1} {r.choice(DRUGS[d1])} mg daily", f"{p} takes {d2} {r.choice(DRUGS[d2])} mg daily"

    def allergy_other(r: Rng) -> tuple[str, str]:
        p, (a1, a2) = r.choice(PATIENTS), pick(r, ALLERGENS)
        return f"{p} is allergic to {a1}", f"{p} is allergic to {a2}"

    def allergy_other_patient(r: Rng) -> tuple[str, str]:
        (p1, p2), a = pick(r, PATIENTS), r.choice(ALLERGENS)
        return f"{p1} is allergic to {a}", f"{p2} is not allergic to {a}"

    def dose_refined(r: Rng) -> tuple[str, str]:
        p, drug = r.choice(PATIENTS), r.choice(list(DRUGS))
        return f"{p} takes {drug}", f"{p} takes {drug} {r.choice(DRUGS[drug])} mg twice daily with meals"

    def allergy_refined(r: Rng) -> tuple[str, str]:
        p, a = r.choice(PATIENTS), r.choice(ALLERGENS)
        return f"{p} is allergic to {a}", f"{p} is allergic to {a} and develops hives on exposure"

    def lab_occasion(r: Rng) -> tuple[str, str]:
        p, name = r.choice(PATIENTS), r.choice(list(LABS))
        unit, values = LABS[name]
        x, y = r.sample(values, 2)
        d1 = a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 10))
        return f"{p}'s {name} on {fmt_date(d1, 0)} was {x} {unit}", f"{p}'s {name} on {fmt_date(d2, 0)} was {y} {unit}"

    def dose_units(r: Rng) -> tuple[str, str]:
        p = r.choice(PATIENTS)
        return f"{p} takes metformin 1000 mg daily", f"{p}'s daily metformin dose is 1 g"

    def allergy_para(r: Rng) -> tuple[str, str]:
        p, a = r.choice(PATIENTS), r.choice(["penicillin", "latex", "codeine"])
        return f"{p} is not allergic to {a}", f"{p} has tolerated {a} without any reaction"

    def weight_para(r: Rng) -> tuple[str, str]:
        p, w = r.choice(PATIENTS), r.choice([58, 64, 72, 81])
        return f"{p} weighs {w} kg", f"{p}'s recorded body weight is {w} kilograms"

    def unrelated(r: Rng) -> tuple[str, str]:
        p, a = r.choice(PATIENTS), r.choice(ALLERGENS)
        return f"{p} is allergic to {a}", f"{p}'s HbA1c was {r.choice([6.1, 7.2, 8.4])}% in March 2026"

    def unrelated2(r: Rng) -> tuple[str, str]:
        p, doc = r.choice(PATIENTS), r.choice(DOCTORS)
        return f"{p}'s attending physician is {doc}", f"{p} weighs {r.choice([58, 64, 72, 81])} kg"

    def weight_bound(r: Rng) -> tuple[str, str]:
        p, w = r.choice(PATIENTS), r.choice([64, 72, 81])
        return f"{p} weighs more than 60 kg", f"{p} weighs {w} kg"

    return [
        ("value", "contradicts", dose), ("value", "contradicts", lab), ("value", "contradicts", weight),
        ("date", "contradicts", surgery), ("negation", "contradicts", allergy_neg),
        ("negation", "contradicts", smoker), ("negation", "contradicts", anticoag),
        ("state", "contradicts", test_result), ("state", "contradicts", started),
        ("person", "contradicts", attending), ("implicit", "contradicts", nkda), ("implicit", "contradicts", icu),
        ("implicit", "contradicts", code_status),
        ("other_subject", "compatible", dose_other_patient), ("other_subject", "compatible", dose_other_drug),
        ("other_subject", "compatible", allergy_other), ("other_subject", "compatible", allergy_other_patient),
        ("refinement", "compatible", dose_refined), ("refinement", "compatible", allergy_refined),
        ("other_occasion", "compatible", lab_occasion), ("paraphrase", "compatible", dose_units),
        ("paraphrase", "compatible", allergy_para), ("paraphrase", "compatible", weight_para),
        ("unrelated", "unrelated", unrelated), ("unrelated", "unrelated", unrelated2),
        ("bound", "compatible", weight_bound),
    ]


# ---------------------------------------------------------------- legal
def legal_templates() -> list[tuple[str, str, Maker]]:
    def notice(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        x, y = r.sample([30, 45, 60, 90], 2)
        return (f"{cap(c)} requires {x} days' written notice to terminate",
                f"{cap(c)} requires {y} days' written notice to terminate")

    def liability(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        x, y = r.sample([1, 2, 5, 10], 2)
        return f"Liability under {c} is capped at ${x} million", f"Liability under {c} is capped at ${y} million"

    def law(r: Rng) -> tuple[str, str]:
        c, (l1, l2) = r.choice(CONTRACTS), pick(r, LAWS)
        return f"{cap(c)} is governed by the laws of {l1}", f"{cap(c)} is governed by the laws of {l2}"

    def expiry(r: Rng) -> tuple[str, str]:
        c, d1 = r.choice(CONTRACTS), a_date(r)
        d2 = d1 + timedelta(days=r.randrange(30, 400))
        st = r.randrange(3)
        return f"{cap(c)} expires on {fmt_date(d1, st)}", f"{cap(c)} expires on {fmt_date(d2, st)}"

    def renews(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return f"{cap(c)} renews automatically each year", f"{cap(c)} does not renew automatically"

    def assignment(r: Rng) -> tuple[str, str]:
        c, n = r.choice(CONTRACTS), f"{r.randrange(5, 19)}.{r.randrange(1, 6)}"
        return (f"Clause {n} of {c} permits assignment to affiliates without consent",
                f"Clause {n} of {c} prohibits assignment to affiliates without consent")

    def exclusive(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return (f"{cap(c)} grants exclusive distribution rights in the EU",
                f"{cap(c)} grants non-exclusive distribution rights in the EU")

    def survival(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        x, y = r.sample([2, 3, 5, 7], 2)
        return (f"Confidentiality obligations in {c} survive for {x} years after termination",
                f"Confidentiality obligations in {c} survive for {y} years after termination")

    def signed(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return f"{cap(c)} has been signed by both parties", f"{cap(c)} has not been signed by both parties yet"

    def in_force(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return f"{cap(c)} is in force until the end of 2027", f"{cap(c)} was terminated for breach last month"

    def counsel(r: Rng) -> tuple[str, str]:
        c, (p1, p2) = r.choice(CONTRACTS), pick(r, ["Baker LLP", "Reed & Co", "Morgan Hale", "Lewis Partners"])
        return f"Outside counsel on {c} is {p1}", f"Outside counsel on {c} is {p2}"

    # non-contradictions
    def notice_other(r: Rng) -> tuple[str, str]:
        c1, c2 = pick(r, CONTRACTS)
        x, y = r.sample([30, 45, 60, 90], 2)
        return (f"{cap(c1)} requires {x} days' written notice to terminate",
                f"{cap(c2)} requires {y} days' written notice to terminate")

    def law_other(r: Rng) -> tuple[str, str]:
        (c1, c2), (l1, l2) = pick(r, CONTRACTS), pick(r, LAWS)
        return f"{cap(c1)} is governed by the laws of {l1}", f"{cap(c2)} is governed by the laws of {l2}"

    def clause_other(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        n1, n2 = f"{r.randrange(5, 12)}.{r.randrange(1, 6)}", f"{r.randrange(12, 19)}.{r.randrange(1, 6)}"
        return (f"Clause {n1} of {c} permits assignment to affiliates without consent",
                f"Clause {n2} of {c} prohibits assignment to competitors without consent")

    def renew_other(r: Rng) -> tuple[str, str]:
        c1, c2 = pick(r, CONTRACTS)
        return f"{cap(c1)} renews automatically each year", f"{cap(c2)} does not renew automatically"

    def law_refined(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return (f"{cap(c)} is governed by the laws of New York",
                f"{cap(c)} is governed by New York law, with disputes heard in Manhattan courts")

    def notice_bound(r: Rng) -> tuple[str, str]:
        c, lo = r.choice(CONTRACTS), r.choice([30, 45])
        return (f"{cap(c)} requires at least {lo} days' notice to terminate",
                f"{cap(c)} requires {lo + r.choice([15, 30, 60])} days' written notice to terminate")

    def liability_para(r: Rng) -> tuple[str, str]:
        c, x = r.choice(CONTRACTS), r.choice([1, 2, 5])
        return f"Liability under {c} is capped at ${x} million", f"{cap(c)} caps liability at ${x},000,000"

    def renew_para(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        return f"{cap(c)} does not renew automatically", f"{cap(c)} must be renewed manually by written agreement"

    def unrelated(r: Rng) -> tuple[str, str]:
        c, d = r.choice(CONTRACTS), a_date(r)
        return f"{cap(c)} expires on {fmt_date(d, 1)}", f"{cap(c)} is governed by the laws of {r.choice(LAWS)}"

    def amendment_occasion(r: Rng) -> tuple[str, str]:
        c = r.choice(CONTRACTS)
        x, y = r.sample([1, 2, 3, 5], 2)
        return (f"The 2024 amendment to {c} set the liability cap at ${x} million",
                f"The 2026 amendment to {c} set the liability cap at ${y} million")

    def survival_other(r: Rng) -> tuple[str, str]:
        c1, c2 = pick(r, CONTRACTS)
        x, y = r.sample([2, 3, 5, 7], 2)
        return (f"Confidentiality obligations in {c1} survive for {x} years after termination",
                f"Confidentiality obligations in {c2} survive for {y} years after termination")

    return [
        ("value", "contradicts", notice), ("money", "contradicts", liability), ("identifier", "contradicts", law),
        ("date", "contradicts", expiry), ("negation", "contradicts", renews), ("state", "contradicts", assignment),
        ("state", "contradicts", exclusive), ("value", "contradicts", survival), ("negation", "contradicts", signed),
        ("implicit", "contradicts", in_force), ("person", "contradicts", counsel),
        ("other_subject", "compatible", notice_other), ("other_subject", "compatible", law_other),
        ("other_subject", "compatible", clause_other), ("other_subject", "compatible", renew_other),
        ("refinement", "compatible", law_refined), ("bound", "compatible", notice_bound),
        ("paraphrase", "compatible", liability_para), ("paraphrase", "compatible", renew_para),
        ("unrelated", "unrelated", unrelated), ("other_occasion", "compatible", amendment_occasion),
        ("other_subject", "compatible", survival_other),
    ]


# ---------------------------------------------------------------- finance
def finance_templates() -> list[tuple[str, str, Maker]]:
    def revenue(r: Rng) -> tuple[str, str]:
        co, q = r.choice(COMPANIES), r.randrange(1, 5)
        x, y = r.sample([3.8, 4.2, 4.6, 5.1, 6.3], 2)
        return (f"{co} reported Q{q} 2026 revenue of ${x} million",
                f"{co} reported Q{q} 2026 revenue of ${y} million")

    def invoice(r: Rng) -> tuple[str, str]:
        inv, v = f"INV-{r.randrange(20000, 29999)}", r.choice(VENDORS)
        return f"Invoice {inv} from {v} is paid", f"Invoice {inv} from {v} is unpaid"

    def rate(r: Rng) -> tuple[str, str]:
        co = r.choice(COMPANIES)
        x, y = r.sample([4.75, 5.25, 5.5, 6.1], 2)
        return (f"The interest rate on the {co} credit facility is {x}%",
                f"The interest rate on the {co} credit facility is {y}%")

    def budget(r: Rng) -> tuple[str, str]:
        dep, p = r.choice(DEPARTMENTS), r.choice([5, 8, 12, 15])
        return f"The {dep} budget for FY2027 increased by {p}%", f"The {dep} budget for FY2027 decreased by {p}%"

    def wire(r: Rng) -> tuple[str, str]:
        v, x = r.choice(VENDORS), r.choice(["$48,000", "$125,000", "$310,500"])
        return f"The {x} wire transfer to {v} was approved", f"The {x} wire transfer to {v} was rejected"

    def due(r: Rng) -> tuple[str, str]:
        co, d1 = r.choice(COMPANIES), a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 40))
        st = r.randrange(3)
        return (f"The {co} quarterly loan payment is due on {fmt_date(d1, st)}",
                f"The {co} quarterly loan payment is due on {fmt_date(d2, st)}")

    def supplier(r: Rng) -> tuple[str, str]:
        v = r.choice(VENDORS)
        return f"{v} is on the approved supplier list", f"{v} is not on the approved supplier list"

    def reimbursed(r: Rng) -> tuple[str, str]:
        n = r.randrange(3000, 3999)
        return f"Expense report ER-{n} was reimbursed", f"Expense report ER-{n} has not been reimbursed"

    def fx(r: Rng) -> tuple[str, str]:
        d = fmt_date(a_date(r), 0)
        x, y = r.sample(["1.0712", "1.0845", "1.0921", "1.1034"], 2)
        return f"The EUR/USD rate booked on {d} was {x}", f"The EUR/USD rate booked on {d} was {y}"

    def profit(r: Rng) -> tuple[str, str]:
        co, q = r.choice(COMPANIES), r.randrange(1, 5)
        return f"{co} closed Q{q} with a net loss", f"{co} was profitable in Q{q}"

    def balance(r: Rng) -> tuple[str, str]:
        acct = f"{r.randrange(1000, 9999)}-{r.randrange(1000, 9999)}"
        x, y = r.sample(["$12,400", "$18,950", "$9,120", "$31,000"], 2)
        return f"The balance of operating account {acct} is {x}", f"The balance of operating account {acct} is {y}"

    def auditor(r: Rng) -> tuple[str, str]:
        co, (a1, a2) = r.choice(COMPANIES), pick(r, ["Deloitte", "KPMG", "EY", "PwC", "Grant Thornton"])
        return f"{co}'s external auditor for FY2026 is {a1}", f"{co}'s external auditor for FY2026 is {a2}"

    def overdue(r: Rng) -> tuple[str, str]:
        inv = f"INV-{r.randrange(20000, 29999)}"
        return f"Invoice {inv} is 45 days overdue", f"Invoice {inv} was settled in full last week"

    # non-contradictions
    def revenue_other_quarter(r: Rng) -> tuple[str, str]:
        co = r.choice(COMPANIES)
        q1, q2 = r.sample([1, 2, 3, 4], 2)
        x, y = r.sample([3.8, 4.2, 4.6, 5.1], 2)
        return (f"{co} reported Q{q1} 2026 revenue of ${x} million",
                f"{co} reported Q{q2} 2026 revenue of ${y} million")

    def revenue_other_company(r: Rng) -> tuple[str, str]:
        (c1, c2), q = pick(r, COMPANIES), r.randrange(1, 5)
        x, y = r.sample([3.8, 4.2, 4.6, 5.1], 2)
        return (f"{c1} reported Q{q} 2026 revenue of ${x} million",
                f"{c2} reported Q{q} 2026 revenue of ${y} million")

    def invoice_other(r: Rng) -> tuple[str, str]:
        n, v = r.randrange(20000, 29998), r.choice(VENDORS)
        return f"Invoice INV-{n} from {v} is paid", f"Invoice INV-{n + 1} from {v} is unpaid"

    def budget_other(r: Rng) -> tuple[str, str]:
        (d1, d2), p = pick(r, DEPARTMENTS), r.choice([5, 8, 12])
        return f"The {d1} budget for FY2027 increased by {p}%", f"The {d2} budget for FY2027 decreased by {p}%"

    def money_para(r: Rng) -> tuple[str, str]:
        co, q, x = r.choice(COMPANIES), r.randrange(1, 5), r.choice([4.2, 5.1, 6.3])
        return (f"{co} reported Q{q} 2026 revenue of ${x} million",
                f"{co}'s Q{q} 2026 revenue came in at ${int(x * 1_000_000):,}")

    def money_approx(r: Rng) -> tuple[str, str]:
        co, q = r.choice(COMPANIES), r.randrange(1, 5)
        return (f"{co} reported Q{q} 2026 revenue of about $4.2 million",
                f"{co} reported Q{q} 2026 revenue of $4.19 million")

    def invoice_refined(r: Rng) -> tuple[str, str]:
        inv, d = f"INV-{r.randrange(20000, 29999)}", a_date(r)
        return f"Invoice {inv} is paid", f"Invoice {inv} was paid in full by wire on {fmt_date(d, 1)}"

    def rate_bound(r: Rng) -> tuple[str, str]:
        co = r.choice(COMPANIES)
        return (f"The interest rate on the {co} credit facility is below 6%",
                f"The interest rate on the {co} credit facility is {r.choice([4.75, 5.25, 5.5])}%")

    def unrelated(r: Rng) -> tuple[str, str]:
        co = r.choice(COMPANIES)
        return (f"{co}'s external auditor for FY2026 is {r.choice(['KPMG', 'EY', 'PwC'])}",
                f"The interest rate on the {co} credit facility is {r.choice([4.75, 5.25])}%")

    def supplier_other(r: Rng) -> tuple[str, str]:
        v1, v2 = pick(r, VENDORS)
        return f"{v1} is on the approved supplier list", f"{v2} is not on the approved supplier list"

    def fx_occasion(r: Rng) -> tuple[str, str]:
        d1 = a_date(r)
        d2 = d1 + timedelta(days=r.randrange(1, 30))
        x, y = r.sample(["1.0712", "1.0845", "1.0921"], 2)
        return (f"The EUR/USD rate booked on {fmt_date(d1, 0)} was {x}",
                f"The EUR/USD rate booked on {fmt_date(d2, 0)} was {y}")

    def balance_other(r: Rng) -> tuple[str, str]:
        a1 = f"{r.randrange(1000, 9999)}-{r.randrange(1000, 9999)}"
        a2 = f"{r.randrange(1000, 9999)}-{r.randrange(1000, 9999)}"
        return f"The balance of operating account {a1} is $12,400", f"The balance of operating account {a2} is $9,120"

    return [
        ("money", "contradicts", revenue), ("state", "contradicts", invoice), ("value", "contradicts", rate),
        ("state", "contradicts", budget), ("state", "contradicts", wire), ("date", "contradicts", due),
        ("negation", "contradicts", supplier), ("negation", "contradicts", reimbursed), ("value", "contradicts", fx),
        ("implicit", "contradicts", profit), ("money", "contradicts", balance), ("person", "contradicts", auditor),
        ("implicit", "contradicts", overdue),
        ("other_occasion", "compatible", revenue_other_quarter), ("other_subject", "compatible", revenue_other_company),
        ("other_subject", "compatible", invoice_other), ("other_subject", "compatible", budget_other),
        ("paraphrase", "compatible", money_para), ("paraphrase", "compatible", money_approx),
        ("refinement", "compatible", invoice_refined), ("bound", "compatible", rate_bound),
        ("unrelated", "unrelated", unrelated), ("other_subject", "compatible", supplier_other),
        ("other_occasion", "compatible", fx_occasion), ("other_subject", "compatible", balance_other),
    ]


DOMAINS: dict[str, Callable[[], list[tuple[str, str, Maker]]]] = {
    "ops": ops_templates, "clinical": clinical_templates, "legal": legal_templates, "finance": finance_templates,
}


def build(seed: int = 20261130, per_template: int = 4) -> list[dict[str, str]]:
    """Every template filled `per_template` times (distinct pairs), sides swapped at random.

    Swapping matters: the worker sees whichever claim came second as "newer", and a detector
    that only fires in one direction would look better on an unswapped set than it is.
    """
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for domain, templates in DOMAINS.items():
        for kind, relation, maker in templates():
            made = attempts = 0
            while made < per_template and attempts < per_template * 20:
                attempts += 1
                a, b = maker(rng)
                if rng.random() < 0.5:
                    a, b = b, a
                if (a, b) in seen or (b, a) in seen or a == b:
                    continue
                seen.add((a, b))
                made += 1
                rows.append({
                    "id": f"{domain}-{len(rows):04d}", "domain": domain, "kind": kind, "relation": relation,
                    "label": "contradiction" if relation == "contradicts" else "non_contradiction", "a": a, "b": b,
                })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "agent_memory_pairs.jsonl")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--per-template", type=int, default=4)
    args = parser.parse_args()
    rows = build(args.seed, args.per_template)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    positives = sum(r["label"] == "contradiction" for r in rows)
    print(f"wrote {len(rows)} pairs ({positives} contradictions) to {args.out}")


if __name__ == "__main__":
    main()
