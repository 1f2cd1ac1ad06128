"""The background worker ("projections"): reads new claims from `graph`, runs the contradiction
job from `extraction`, writes the edges back — the only code that touches both.

One pass over a namespace repeats `read_batch → candidate_pairs → detect → commit_batch` until
`projections_seq` reaches the store revision. Each batch commits its edges and the new
`projections_seq` together, so a crash anywhere loses at most the batch in flight, and the next
pass redoes it; MERGE on (newer, older, method) makes the redo write nothing twice.

Three ways to run it:

* `run_once(runtime, namespace)` — one synchronous pass, for tests and scripts;
* `BackgroundWorker(runtime).start()` — a daemon thread polling the namespaces with pending work
  (what `Memory.start_worker` and the API use);
* `palimpsest worker` — the same loop as its own process, so workers scale out by namespace.

Which policy: the namespace's own stored default (`Memory.set_default_policy`), read from the
store by every batch — so every worker, in whichever process, applies the policy the namespace
chose, and each claim is projected under the default in effect at its revision (a batch never
spans a change of it), however late the worker gets there. `WorkerConfig.policy_version` is only
an explicit override for tests and benchmarks.

A detector failing (NLI model missing, LLM provider down) is logged and counted in the pass
report and the batch still commits with the other detectors' verdicts: projections never stall
behind a flaky model. Only infrastructure errors (Neo4j unavailable) end a pass; the background
loop then backs off and retries.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from neo4j.exceptions import ServiceUnavailable, SessionExpired

from palimpsest.api.runtime import Runtime
from palimpsest.extraction import entities as ent
from palimpsest.extraction import supersession
from palimpsest.extraction.contradiction import (
    Detector,
    DetectorFactory,
    DetectorOptions,
    TextPair,
    detect_contradictions,
)
from palimpsest.extraction.supersession_llm import LlmInferenceOptions, LlmSupersessionJudge
from palimpsest.graph import policies
from palimpsest.graph import projections as proj
from palimpsest.graph.claims import index as claim_index
from palimpsest.graph.claims import inferred
from palimpsest.graph.claims import terms as claim_terms
from palimpsest.graph.claims.sentence_vectors import ClaimSentences, EmbedStable, backfill_batch, embedded_sentences
from palimpsest.graph.knowledge import entities as graph_entities
from palimpsest.graph.knowledge import facts as graph_facts
from palimpsest.graph.knowledge import gds
from palimpsest.schema.errors import NotFoundError, UnavailableError
from palimpsest.schema.models import DEFAULT_POLICY, Policy

log = logging.getLogger(__name__)
MAX_CACHED_NAMESPACES = 8  # entity-vector caches kept per worker (~1.5 kB per entity each)


@dataclass
class WorkerConfig:
    """Process-level worker settings. Detection, extraction and inference knobs come from the
    namespace's policy; `detector_options` adds what a policy cannot say (local model paths,
    provider credentials, the LLM rate limit).

    `policy_version` is None by default — and then the worker applies each namespace's own stored
    default policy (as of the revisions it projects), which is what `palimpsest serve` and
    `palimpsest worker` do. Set, it overrides that for every namespace this worker processes (a
    version not registered in a namespace falls back to that namespace's default, with a note in
    the report). The override exists for tests and benchmarks that pin a policy without writing a
    setting; it is kept rather than removed because it costs nothing when unset, and the setting
    wins unless someone asked for the override explicitly. A deployment should not use it: two
    workers with different overrides would project the same namespace differently."""

    policy_version: str | None = None
    batch_claims: int = 200
    max_batches_per_pass: int | None = None
    detector_options: DetectorOptions = field(default_factory=DetectorOptions)
    # The entity job (after the contradiction job, committed in the same transaction). The
    # policy's `extractor` picks offline or LLM extraction; these are the process-level knobs of
    # each (the LLM's rate limit, batch size, provider plumbing — not the model, which is policy).
    entities: bool = True
    extractor: ent.ExtractorOptions = field(default_factory=ent.ExtractorOptions)
    llm_extractor: ent.LlmExtractorOptions = field(default_factory=ent.LlmExtractorOptions)
    # The LLM judge of inferred supersession: provider plumbing, batch size, rate limit (the model is policy).
    llm_inference: LlmInferenceOptions = field(default_factory=LlmInferenceOptions)
    # Near-duplicate merging by embedding similarity (names embedded with the runtime's embedder):
    # a new name joins the earlier entity with the highest exact cosine (rounded to 6 decimals) at or
    # above the threshold, compared with every earlier entity of the namespace (ent.EntityVectors).
    entity_embeddings: bool = True
    entity_merge_threshold: float = 0.92
    # Every fact the extractor states is embedded as "subject predicate object" (graph.knowledge.facts.fact_text)
    # and stored with the fact, for fact retrieval (policy `fact_retrieval`). Only LLM extraction states
    # facts, so the offline extractor costs nothing here.
    fact_embeddings: bool = True
    # The sentence vectors `rerank: sentences` reads (graph.claims.sentence_vectors), embedded once per claim and
    # stored with it: with its projection, or (claims projected before) by a backfill of at most `batch_claims`
    # a pass. None: when the namespace's default policy reranks by sentences; True or
    # False: always or never (True serves a namespace that asks for the stage in a per-request policy). A
    # recall embeds whatever is not stored, so this changes what the stage costs, never what it returns.
    sentence_vectors: bool | None = None
    # Global PageRank refresh when the entity graph grew enough since the last run, and on any change
    # once the namespace is caught up (so an idle namespace's scores are those of its final graph).
    pagerank: bool = True
    pagerank_min_growth: float = 0.1
    pagerank_min_new_entities: int = 50


@dataclass
class PassReport:
    """What one pass over one namespace did; `detector_failures` counts failed detector runs by method.

    `policy_version` is the policy the pass's last batch ran under (the namespace's default at
    `to_seq`, or the config's override); `policy_versions` lists every one its batches used, in order."""

    namespace: str
    policy_version: str
    from_seq: int
    to_seq: int
    store_revision: int = 0
    batches: int = 0
    subjects: int = 0
    pairs: int = 0
    verdicts: int = 0
    contradictions: int = 0
    edges_created: int = 0
    entities_created: int = 0
    mentions_created: int = 0
    # Extraction by the policy's extractor: model calls, their summed cost (litellm's price list;
    # calls it cannot price are counted apart), claims whose call failed (they got offline links),
    # and what the facts did to the store.
    extractor: str = "offline"
    extraction_calls: int = 0
    extraction_cost_usd: float = 0.0
    extraction_unpriced_calls: int = 0
    extraction_failed_claims: int = 0
    facts_created: int = 0
    facts_superseded: int = 0
    fact_supports_created: int = 0
    facts_dropped: int = 0
    # Inferred supersession (policy.inferred_supersession): pairs judged, supersessions written,
    # and why the others were rejected (by the judge's test name).
    inferred_pairs: int = 0
    inferred_supersessions: int = 0
    inferred_rejected: dict[str, int] = field(default_factory=dict)
    # The LLM judge of inferred supersession (policy.inferred_judge = "llm"): calls, cost, pairs left undecided.
    inference_llm_calls: int = 0
    inference_llm_cost_usd: float = 0.0
    inference_llm_failed_pairs: int = 0
    pagerank_runs: int = 0
    sentence_vectors: int = 0  # claims that took their sentence vectors
    detector_failures: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    policy_versions: list[str] = field(default_factory=list)

    @property
    def caught_up(self) -> bool:
        return self.to_seq >= self.store_revision

    def as_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "policy_version": self.policy_version,
                "policy_versions": list(self.policy_versions), "from_seq": self.from_seq,
                "to_seq": self.to_seq, "store_revision": self.store_revision, "batches": self.batches,
                "subjects": self.subjects, "pairs": self.pairs, "verdicts": self.verdicts,
                "contradictions": self.contradictions, "edges_created": self.edges_created,
                "entities_created": self.entities_created, "mentions_created": self.mentions_created,
                "extractor": self.extractor, "extraction_calls": self.extraction_calls,
                "extraction_cost_usd": round(self.extraction_cost_usd, 8),
                "extraction_unpriced_calls": self.extraction_unpriced_calls,
                "extraction_failed_claims": self.extraction_failed_claims, "facts_created": self.facts_created,
                "facts_superseded": self.facts_superseded, "fact_supports_created": self.fact_supports_created,
                "facts_dropped": self.facts_dropped, "inferred_pairs": self.inferred_pairs,
                "inferred_supersessions": self.inferred_supersessions,
                "inferred_rejected": dict(sorted(self.inferred_rejected.items())),
                "inference_llm_calls": self.inference_llm_calls,
                "inference_llm_cost_usd": round(self.inference_llm_cost_usd, 8),
                "inference_llm_failed_pairs": self.inference_llm_failed_pairs, "pagerank_runs": self.pagerank_runs,
                "sentence_vectors": self.sentence_vectors,
                "detector_failures": dict(sorted(self.detector_failures.items())), "problems": self.problems,
                "seconds": round(self.seconds, 4)}


