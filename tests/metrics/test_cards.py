"""Each metric card is in the evaluate format and its worked example prints what the card says."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
import yaml

from tests import REPO_ROOT

ROOT = REPO_ROOT
NAMES = ("selection_frequency", "log_odds", "pair_comp", "polarity")
SECTIONS = (
    "## Metric Description",
    "## How to Use",
    "### Inputs",
    "### Output Values",
    "## Worked example",
    "## Limitations and Bias",
    "## Citation",
)


def card(name: str) -> str:
    return (ROOT / "metrics" / name / "README.md").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_card_has_front_matter_and_sections(name):
    text = card(name)
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "YAML front matter first"
    meta = yaml.safe_load(match.group(1))
    assert meta["title"] and meta["description"] and {"evaluate", "metric"} <= set(meta["tags"])
    for section in SECTIONS:
        assert section in text, section
    for column in ("selected", "candidates", "context", "probabilities", "chose_left"):
        assert f"**{column}**" in text  # the input contract is documented in every card


@pytest.mark.parametrize("name", NAMES)
def test_worked_example_reproduces(name, monkeypatch):
    example = card(name).split("## Worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", example, re.S).group(1)
    monkeypatch.chdir(ROOT)  # the card says: run from the repository root
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{name}/README.md", "exec"), {})
    assert out.getvalue().strip() == expected.strip()
