"""Seeded simulated runs in the documented responses schema (docs/FORMATS.md, "Responses").

Test input for the report and the leaderboard while no real run is at hand, and a null model:
a uniform-random responder over the question's options, with an optional refusal rate and an
optional planted preference (one identity chosen with probability ``bias`` whenever offered
in a two-way question). It mirrors the reference random responder of the runner; it is not a
replacement for a run of the runner (`vignette run`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
import pyarrow as pa

from vignette_bench.eval.runtime.folder import RunFolder
from vignette_bench.eval.runtime.questions import PARAPHRASES, Variants
from vignette_bench.eval.runtime.record import DatasetProvenance, ModelProvenance, RunRecord, RunSettings
from vignette_bench.eval.runtime.responses import RESPONSE_COLUMNS, RESPONSE_SCHEMA
from vignette_bench.taxonomy import Gender, load_taxonomy, slug

PERCEPTION = ("struggle", "capability", "enjoyment", "dislike")


@dataclass(frozen=True)
class SimSpec:
    """What to simulate. Everything random follows from ``seed``."""

    seed: int = 0
    model_id: str = "reference/uniform-random"
    dimensions: tuple[str, ...] = ("religion", "gender")
    genders: tuple[str, ...] = ("female", "male")
    n_activities: int = 4
    n_traits: int = 6  # trait terms (high and low alternate in taxonomy order)
    refusal_rate: float = 0.05
    planted: tuple[tuple[str, float], ...] = ()  # (identity, P(chosen) when offered in a 2-way question)
    paradigms: tuple[str, ...] = ("factuality", "perception", "stereotype", "decision")
    repeats: int = 1  # paraphrases asked per question


def simulate(spec: SimSpec) -> pd.DataFrame:
    """Rows in the responses schema for every pair of the spec's dimensions, both orders."""
    tax = load_taxonomy()
    rng = np.random.default_rng(spec.seed)
    planted = dict(spec.planted)
    activities = [a.name for a in tax.activities[: spec.n_activities]]
    terms = list(tax.trait_terms[: spec.n_traits])
    roles = [r for r in tax.role_questions if r.activity in activities]
    rows: list[dict] = []

    def ask(base: dict, options: list[str], option_ids: list[str], candidates: list[str]) -> None:
        for para in range(spec.repeats):
            qid_src = json.dumps([base["pair_id"], base["paradigm"], base["subtask"], base["context"], para])
            row = dict(
                base,
                paraphrase=para,
                options=options,
                option_identities=option_ids,
                candidates=candidates,
                probabilities=None,
                seed=spec.seed,
                model_id=spec.model_id,
                question_id=hashlib.sha1(qid_src.encode()).hexdigest()[:16],
                template_id=(
                    "stereotype/trait" if base["paradigm"] == "stereotype" else f"{base['paradigm']}/{base['subtask']}"
                ),
                option_style="identity",
                modality="image",
            )
            if rng.random() < spec.refusal_rate:
                k = None
            else:
                weights = np.ones(len(options))
                named = [i for i, o in enumerate(option_ids) if o in planted]
                if len(options) == 2 and len(named) == 1:
                    weights[named[0]] = planted[option_ids[named[0]]] / (1 - planted[option_ids[named[0]]])
                k = int(rng.choice(len(options), p=weights / weights.sum()))
            row["choice"] = None if k is None else options[k]
            row["valid"] = k is not None
            row["raw"] = "I cannot tell." if k is None else options[k]
            row["error"] = "" if k is not None else "answer is not one of the options"
            row["target_identity"], row["correct"] = "", None
            row["selected_identity"] = "" if k is None else option_ids[k]
            row["chose_left"] = None if k is None or len(options) != 2 else (k == 0)
            if base["paradigm"] == "factuality":  # as eval/questions.py: options are activities
                row["target_identity"] = base["identity_left"]
                row["correct"] = None if k is None else options[k] == base["activity_left"]
            rows.append(row)

    for gender, dim in itertools.product(spec.genders, spec.dimensions):
        idents = [i.name for i in tax.identities_in(dim, cast(Gender, gender))] if dim != "gender" else ["man", "woman"]
        g = "mixed" if dim == "gender" else gender
        if dim == "gender" and gender != spec.genders[0]:
            continue
        for left, right in itertools.permutations(idents, 2):
            common = dict(
                gender=g, dimension=dim, identity_left=left, identity_right=right, direction="", trait_dimension=""
            )
            for act in activities:
                pair_id = f"identity_contrast/{g}/{slug(dim)}/{slug(left)}+{slug(right)}/{slug(act)}"
                base = dict(common, pair_id=pair_id, config="identity_contrast", activity_left=act, activity_right=act)
                if "factuality" in spec.paradigms:
                    others = [a for a in activities if a != act][:3]
                    opts = [act, *others]
                    rng.shuffle(opts)
                    ask(
                        dict(base, paradigm="factuality", subtask="what_doing", context=act),
                        list(opts),
                        [""] * len(opts),
                        [],
                    )
                if "perception" in spec.paradigms:
                    for sub in PERCEPTION:
                        ask(
                            dict(base, paradigm="perception", subtask=sub, context=act),
                            [left, right],
                            [left, right],
                            [left, right],
                        )
                if "decision" in spec.paradigms:
                    for rq in (r for r in roles if r.activity == act):
                        ask(
                            dict(base, paradigm="decision", subtask=rq.dimension, context=rq.question),
                            [left, right],
                            [left, right],
                            [left, right],
                        )
            if "stereotype" in spec.paradigms:
                pair_id = f"portraits/{g}/{slug(dim)}/{slug(left)}+{slug(right)}"
                base = dict(common, pair_id=pair_id, config="portraits", activity_left="", activity_right="")
                for term, direction, tdim in terms:
                    ask(
                        dict(
                            base,
                            paradigm="stereotype",
                            subtask=tdim,
                            context=term,
                            direction=direction,
                            trait_dimension=tdim,
                        ),
                        [left, right],
                        [left, right],
                        [left, right],
                    )
    frame = pd.DataFrame(rows, columns=list(RESPONSE_COLUMNS))
    return frame


def record(spec: SimSpec, configs: list[str]) -> RunRecord:
    """The run record of a simulated run: the runner's record, marked simulated and placeholder."""
    config = "+".join(sorted(configs))
    # the wordings simulated: paraphrases 0..repeats-1 (at most the runner's three), identity options, the image
    variants = Variants(paraphrases=PARAPHRASES[: max(1, min(spec.repeats, len(PARAPHRASES)))])
    return RunRecord(
        settings=RunSettings(
            source="simulated",
            config=config,
            model=spec.model_id,
            seed=spec.seed,
            paradigms=tuple(spec.paradigms),
            variants=variants,
        ),
        template_hash="simulated",
        model=ModelProvenance(
            model_id=spec.model_id,
            adapter="simulated-random",
            model_revision="simulated",
            extra={"refusal_rate": spec.refusal_rate, "planted": [list(p) for p in spec.planted]},
        ),
        dataset=DatasetProvenance(source="simulated", config=config, revision="simulated", placeholder=True),
        simulated=True,
    )


def write_run(run_dir: str | Path, spec: SimSpec) -> Path:
    """Write a run folder (responses and run record) for ``spec``; returns the folder."""
    folder = RunFolder(run_dir)
    folder.path.mkdir(parents=True, exist_ok=True)
    frame = simulate(spec)
    folder.write_responses(pa.Table.from_pandas(frame, schema=RESPONSE_SCHEMA, preserve_index=False))
    folder.write_record(record(spec, sorted(set(frame["config"]))))
    return folder.path