class ProjectionWorker:
    """Runs passes. Holds the detectors between passes (a loaded NLI model, the LLM rate limit).

    `detectors` replaces the policy's choice outright — for tests and benchmarks that need a
    specific detector (or a deliberately failing one).
    """

    def __init__(self, runtime: Runtime, config: WorkerConfig | None = None, *,
                 detectors: Sequence[Detector] | None = None) -> None:
        self.rt = runtime
        self.config = config or WorkerConfig()
        self.factory = DetectorFactory(self.config.detector_options)
        self.fixed_detectors = list(detectors) if detectors is not None else None
        self.failures: Counter[str] = Counter()
        self.pass_errors: list[str] = []  # per-namespace failures of the last run_pending
        self._gds: bool | None = None
        # LLM extractors by model, kept across passes so their rate limit spans passes too.
        self._llm_extractors: dict[str, ent.LlmExtractor] = {}
        self._extractor_lock = threading.Lock()
        # LLM supersession judges by model (policy.inferred_judge = "llm"), kept for their rate limit.
        self._llm_judges: dict[str, Any] = {}
        # Entity name vectors by namespace (exact near-duplicate search): a cache of Entity.embedding,
        # checked against the dictionary on every batch, for the most recently used namespaces.
        self._vectors: OrderedDict[str, ent.EntityVectors] = OrderedDict()
        self._vectors_lock = threading.Lock()

    @property
    def _db(self) -> str | None:
        return self.rt.settings.database

    def policy_for(self, namespace: str, default: str | None = None) -> tuple[Policy, list[str]]:
        """The policy to project with: the config's override if set, else the namespace's default
        (`default`, as read with the batch; without it, the stored default now). Uncached: a policy
        is one small read per batch that changes it, and a namespace can be dropped and rebuilt."""
        if default is None:
            default = policies.default_policy_version(self.rt.driver, namespace, self._db)
        problems: list[str] = []
        for wanted in ([self.config.policy_version] if self.config.policy_version else []) + [default]:
            try:
                found = policies.get_policy(self.rt.driver, namespace, wanted, self._db)
                # A model the operator no longer allows is not called: its stage runs offline, noted.
                allowed, notes = self.rt.models.for_worker(found)
                for note in notes:
                    log.warning(note)
                return allowed, problems + notes
            except NotFoundError:
                note = f"policy {wanted!r} is not registered in {namespace!r}; using "
                note += f"{default!r}" if wanted != default else f"{DEFAULT_POLICY.version!r}"
                log.warning(note)
                problems.append(note)
        return DEFAULT_POLICY, problems

    def run_once(self, namespace: str, *, pagerank: bool = True) -> PassReport:
        """Process batches until the namespace is caught up (or `max_batches_per_pass` is reached);
        then, with `pagerank`, refresh global PageRank if the entity graph grew enough."""
        started = time.perf_counter()
        # A namespace that grew past exact search before its indexes could be made (or in a database
        # migrated from shared indexes) gets them here; once made, this is one read.
        claim_index.ensure_quietly(self.rt.driver, namespace, self._db)
        claim_terms.backfill_pass(self.rt.driver, namespace, database=self._db)
        state = proj.projections_state(self.rt.driver, namespace, self._db)
        seq = state.projections_seq if state else 0
        default = state.default_policy_at(seq + 1) if state else DEFAULT_POLICY.version
        policy, problems = self.policy_for(namespace, default)
        report = PassReport(namespace, policy.version, seq, seq, state.revision if state else 0, problems=problems,
                            extractor=policy.extractor)
        sentences = self._sentence_embedder(policy)
        if sentences is not None:  # claims projected before their sentences were kept
            report.sentence_vectors += backfill_batch(self.rt.driver, namespace, *sentences,
                                                      batch=self.config.batch_claims, database=self._db)
        detectors = self._detectors(policy, report)
        limit = self.config.max_batches_per_pass
        while limit is None or report.batches < limit:
            batch = proj.read_batch(self.rt.driver, namespace, self.config.batch_claims, self._db)
            if batch is None:
                break
            report.store_revision = max(report.store_revision, batch.store_revision)
            if batch.default_policy != default:  # the namespace changed its default at this batch
                default = batch.default_policy
                changed, notes = self.policy_for(namespace, default)
                report.problems.extend(notes)
                if changed != policy:
                    policy, detectors = changed, self._detectors(changed, report)
                    report.policy_version, report.extractor = policy.version, policy.extractor
            if not report.policy_versions or report.policy_versions[-1] != policy.version:
                report.policy_versions.append(policy.version)
            try:
                self._process(batch, policy, detectors, report)
            except proj.StaleBatchError:
                # Another worker committed this batch first; its edges are the same, so re-read and go on.
                log.info("projections %s: batch from %d already committed elsewhere", namespace, batch.from_seq)
                continue
        if pagerank:
            self.refresh_pagerank(namespace, report)
        report.seconds = time.perf_counter() - started
        if report.batches:
            log.info("projections %s: %s", namespace, report.as_dict())
        return report

    def _detectors(self, policy: Policy, report: PassReport) -> Sequence[Detector]:
        if self.fixed_detectors is not None:
            return self.fixed_detectors
        detectors, problems = self.factory.for_settings(policy.contradiction)
        report.problems.extend(problems)
        return detectors

    def _process(self, batch: proj.Batch, policy: Policy, detectors: Sequence[Detector], report: PassReport) -> None:
        settings = policy.contradiction
        # No detectors, no verdicts: skip the (vector-index heavy) candidate search altogether.
        pairs = proj.candidate_pairs(
            self.rt.driver, batch.namespace, batch.subjects, neighbour_similarity=settings.neighbour_similarity,
            max_pairs_per_claim=settings.max_pairs_per_claim, database=self._db,
        ) if detectors else []
        result = detect_contradictions([TextPair(p.newer_content, p.older_content) for p in pairs], detectors)
        for method in result.failures:
            self.failures[method] += 1
            report.detector_failures[method] = report.detector_failures.get(method, 0) + 1
        edges = [proj.EdgeWrite(pairs[i].newer_id, pairs[i].older_id, v.method, v.score, pairs[i].revision, v.reason)
                 for i, v in result.contradictions]
        entity_batch, fact_writes = (self._entities(batch, policy, report) if self.config.entities
                                     else (None, []))
        inferred_writes = (self._inferred(batch, policy, entity_batch or graph_entities.EntityBatch(), report)
                           if policy.inferred_supersession else [])
        committed = proj.commit_batch(self.rt.driver, batch.namespace, batch.from_seq, batch.to_seq, edges, self._db,
                                      entities=entity_batch, facts=fact_writes, inferred=inferred_writes,
                                      sentences=self._sentences(batch, policy))
        report.sentence_vectors += committed.sentence_vectors
        report.inferred_supersessions += committed.inferred_created
        report.entities_created += committed.entity_counters.get("entities_created", 0)
        report.mentions_created += committed.entity_counters.get("mentions_created", 0)
        report.facts_created += committed.fact_counters.get("facts_created", 0)
        report.facts_superseded += committed.fact_counters.get("facts_superseded", 0)
        report.fact_supports_created += committed.fact_counters.get("supports_created", 0)
        report.batches += 1
        report.to_seq = committed.to_seq
        report.subjects += len(batch.subjects)
        report.pairs += len(pairs)
        report.verdicts += len(result.verdicts)
        report.contradictions += len(result.contradictions)
        report.edges_created += committed.edges_created

    def _sentence_embedder(self, policy: Policy) -> tuple[str, EmbedStable] | None:
        """The model name and stable embedding of sentences, when this worker keeps them under `policy`
        (`WorkerConfig.sentence_vectors`) and its embedder computes stable rows — the bits a recall would
        compute, which is what makes a stored row interchangeable with a fresh one."""
        wanted = self.config.sentence_vectors
        if wanted is None:
            wanted = policy.rerank == "sentences"
        embed = getattr(self.rt.embedder, "embed_stable", None)
        model = getattr(self.rt.embedder, "model_name", None)
        if not wanted or embed is None or not isinstance(model, str):
            return None
        return model, embed

    def _sentences(self, batch: proj.Batch, policy: Policy) -> list[ClaimSentences]:
        """The batch's new claims with their sentences embedded, when this worker keeps them. A claim restored
        by a retraction is not embedded again: it got its vectors when it was written, or gets them from the
        backfill, which covers every claim projected without them."""
        sentences = self._sentence_embedder(policy)
        if sentences is None:
            return []
        fresh = {s.id: s.content for s in batch.subjects if s.revision == s.claim_revision}
        return embedded_sentences(sorted(fresh.items()), *sentences)

    def extractor_for(self, policy: Policy) -> ent.Extractor:
        """The policy's extractor; an LLM extractor is built once per model and kept."""
        if policy.extractor != "llm" or not policy.extractor_model:
            return ent.OfflineExtractor(self.config.extractor)
        with self._extractor_lock:
            found = self._llm_extractors.get(policy.extractor_model)
            if found is None:
                found = self._llm_extractors[policy.extractor_model] = ent.LlmExtractor(
                    policy.extractor_model, self.config.llm_extractor, offline=self.config.extractor)
            return found

    def _entities(self, batch: proj.Batch, policy: Policy,
                  report: PassReport) -> tuple[graph_entities.EntityBatch, list[graph_facts.FactWrite]]:
        """The entity job for one batch: extract (offline or LLM, as the policy says), resolve, backfill
        older claims; then map the extracted facts onto the resolved entity ids."""
        cfg, ns = self.config, batch.namespace
        seen: set[str] = set()
        fresh: list[ent.ClaimText] = []
        restored: list[ent.ClaimText] = []
        for s in batch.subjects:
            if s.id not in seen:
                seen.add(s.id)
                text = ent.ClaimText(s.id, s.content, s.metadata, s.revision, s.valid_from, s.valid_to,
                                     s.batch_index)
                # A claim restored by a retraction was read when it was written: relink it, never re-ask a model.
                (fresh if s.revision == s.claim_revision else restored).append(text)
        claims = sorted(fresh + restored, key=lambda c: (c.revision, c.position, c.id))
        if not claims:
            return graph_entities.EntityBatch(), []
        dictionary = graph_entities.load_dictionary(self.rt.driver, ns, self._db)
        known = [ent.KnownEntity(r.id, r.name, r.aliases) for r in dictionary]
        matcher = ent.build_matcher(known)
        extraction = self.extractor_for(policy).extract(fresh, matcher)
        if restored:
            again = ent.link_and_propose(restored, matcher, cfg.extractor)
            for cid, ids in again.links.items():
                extraction.linked.links.setdefault(cid, set()).update(ids)
            extraction.linked.unresolved.extend(again.unresolved)
        report.extraction_calls += extraction.calls
        report.extraction_cost_usd += extraction.cost_usd
        report.extraction_unpriced_calls += extraction.unpriced_calls
        report.extraction_failed_claims += len(extraction.failed_claims)
        report.problems.extend(extraction.problems)
        if extraction.failed_claims:
            self.failures["extractor"] += 1
        linked = extraction.linked
        vectors: dict[str, list[float]] = {}
        index: ent.EntityVectors | None = None
        if cfg.entity_embeddings and linked.unresolved:
            # Each name is embedded as its first proposal in resolution order wrote it (the surface that
            # becomes the entity's name), without padding: the same bits whatever else is embedded.
            surfaces: dict[str, str] = {}
            for p in sorted(linked.unresolved, key=lambda p: p.order):
                surfaces.setdefault(p.mention.canonical, p.mention.surface)
            keys = sorted(surfaces)
            embed = getattr(self.rt.embedder, "embed_stable", self.rt.embedder.embed)
            vectors = dict(zip(keys, embed([surfaces[k] for k in keys]), strict=True))
            index = self._entity_vectors(ns, dictionary)
        result = ent.resolve(ns, claims, linked, vectors=vectors, index=index,
                             threshold=cfg.entity_merge_threshold)
        mentions = list(result.mentions)
        if result.introduced and batch.from_seq > 0:
            # Older claims naming a key first resolved here (new entities and new aliases alike).
            older = graph_entities.claims_naming(self.rt.driver, ns, sorted(result.introduced), batch.from_seq,
                                                 database=self._db)
            mentions.extend(ent.backfill_links(older, result.new_entities, result.introduced))
        resolved, dropped = ent.resolve_facts(extraction.facts, matcher, known, result)
        report.facts_dropped += len(extraction.dropped) + len(dropped)
        for reason in (*extraction.dropped, *dropped):
            log.info("projections %s: fact dropped: %s", ns, reason)
        texts = [graph_facts.fact_text(f.subject, f.predicate, f.object) for f in resolved]
        fact_vectors = self._fact_vectors(texts) if cfg.fact_embeddings else {}
        facts = [graph_facts.FactWrite(f.claim_id, f.revision, f.subject_id, f.subject, f.predicate, f.object,
                                       f.object_key, f.object_id, f.valid_from, f.valid_to, f.confidence,
                                       f.single_valued, fact_vectors.get(text)) for f, text in zip(resolved, texts,
                                                                                                   strict=True)]
        return graph_entities.EntityBatch(
            new_entities=[{"id": e.id, "name": e.name, "canonical": e.canonical, "type": e.type,
                           "revision": e.revision, "embedding": vectors.get(e.canonical)}
                          for e in result.new_entities],
            aliases=[{"id": eid, "alias": a} for eid, aliases in sorted(result.aliases.items()) for a in aliases],
            mentions=[{"claim": c, "entity": e, "revision": r} for c, e, r in sorted(set(mentions))],
        ), facts

    def _fact_vectors(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """Each distinct fact text embedded once, with `embed_stable` where the embedder has it: a fact's
        vector is then the same bits whichever other facts share the batch, so fact retrieval ranks the
        same whatever batches the worker cut. Only statements that create a fact store theirs (the first
        statement of a triple names it); the few supports of an existing fact embed for nothing."""
        unique = sorted(set(texts))
        if not unique:
            return {}
        embed = getattr(self.rt.embedder, "embed_stable", self.rt.embedder.embed)
        return dict(zip(unique, embed(unique), strict=True))

    def _entity_vectors(self, namespace: str, dictionary: Sequence[graph_entities.EntityRow]) -> ent.EntityVectors:
        """The namespace's entity vectors, brought up to date with the dictionary just read. Vectors never
        change once written, so the cache only fetches entities it has not seen; one whose name differs
        from the cached one (the namespace was dropped and rebuilt) or that is gone rebuilds it."""
        with self._vectors_lock:
            index = self._vectors.pop(namespace, None)
        wanted = {r.id: r.name for r in dictionary if r.embedded}
        if index is None or any(wanted.get(i) != index.name_of(i) for i in index.ids()):
            index = ent.EntityVectors()
        missing = [i for i in wanted if i not in index]
        for eid, key, name, vector in graph_entities.entity_vectors(self.rt.driver, namespace, missing,
                                                                    database=self._db):
            index.add(eid, key, name, vector)
        with self._vectors_lock:
            self._vectors[namespace] = index
            while len(self._vectors) > MAX_CACHED_NAMESPACES:
                self._vectors.popitem(last=False)
        return index

    def _inferred(self, batch: proj.Batch, policy: Policy, entities: graph_entities.EntityBatch,
                  report: PassReport) -> list[inferred.InferredWrite]:
        """Inferred supersession for one batch: claims written in it without a claim_key, judged
        against the older current claims that share an entity with them or are among their nearest
        neighbours in the namespace (graph.claims.inferred.inference_candidates), at most
        `contradiction.max_pairs_per_claim` each.

        Runs after the entity job because the batch's MENTIONS are only committed with it: they
        are passed along in memory. A claim restored by a retraction is not a subject here — it
        is the older side of a pair, never a new statement. The decisions are written by the
        projections commit (graph.claims.inferred.write_inferred), which re-checks them under the lock.
        """
        subjects = [s for s in batch.subjects if s.claim_key is None and s.revision == s.claim_revision]
        if not subjects:
            return []
        mentions: dict[str, set[str]] = {}
        for m in entities.mentions:
            mentions.setdefault(str(m["claim"]), set()).add(str(m["entity"]))
        names = {str(e["id"]): str(e["name"]) for e in entities.new_entities}
        canonicals = {str(e["id"]): str(e["canonical"]) for e in entities.new_entities}
        # The subject's own names and codes, for the fulltext half of the neighbour search.
        lexical = {s.id: [m.text for m in supersession.frame_of(s.content).marks][:4] for s in subjects}
        found = inferred.inference_candidates(
            self.rt.driver, batch.namespace, [s.id for s in subjects], extra_mentions=mentions, extra_names=names,
            extra_canonicals=canonicals,
            min_similarity=policy.inferred_min_similarity, limit=policy.contradiction.max_pairs_per_claim,
            neighbours=True, neighbour_similarity=policy.inferred_candidate_similarity, lexical=lexical,
            database=self._db,
        )
        # Write order (revision, then place in the batch): versions written together chain v1 ← v2 ← v3.
        found.sort(key=lambda f: (f.subject.revision, f.subject.batch_index, f.subject.id))
        views = [(supersession.ClaimView(f.subject.id, f.subject.content, f.subject.entities), f.subject.revision)
                 for f in found]
        candidates = {f.subject.id: [supersession.Candidate(
            supersession.ClaimView(c.id, c.content, c.entities), cos) for c, cos in f.candidates] for f in found}
        plan_report = supersession.PlanReport()
        judge_fn = self._inference_judge(policy, views, candidates, report)
        decided = supersession.plan(views, candidates, min_similarity=policy.inferred_min_similarity,
                                    min_confidence=policy.inferred_min_confidence,
                                    heuristic_threshold=policy.contradiction.heuristic_threshold, report=plan_report,
                                    judge_fn=judge_fn)
        report.inferred_pairs += plan_report.pairs
        for kind, n in plan_report.rejected.items():
            report.inferred_rejected[kind] = report.inferred_rejected.get(kind, 0) + n
        return [inferred.InferredWrite(d.newer_id, d.older_id, d.revision, d.confidence, d.kind, d.reason)
                for d in decided]

    def _inference_judge(self, policy: Policy, views: Sequence[tuple[supersession.ClaimView, int]],
                         candidates: dict[str, list[supersession.Candidate]],
                         report: PassReport) -> supersession.Judge:
        """The judge `plan` calls: offline (frames, then entities), or the LLM's verdicts on every
        bounded candidate pair of the batch, asked in batched calls before planning. A failed LLM call
        leaves its pairs undecided (no supersession), counted in the report, never a guess."""
        def offline(newer: supersession.ClaimView, older: supersession.ClaimView, cos: float) -> supersession.Judgement:
            return supersession.judge_offline(
                newer, older, cos, min_similarity=policy.inferred_min_similarity,
                min_confidence=policy.inferred_min_confidence,
                frame_min_similarity=policy.inferred_candidate_similarity,
                heuristic_threshold=policy.contradiction.heuristic_threshold)
        if policy.inferred_judge != "llm" or not policy.inferred_llm_model:
            return offline
        with self._extractor_lock:
            judge = self._llm_judges.get(policy.inferred_llm_model)
            if judge is None:
                judge = self._llm_judges[policy.inferred_llm_model] = LlmSupersessionJudge(
                    policy.inferred_llm_model, self.config.llm_inference)
        by_id = {v.id: v for v, _ in views}
        pairs = [(by_id[sid], c.claim) for sid, cands in candidates.items() if sid in by_id for c in cands]
        verdicts = judge.judge_pairs(pairs, min_confidence=policy.inferred_min_confidence)
        report.inference_llm_calls += verdicts.calls
        report.inference_llm_cost_usd += verdicts.cost_usd
        report.inference_llm_failed_pairs += verdicts.failed_pairs
        if verdicts.problems:
            self.failures["inference_llm"] += 1
            report.problems.extend(verdicts.problems)

        def llm(newer: supersession.ClaimView, older: supersession.ClaimView, cos: float) -> supersession.Judgement:
            return verdicts.get(newer.id, older.id)
        return llm

    def refresh_pagerank(self, namespace: str, report: PassReport | None = None, *,
                         exact: bool | None = None) -> graph_entities.PageRankRun | None:
        """PageRank is a derived view, refreshed after projections_seq has moved (never delaying it):
        when the graph grew enough (`pagerank_min_growth`, `pagerank_min_new_entities`), and — with
        `exact`, by default when the pass caught up — whenever it differs at all from the graph last
        ranked, so the scores of an idle namespace are those of its final graph, not of wherever
        the last large-enough growth happened to fall."""
        if not (self.config.entities and self.config.pagerank):
            return None
        exact = (report is not None and report.caught_up) if exact is None else exact
        changed = report is None or bool(report.entities_created + report.mentions_created + report.facts_created)
        if not (changed or exact):
            return None
        if self._gds is None:
            self._gds = gds.gds_available(self.rt.driver, self._db)
        if not self._gds:
            return None
        try:
            run = gds.refresh_pagerank(self.rt.driver, namespace, min_growth=self.config.pagerank_min_growth,
                                       min_new_entities=self.config.pagerank_min_new_entities, exact=exact,
                                       database=self._db)
        except Exception as exc:  # a derived view: never stall projections behind it
            if report is not None:
                report.problems.append(f"pagerank: {type(exc).__name__}: {exc}")
            log.exception("pagerank refresh of %s failed", namespace)
            return None
        if report is not None:
            report.pagerank_runs += int(run.ran)
        return run

    def run_pending(self, namespaces: Sequence[str] | None = None, *, pagerank: bool = True) -> list[PassReport]:
        """One pass over every namespace with pending work (or over the given ones), each namespace once.

        The pending list is read again after every namespace's turn, and the next turn goes to the smallest
        backlog not yet served in this pass: a tenant that starts writing mid-pass waits for one turn of
        one other namespace, not for a whole pass over every bulk import in the database."""
        if not namespaces:  # also those caught up but past exact search without indexes (after an upgrade)
            for grown in claim_index.unindexed(self.rt.driver, self._db):
                claim_index.ensure_quietly(self.rt.driver, grown, self._db)
        reports: list[PassReport] = []
        self.pass_errors = []
        served: set[str] = set()
        while (ns := self._next_turn(namespaces, served)) is not None:
            served.add(ns)
            try:
                reports.append(self.run_once(ns, pagerank=pagerank))
            except (ServiceUnavailable, SessionExpired, UnavailableError):
                raise  # the database is gone (graph.db.errors maps the driver's errors): the whole pass backs off
            except Exception as exc:  # one namespace's trouble (e.g. deleted mid-pass) must not stall the rest
                self.failures["namespace"] += 1
                self.pass_errors.append(f"{type(exc).__name__}: {exc}")
                log.exception("projections of %s failed; other namespaces go on", ns)
        return reports

    def _next_turn(self, namespaces: Sequence[str] | None, served: set[str]) -> str | None:
        """The next namespace of this pass: the given ones in order, or the pending one with the smallest
        backlog (graph.projections.pending_namespaces) not served yet."""
        names = list(namespaces) if namespaces else proj.pending_namespaces(self.rt.driver, self._db)
        return next((ns for ns in names if ns not in served), None)


_default_workers: dict[int, ProjectionWorker] = {}
_default_lock = threading.Lock()


def run_once(runtime: Runtime, namespace: str, config: WorkerConfig | None = None, *,
             detectors: Sequence[Detector] | None = None) -> PassReport:
    """One synchronous pass over `namespace`. Without config or detectors, reuses one worker per
    runtime so repeated calls keep their loaded models and rate limits."""
    if config is None and detectors is None:
        with _default_lock:
            worker = _default_workers.get(id(runtime))
            if worker is None or worker.rt is not runtime:  # ids are reused after a runtime is collected
                worker = _default_workers[id(runtime)] = ProjectionWorker(runtime)
    else:
        worker = ProjectionWorker(runtime, config, detectors=detectors)
    return worker.run_once(namespace)


class BackgroundWorker:
    """The worker loop on a daemon thread: every `interval` seconds (or on `wake()`), one pass over
    the namespaces with pending work — or only `namespaces`, if given.

    Errors never kill the thread: they are logged and counted, and the loop backs off (doubling
    up to `max_backoff`) until a pass succeeds again.
    """

    def __init__(self, runtime: Runtime, *, namespaces: Sequence[str] | None = None, interval: float = 1.0,
                 config: WorkerConfig | None = None, detectors: Sequence[Detector] | None = None,
                 max_backoff: float = 30.0, keep_reports: int = 100) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.worker = ProjectionWorker(runtime, config, detectors=detectors)
        self.namespaces = list(namespaces) if namespaces else None
        self.interval = interval
        self.max_backoff = max_backoff
        self.reports: deque[PassReport] = deque(maxlen=keep_reports)
        self.errors = 0
        self.last_error: str | None = None
        self.passes = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        # Namespaces whose graph changed since their PageRank was last known exact: ranked with
        # `exact` at the first pass that finds them idle (while busy, the growth throttle applies).
        self._unranked: set[str] = set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> BackgroundWorker:
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="palimpsest-projections", daemon=True)
        self._thread.start()
        return self

    def wake(self) -> None:
        """Run the next pass now instead of at the end of the interval (e.g. right after an ingest)."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        delay = self.interval
        while not self._stop.is_set():
            try:
                reports = self.worker.run_pending(self.namespaces, pagerank=False)
                for error in self.worker.pass_errors:
                    self.errors += 1
                    self.last_error = error
                if self.worker.pass_errors:
                    delay = min(max(delay * 2, self.interval), self.max_backoff)
                    self._wake.wait(delay)
                    self._wake.clear()
                    if not reports:
                        continue
                for report in reports:
                    if report.batches:
                        self.reports.append(report)
                self.passes += 1
                busy = {report.namespace for report in reports if report.batches}
                for report in reports:  # after the pass is counted: PageRank never delays projections
                    if report.batches:
                        self.worker.refresh_pagerank(report.namespace, report, exact=False)
                for ns in sorted(self._unranked - busy):
                    self.worker.refresh_pagerank(ns, exact=True)
                self._unranked = busy
                delay = self.interval
            except Exception as exc:  # keep the thread alive; the next pass retries from projections_seq
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("projections pass failed; retrying in %.1fs", delay)
                delay = min(max(delay * 2, self.interval), self.max_backoff)
            self._wake.wait(delay)
            self._wake.clear()

    def __enter__(self) -> BackgroundWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
