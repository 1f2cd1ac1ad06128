"""Developer tools run from the repository root (python -m scripts.NAME); not part of the package."""
