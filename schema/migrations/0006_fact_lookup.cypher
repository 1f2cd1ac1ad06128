// Facts as beliefs (graph/facts.py). The worker finds the current facts of a (subject, predicate)
// to decide support versus supersession; recall reaches facts from claims via SUPPORTED_BY.
CREATE INDEX fact_ns_subject_predicate IF NOT EXISTS FOR (f:Fact) ON (f.namespace, f.subject_id, f.predicate);
CREATE INDEX fact_ns_object IF NOT EXISTS FOR (f:Fact) ON (f.namespace, f.object_id);
