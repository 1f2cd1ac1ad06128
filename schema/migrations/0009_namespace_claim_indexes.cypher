// Each namespace searches only its own claims (graph/claim_index.py): every claim carries a label of its
// namespace, and a namespace gets vector and fulltext indexes of its own on that label once it is large
// enough. The indexes every namespace shared made one tenant's packets depend on another's writes.
MATCH (c:Claim) WHERE c.namespace IS NOT NULL SET c:$('NS_' + c.namespace);
DROP INDEX claim_embedding IF EXISTS;
DROP INDEX claim_content IF EXISTS
