"""What report, compare and leaderboard compute from runs, below all three: the numbers of one model
(numbers.py: compute, summaries; power.py, stratified.py), its verdicts (verdicts.py) and the page
pieces they are shown with (page.py, figures.py, svg.py, findings.py). The comparison of two runs is
vignette_bench/eval/compare/. Runs are read by vignette_bench/eval/runs.py; the files' formats are in
vignette_bench/formats.
"""
