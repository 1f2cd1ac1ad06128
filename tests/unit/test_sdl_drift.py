"""The exported SDL is the contract apps depend on: any schema change must re-export it."""

from __future__ import annotations

from pathlib import Path

from palimpsest.api.graphql_schema import schema

SDL = Path(__file__).resolve().parents[2] / "schema" / "palimpsest.graphql"


def test_sdl_file_matches_the_schema() -> None:
    assert SDL.read_text(encoding="utf-8") == schema.as_str() + "\n", (
        "schema/palimpsest.graphql is stale: run `palimpsest export-schema`"
    )
