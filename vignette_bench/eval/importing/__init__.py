"""`vignette import`: answers collected elsewhere as an ordinary run folder (docs/import.md).

The original VIGNETTE code's CSV outputs (vignette_csv.py) and a documented generic table (table.py)
become responses.parquet + run.json (with a typed `imported` provenance), so report, compare and the
leaderboard's custom lane read them unchanged. Every row is checked against the taxonomy and the question
templates; every problem is listed together (file, row, column) and nothing is written on error.
"""
