"""What a page is made of, shared by report, compare, leaderboard, explain and news: sections and the
HTML/Markdown writer (page.py), matplotlib and SVG figures (figures.py, svg.py), the findings block that
opens a report (findings.py), the paper's numbers beside ours (paper.py) and the names a person reads
(names.py). The numbers themselves come from vignette_bench/eval/analysis/.
"""
