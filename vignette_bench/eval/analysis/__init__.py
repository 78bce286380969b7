"""What report, compare and leaderboard compute from one model's run, below all three: its numbers
(numbers.py: compute, summaries; power.py, what a run could have found; stratified.py, fixed-order
dimensions) and its verdicts (verdicts.py; the default minimum effect is a CLI default, in
vignette_bench/formats/vocabulary.py).
Pages are built in vignette_bench/eval/pages/, the comparison of two runs in vignette_bench/eval/compare/.
Runs are read by vignette_bench/eval/runs.py; the files' formats are in vignette_bench/formats.
"""
