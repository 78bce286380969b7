"""Every file the project writes in one stage and reads in another, one typed class each.

This package is the ground floor: it imports only the standard library, pydantic, pyarrow and
`vignette_bench.errors`/`taxonomy`, never a stage (loader, builder, runtime, report, leaderboard).
Each format is a `Format` (base.py): `schema_version`, `from_json` (which migrates every older
version first), `to_json`, and a JSON Schema generated from the class. docs/FORMATS.md is generated
from them (`python -m vignette_bench.formats.docs`) and a test keeps it current.
"""
