// Native HNSW vector indexes, cosine, at the embedding model's dimension (filled in by the runner).
CREATE VECTOR INDEX claim_embedding IF NOT EXISTS FOR (c:Claim) ON c.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: {{embedding_dimension}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (e:Entity) ON e.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: {{embedding_dimension}}, `vector.similarity_function`: 'cosine'}};
CREATE VECTOR INDEX fact_embedding IF NOT EXISTS FOR (f:Fact) ON f.embedding
  OPTIONS {indexConfig: {`vector.dimensions`: {{embedding_dimension}}, `vector.similarity_function`: 'cosine'}};
