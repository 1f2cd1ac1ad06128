"""Moving and erasing data: export, import, erasure, and removing a namespace."""
