"""The router: which of the stages a policy allows run for this query, read off the question's structure.

Why it exists: the stages that find a second hop — graph expansion (PPR) and the later rounds of
`recall_rounds` / `ask` — pay off on questions that need one and cost elsewhere (a second round on
conversation memory costs recall; every stage costs latency). So the policy names the stages a recall
*may* run, and the router (policy `router`) decides per query which of them do. It only ever removes a
stage the policy allows; it never adds one.

What it reads (the rules, `features`): three properties of the question, in general linguistic terms
— nothing here names a benchmark's questions or their entities:

* **multi-hop** — the question describes an entity instead of naming it, and then asks about it. A
  description is a relation: "the X of Y" (X a relational noun, not "name"/"kind"/"part" and not the
  "city of Paris" apposition), a possessive ("Y's X"), a relative clause ("the band *that* made …",
  "the city *where* …"), a reduced relative ("the country *Signmark is from*"), a participle
  ("the film *directed by* …", "which comedy *produced by* X …"), or a question word inside a modifier of
  a noun phrase ("… played for a team *based in what state*?": that team is found first, then asked
  about). The main predicate is one more relation, except for a copular question
  ("What is the capital of France?", "What is Caroline's job?"), which asks for the description itself
  — unless "be" is the auxiliary of a participle ("What language were texts being copied into …?").
  Names, numbers and dates may precede the head noun ("the March 5, 2001 episode of X"); "of" a month
  or a number dates a time ("the first week of June") and is no relation. Two or more relations: multi-hop.
* **comparison** — comparatives and superlatives, "both", "same"/"different", "either"/"neither",
  "than", "in common", "respective", and alternatives ("… A or B?"): the question is about two or more
  things at once, each to be found. Two names joined by "and" alone are not: "Did Ada and Grace go
  hiking?" mostly asks about one event they shared (a collective reading, one hit), and the distributive
  reading is the one these words mark.
* **temporal** — "when", "what year/date/…", "how long", "before/after/during/since/until", a year,
  a month or a season.

What it decides (`decide`): a question that is neither multi-hop nor a comparison is answered by
one direct hit, so later rounds are skipped ("router:one-round") — unless the first round's top items
name a bridge another claim is about (it declares it as its subject or opens with it: graph.recall.rounds),
which the wording of a question cannot show. Graph expansion stays as the policy has it: the policy
chose PPR for its corpus, from a direct question's own entities it costs a few milliseconds, and when
the wording hid a hop it still finds it (every MuSiQue question forced down this route: R@5 66.7 with
PPR, 65.1 without; docs/research-log.md, "What a misread question costs"). A temporal question keeps
near-duplicates (dedup skipped, "router:skip-dedup"): the same words said at two times are two events.
A multi-hop question or a comparison keeps every stage — unless the caller says it will take the second
hop through its own later rounds (`later_rounds`), which skips graph expansion ("router:later-rounds",
"router:skip-ppr"): PPR and the offline second round are two ways to the same hop. `recall_rounds` does
not say so: with PPR deterministic, both together find more on the multi-hop sets than the rounds alone
(docs/research-log.md, "PPR repeats; the router keeps PPR in its rounds"). The rest of the policy is
untouched.

The packet's `stages` records the decision first: "router:rules" (or "router:llm", or
"router:llm-unavailable" when the model could not answer and the rules decided), the properties found
("router:multi-hop", "router:comparison", "router:temporal"; "router:single-hop" when neither of the
first two), then what was skipped. A packet's stages pin its decision (`pinned`, `held`): a replay, or
the later rounds of one question, run the stages the packet records — not a decision made again, by
the rules as they are now or by a model — so a packet logged before these rules changed still replays.
The LLM router (extraction.router_llm) answers the same three properties; graph never calls a model
for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from palimpsest.graph.recall.request import RecallRequest
from palimpsest.schema.models import Policy

MULTI_HOP, COMPARISON, TEMPORAL = "multi-hop", "comparison", "temporal"
FEATURES: tuple[str, ...] = (MULTI_HOP, COMPARISON, TEMPORAL)  # the order they are recorded in
HOW: tuple[str, ...] = ("rules", "llm", "llm-unavailable")
SINGLE_HOP = "single-hop"
SKIP_PPR, SKIP_DEDUP, ONE_ROUND = "skip-ppr", "skip-dedup", "one-round"
LATER_ROUNDS = "later-rounds"  # the second hop is left to the later rounds the caller runs
PREFIX = "router:"
# Every entry a decision can write into a packet's stages: what a pinned route may hold.
ENTRIES = frozenset(f"{PREFIX}{e}" for e in (*HOW, *FEATURES, SINGLE_HOP, SKIP_PPR, SKIP_DEDUP, ONE_ROUND,
                                              LATER_ROUNDS))

# Nouns that head an "of" phrase without naming a relation to resolve ("the name of …", "a kind of …").
_LIGHT = frozenset({
    "name", "names", "kind", "kinds", "type", "types", "sort", "number", "amount", "part", "one", "some",
    "all", "most", "rest", "many", "much", "lot", "percentage", "couple", "set", "group", "list", "instance",
    "example", "top", "end", "middle", "beginning", "side", "half", "each", "any", "none", "both", "series",
})
# "remind her of …": a pronoun after a determiner-like word is an object, not the head of a noun phrase.
_PRONOUN = frozenset({"her", "him", "them", "it", "me", "us", "you"})
# "the city of Paris": an apposition, the place is named.
_APPOSITION = frozenset({
    "city", "town", "village", "state", "county", "province", "island", "islands", "kingdom", "republic",
    "port", "borough", "municipality", "district", "region", "principality", "duchy", "empire", "isle",
})
_DET = r"(?:the|a|an|its|his|her|their|our|your|this|that|these|those)"
# Before a noun phrase's head: names, proper adjectives, numbers and dates ("the British edition", "the May 3,
# 1999 episode"), then at most two lower-case words ("the best-selling debut album").
_NAMED_OR_NUMBER = r"(?:[A-Z][\w'’-]*|\d[\d.,/-]*)"
_PREMODIFIERS = rf"(?:{_NAMED_OR_NUMBER}\s+){{0,3}}(?:[a-z][\w-]*\s+){{0,2}}?"
# The object is looked at, not consumed: "the spouse of the director of X" holds two.
_OF = re.compile(rf"\b{_DET}\s+{_PREMODIFIERS}([a-z][\w-]*)\s+of\s+"
                 r"(?=(\S+))")
_OF_AFTER_POSSESSIVE = re.compile(r"(?:'s|s')\s+(?:[a-z][\w-]*\s+){0,2}?([a-z][\w-]*)\s+of\s+(?=(\S+))")
_POSSESSIVE = re.compile(r"\b([\w.-]+)(?:'s|’s)\b|\b(\w+s)'(?=\s)")
_NOT_POSSESSIVE = frozenset({"it", "that", "what", "who", "there", "he", "she", "let", "here", "where", "how",
                             "when", "why", "which", "this"})
_RELATIVE = re.compile(r"\b(who|whom|whose|which|that|where|when)\b", re.IGNORECASE)
# "that" after these is a conjunction or a pronoun, not a relative pronoun.
_NOT_RELATIVE_THAT = frozenset({"so", "such", "now", "is", "was", "are", "were", "said", "says", "say", "think",
                                "know", "knew", "believe", "than", "like", "in", "of", "and", "but", "about",
                                "did", "does", "do", "mean", "means", "claim", "claimed", "true", "fact", "after",
                                "before", "because", "with", "at", "for", "to", "on"})
_NAME = r"[A-Z][\w.'’-]*(?:\s+(?:of|the|de|du|van|von|and|[A-Z0-9][\w.'’-]*))*"
_REDUCED = re.compile(rf"\bthe\s+([a-z][\w-]*)\s+(?:the\s+)?{_NAME}\s+(?:is|was|are|were|has|had|did|does|do|can|"
                      r"will|would|[a-z]+ed)\b")
_PARTICIPLE = re.compile(
    rf"\b{_DET}\s+{_PREMODIFIERS}[a-z][\w-]*\s+(?:known\s+as|named\s+(?:after|for)|(?:directed|written|"
    r"produced|founded|created|composed|performed|owned|built|designed|invented|played|sung|voiced|published|"
    r"developed|led|ruled|located|based|born|made|released|formed|started|established|situated|held|fought|"
    r"signed|won|discovered|painted|recorded|named|considered)\s+(?:by|in|at|from|for|on|as|after|during))\b")
# "the country containing X", "the candidates running for …": a present participle after a noun.
_ING = re.compile(rf"\b{_DET}\s+{_PREMODIFIERS}([a-z][\w-]*)\s+([a-z]+ing)\s+(?:[A-Z]|(?:the|a|an|"
                  r"for|in|of|to|at|on|by|with|from|as)\b)")
_NOT_ING = frozenset({"morning", "evening", "thing", "something", "nothing", "anything", "everything", "king",
                      "ring", "spring", "string", "wedding", "building", "meeting", "painting", "clothing", "ceiling",
                      "during", "being", "opening", "ending", "beginning", "feeling", "training", "setting", "wing",
                      "hearing", "reading", "writing", "singing", "dancing", "swimming", "running", "hiking",
                      "camping", "cooking", "shopping", "fishing", "skiing", "surfing", "drawing", "parking"})
# "a band from what city?", "an NFL team based in which state?": the question word sits in a modifier of a noun
# phrase, so the thing that noun phrase describes is found first and then asked about ("of" is _OF's).
_WH_IN_MODIFIER = re.compile(rf"\b{_DET}\s+{_PREMODIFIERS}[a-z][\w-]*\s+(?:[a-z]+ed\s+)?(?:from|in|by|at|on|for|"
                             r"with|near)\s+(?:what|which)\b")
# "Which 1988 comedy produced by X had …", "What franchise created by X starred Y?": a participle with its agent
# after a question word's noun phrase, no auxiliary between — a reduced relative, since a passive main verb
# would need "be" ("What was produced by X?" is no relation).
_WH_PARTICIPLE_BY = re.compile(
    r"^\s*(?:which|what)\s+(?:(?!(?:is|was|are|were|be|been|being|has|have|had|do|does|did|can|could|will|would|"
    r"shall|should|may|might|must)\b)[\w'’.-]+\s+){1,5}?(?:[a-z]+ed|[a-z]+en|made|sung|led|held|built|won|sold|"
    r"told|taught|found|drawn|known|shown|grown|thrown)\s+by\b", re.IGNORECASE)
# "the Titanic director", "the It'll Be Me singer": a role named by what it is the role of.
_ROLE_OF_NAME = re.compile(
    r"\bthe\s+[A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*)*\s+(singer|director|author|writer|performer|founder|owner|"
    r"producer|creator|composer|actor|actress|star|president|leader|captain|coach|manager|designer|architect|"
    r"inventor|publisher|developer|host|presenter|drummer|guitarist|bassist|vocalist|frontman|member|members|"
    r"player|players|team|band|company|label|studio|network|station|manufacturer|successor|predecessor|"
    r"headquarters|capital|mascot|anthem)\b")
_QUESTION_WORD = re.compile(r"^\s*(?:(?:in|of|to|for|from|on|at|by|with|during|under|since|until)\s+)?"
                            r"(what|which|who|whom|whose|where|when|how|why)\b", re.IGNORECASE)
_COPULAR = re.compile(r"^\s*(?:what|who|which)(?:\s+[a-z]+)?\s+(?:is|was|are|were)\b|"
                      r"^\s*(?:what|who|which)\s+(?:might|would|could|will|may|can|should|must)\s.*\bbe\s*\?*\s*$",
                      re.IGNORECASE)
# "What language were books being translated into …", "What was Dana doing at …": after its subject (no
# preposition in it: "What was Dana's reason for getting into …" is a copula) the verb "be" meets a
# participle — "being"/"been", or an -ing verb with its complement (a preposition, an article or a
# pronoun next) — so it is the auxiliary of another predicate, not the copula of "what is X?".
_AUXILIARY_BE = re.compile(
    r"^\s*(?:what|who|which)(?:\s+[a-z]+)?\s+(?:is|was|are|were)\s+"
    r"(?:(?!(?:of|for|in|into|on|at|to|from|with|by|about|after|before|during|toward|towards|like|as|than|over|"
    r"through|without|within|around|between|among|under|against|since|until)\b)[\w'’.-]+\s+){1,4}?"
    r"(?:(?:being|been)\b|(?P<ing>[a-z]+ing)\s+(?:in|into|on|at|to|for|from|with|by|about|of|up|out|over|the|a|an|"
    r"his|her|their|its|it|them|him|me|us|you)\b)", re.IGNORECASE)
# A question that ends in a participle or a stranded preposition is a passive or a clause, not "what is X?".
_CLAUSE_END = re.compile(r"\b(?:[a-z]+ed|born|known|made|located|found|held|of|from|in|for|to|on|at|by|with|"
                         r"about|after|into|under)\s*[?.!]*\s*$", re.IGNORECASE)

_COMPARISON = re.compile(
    r"\b(?:more|less|fewer|most|least|better|best|worse|worst|earlier|earliest|later|latest|older|oldest|younger|"
    r"youngest|longer|longest|shorter|shortest|larger|largest|smaller|smallest|bigger|biggest|higher|highest|"
    r"lower|lowest|greater|greatest|closer|closest|farther|farthest|further|furthest|faster|fastest|slower|"
    r"slowest|taller|tallest|heavier|heaviest|both|same|different|either|neither|than|compared?|"
    r"first\s*[,?]|came\s+first|last\s*[,?]|in\s+common|respective|respectively)", re.IGNORECASE)
# "the deepest", "the most …": a superlative compares a thing with all the others.
_SUPERLATIVE = re.compile(r"\bthe\s+(?:[a-z]+\s+)?(?:most|least|([a-z]{2,}est))\b", re.IGNORECASE)
_NOT_SUPERLATIVE = frozenset({"west", "forest", "interest", "request", "contest", "rest", "test", "chest", "nest",
                              "guest", "quest", "crest", "harvest", "protest", "manifest", "conquest", "honest",
                              "modest", "suggest", "digest", "arrest", "invest", "southwest", "northwest",
                              "midwest", "priest", "breast", "pest", "vest", "zest", "unrest", "everest", "bucharest",
                              "budapest", "inquest", "behest", "tempest", "earnest"})
_ALTERNATIVE = re.compile(r"\b\w[\w'’-]*\s+or\s+(?:the\s+)?\w", re.IGNORECASE)
_ASKS_CHOICE = re.compile(r"^\s*(?:which|who|what|whose|is|are|was|were|did|does|do|has|have|had)\b", re.IGNORECASE)

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_TEMPORAL = re.compile(
    r"^\s*when\b|\bwhen\b|\bwhat\s+(?:year|years|date|month|day|time|decade|century|age|era|period)\b|"
    r"\bhow\s+long\b|\bhow\s+old\b|\b(?:before|after|during|since|until|till|ago|yesterday|today|tomorrow|"
    r"recently|lately|nowadays)\b|\b(?:last|next|this|that)\s+(?:week|month|year|weekend|summer|winter|spring|"
    r"autumn|fall|night|time)\b|\b(?:1[0-9]{3}|20[0-9]{2})s?\b|"
    rf"\b(?:{_MONTHS})\b(?=\s+\d|\s*,?\s*(?:1[0-9]{{3}}|20[0-9]{{2}}))|\bin\s+(?:{_MONTHS})\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|"
    r"\bin\s+(?:the\s+)?(?:spring|summer|autumn|fall|winter)\b", re.IGNORECASE)
# "the second week of November", "the summer of 2022": "of" a month or a number dates a time, it names no thing.
_TIME_OBJECT = re.compile(rf"(?:{_MONTHS})\b|\d", re.IGNORECASE)


def relations(question: str) -> list[str]:
    """The relational descriptions the question holds (module docstring), one kind per relation:
    "of-name" / "possessive-name" (a relation of a named thing: "the capital of France", "Caroline's
    job"), "of", "possessive", "relative", "reduced-relative", "participle", "role"."""
    text = " ".join(question.split())
    found: list[str] = []
    for pattern in (_OF, _OF_AFTER_POSSESSIVE):
        for m in pattern.finditer(text):
            head, after = m.group(1).lower(), m.group(2)
            if (head in _LIGHT or head in _PRONOUN or (head in _APPOSITION and after[:1].isupper())
                    or _TIME_OBJECT.match(after)):
                continue
            found.append("of-name" if after[:1].isupper() else "of")
    for m in _POSSESSIVE.finditer(text):
        owner = m.group(1) or m.group(2) or ""
        if owner and owner.lower() not in _NOT_POSSESSIVE:
            found.append("possessive-name" if owner[:1].isupper() else "possessive")
    wh = _QUESTION_WORD.match(text)
    start = wh.end() if wh else 0
    for m in _RELATIVE.finditer(text):
        if m.start() < start:
            continue  # the question word itself ("In which country …")
        if m.group(1).lower() == "that":
            before = text[:m.start()].split()
            if not before or before[-1].lower().strip(",") in _NOT_RELATIVE_THAT:
                continue
        found.append("relative")
    found += ["reduced-relative" for _ in _REDUCED.finditer(text)]
    found += ["participle" for _ in _PARTICIPLE.finditer(text)]
    found += ["participle" for m in _ING.finditer(text) if m.group(2).lower() not in _NOT_ING
              and m.group(1).lower() not in _NOT_ING]
    found += ["role" for _ in _ROLE_OF_NAME.finditer(text)]
    found += ["wh-modifier" for _ in _WH_IN_MODIFIER.finditer(text)]
    found += ["participle" for _ in _WH_PARTICIPLE_BY.finditer(text)]
    return found


def is_copular(question: str) -> bool:
    """"What is X?" / "Who was X?": the question asks for the description itself. Not when it ends in a
    participle or a stranded preposition (a passive "Which region is X located?" or a clause "What
    country was X a citizen of?"), nor when "be" is the auxiliary of a participle after its subject
    ("What language were books being translated into …?", `_AUXILIARY_BE`)."""
    text = " ".join(question.split())
    aux = _AUXILIARY_BE.match(text)
    if aux and (aux.group("ing") is None or aux.group("ing").lower() not in _NOT_ING):
        return False
    return bool(_COPULAR.match(text)) and not _CLAUSE_END.search(text)


def hops(question: str) -> int:
    """Relations to resolve: the descriptions, plus the main predicate — except in a copular question
    whose one description is a relation of a named thing ("What is the capital of France?"), which
    asks for that relation itself."""
    found = relations(question)
    if is_copular(question) and len(found) == 1 and found[0] in ("of-name", "possessive-name"):
        return 1
    return len(found) + 1


def features(question: str) -> frozenset[str]:
    """The question's properties by the rules (module docstring): a subset of FEATURES."""
    found: set[str] = set()
    if hops(question) >= 2:
        found.add(MULTI_HOP)
    superlative = any(m.group(1) is None or m.group(1).lower() not in _NOT_SUPERLATIVE
                      for m in _SUPERLATIVE.finditer(question))
    if (_COMPARISON.search(question) or superlative
            or (_ALTERNATIVE.search(question) and _ASKS_CHOICE.match(question))):
        found.add(COMPARISON)
    if _TEMPORAL.search(question):
        found.add(TEMPORAL)
    return frozenset(found)


@dataclass(frozen=True)
class Route:
    """The router's decision: the policy this query runs under (the stages it skips switched off),
    whether later rounds may run, and the entries it adds to the packet's `stages`."""

    policy: Policy
    rounds: bool
    stages: tuple[str, ...]
    features: frozenset[str]


def decide(policy: Policy, found: frozenset[str] | set[str], how: str = "rules", *,
           later_rounds: bool = False) -> Route:
    """The stages for a question with properties `found` under `policy` (module docstring); `later_rounds`:
    the caller runs later rounds after this recall when the decision allows them."""
    if how not in HOW:
        raise ValueError(f"how must be one of {HOW}")
    props = frozenset(f for f in found if f in FEATURES)
    hop = MULTI_HOP in props or COMPARISON in props
    stages = [f"{PREFIX}{how}", *(f"{PREFIX}{f}" for f in FEATURES if f in props)]
    if not hop:
        stages.append(f"{PREFIX}{SINGLE_HOP}")
    if policy.graph_expansion != "none" and hop and later_rounds:
        stages += [f"{PREFIX}{LATER_ROUNDS}", f"{PREFIX}{SKIP_PPR}"]
    if TEMPORAL in props and policy.dedup_jaccard is not None:
        stages.append(f"{PREFIX}{SKIP_DEDUP}")
    if not hop:
        stages.append(f"{PREFIX}{ONE_ROUND}")
    return _applied(policy, tuple(stages), props)


def _applied(policy: Policy, stages: tuple[str, ...], props: frozenset[str]) -> Route:
    """The route `stages` record, under `policy`: the stages they say were skipped switched off."""
    update: dict[str, object] = {}
    if f"{PREFIX}{SKIP_PPR}" in stages and policy.graph_expansion != "none":
        update["graph_expansion"] = "none"
    if f"{PREFIX}{SKIP_DEDUP}" in stages and policy.dedup_jaccard is not None:
        update["dedup_jaccard"] = None
    return Route(policy.model_copy(update=update) if update else policy, f"{PREFIX}{ONE_ROUND}" not in stages,
                 stages, props)


def route(question: str, policy: Policy, *, later_rounds: bool = False) -> Route:
    """The rules' decision for `question` ("router:llm-unavailable" for an LLM policy: graph calls no model)."""
    return decide(policy, features(question), "rules" if policy.router != "llm" else "llm-unavailable",
                  later_rounds=later_rounds)


@dataclass(frozen=True)
class Pinned:
    """A decision read back from a packet's stages: how it was made and its own entries in the stages, in
    their order — from which the properties it found and whether it left the second hop to later rounds."""

    how: str
    stages: tuple[str, ...]

    @property
    def features(self) -> frozenset[str]:
        return frozenset(s[len(PREFIX):] for s in self.stages if s[len(PREFIX):] in FEATURES)

    @property
    def later_rounds(self) -> bool:
        return f"{PREFIX}{LATER_ROUNDS}" in self.stages


def pinned(stages: Sequence[str]) -> Pinned | None:
    """The decision a packet's `stages` record, or None when no router decided that packet."""
    how = next((s[len(PREFIX):] for s in stages if s.startswith(PREFIX) and s[len(PREFIX):] in HOW), None)
    return None if how is None else Pinned(how, tuple(s for s in stages if s.startswith(PREFIX)))


def held(policy: Policy, pin: Pinned) -> Route:
    """The decision `pin` recorded, applied as recorded — not decided again: a packet logged before the
    rules of `decide` changed replays with the stages it ran, and the later rounds of one question run
    what round 1 ran."""
    return _applied(policy, pin.stages, pin.features)


def allows_rounds(stages: Sequence[str]) -> bool:
    """Whether a packet's router left later rounds to run (True when no router decided it). False: one
    round, or two when round 1 found a bridge another claim is about (graph.recall.rounds.expansion_terms,
    `about_only`)."""
    return f"{PREFIX}{ONE_ROUND}" not in stages


def routed(req: RecallRequest, decision: Route) -> RecallRequest:
    """`req` under the decision: its policy with the skipped stages off, the decision's stage entries."""
    return replace(req, policy=decision.policy, route=decision.stages)


__all__ = ["COMPARISON", "ENTRIES", "FEATURES", "HOW", "LATER_ROUNDS", "MULTI_HOP", "TEMPORAL", "Pinned", "Route",
           "allows_rounds", "decide", "features", "held", "hops", "is_copular", "pinned", "relations", "route",
           "routed"]
