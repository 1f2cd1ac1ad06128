"""Claims and their temporal rules: writes, visibility, revisions, history, inference, check."""
