"""What report, compare and leaderboard compute from runs, below all three so none imports another:
the numbers of one model (numbers.py: compute, summaries; cells.py), the comparison of two
(compare.py, compare_section.py) and the page pieces they are shown with (page.py, figures.py).
Runs are read by vignette_bench/eval/runs.py; the files' formats are in vignette_bench/formats.
"""
