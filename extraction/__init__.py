"""Everything that turns text into structure: embeddings, contradiction detectors, extractors."""
