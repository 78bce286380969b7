"""What annotators are asked (papers/002, appendix A.2, tables 9 and 10): one list for renders, one for pairs."""

from __future__ import annotations

from dataclasses import dataclass

VISUAL_CUES = (
    "clothing",
    "skin tone",
    "hairstyle",
    "facial features",
    "background",
    "object associations",
    "color associations",
    "other",
)


@dataclass(frozen=True)
class Criterion:
    name: str  # key in the answers file
    question: str  # shown to the annotator; {identity}, {activity}, {left}, {right} are filled per item
    options: tuple[str, ...]  # single choice; () = the visual-cue checklist
    needs_activity: bool = False  # asked only of renders that show an activity (not portraits)


RENDER_CRITERIA = (
    Criterion("identity", "Is the person recognisably {identity}?", ("yes", "no")),
    Criterion("cues", "Which visual cues tell you the identity? (tick all that apply)", ()),
    Criterion("activity", "Is the person {activity}?", ("yes", "no"), needs_activity=True),
    Criterion(
        "ambiguity", "Are there ambiguous or confounding features (identity or activity unclear)?", ("no", "yes")
    ),
)
PAIR_CRITERIA = (
    Criterion("match", "Which person is {left}?", ("left", "right", "cannot tell")),
    Criterion(
        "distinguishable", "Can the two identities ({left} / {right}) be told apart by appearance?", ("yes", "no")
    ),
)
CRITERIA = {"renders": RENDER_CRITERIA, "pairs": PAIR_CRITERIA}
