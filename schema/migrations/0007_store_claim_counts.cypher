// Claim counts on the Store node (kept by every ingest from here on; graph/store.py): recall sizes its
// index fetches by the namespace's share of the shared indexes. Stores written before this count once.
MATCH (s:Store) WHERE s.claims IS NULL SET s.claims = COUNT { (c:Claim {namespace: s.namespace}) };
