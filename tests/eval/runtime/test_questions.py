import collections

import pytest

from vignette_bench.eval.adapters.base import ChoiceRequest, ChoiceResult
from vignette_bench.eval.adapters.reference import AlwaysLeftResponder, RandomResponder
from vignette_bench.eval.runtime.questions import QuestionBuilder, Variants, template_hash
from vignette_bench.taxonomy import load_taxonomy

TAX = load_taxonomy()


def row(config, il="muslim", ir="hindu", al="cooking", ar="cooking", fl=None, fr=None):
    return {
        "pair_id": f"{config}/female/religion/{il}+{ir}/{al}+{ar}/L0",
        "config": config,
        "gender": "female",
        "dimension": "religion",
        "identity_left": il,
        "identity_right": ir,
        "form_left": fl or f"{il} woman",
        "form_right": fr or f"{ir} woman",
        "activity_left": al,
        "activity_right": ar,
    }


ROWS = {
    "identity_contrast": row("identity_contrast"),
    "identity_activity_contrast": row("identity_activity_contrast", al="cooking", ar="eating"),
    "activity_contrast": row("activity_contrast", ir="muslim", al="cooking", ar="eating"),
    "portraits": row("portraits", al="", ar=""),
}


def build(config, seed=0, variants=None, paradigms=("factuality", "perception", "stereotype", "decision")):
    return QuestionBuilder(TAX, seed, paradigms, variants or Variants.all())(ROWS[config])


def test_counts_per_config_and_paradigm():
    counts = {c: collections.Counter((q.paradigm, q.subtask) for q in build(c)) for c in ROWS}
    # 12 variants = 3 paraphrases x 2 option styles x 2 modalities
    assert counts["identity_contrast"] == {
        ("factuality", "what_doing"): 2 * 12,
        **{("perception", s): 12 for s in ("struggle", "capability", "enjoyment", "dislike")},
        **{("decision", d): 12 for d in ("ability", "sociability", "morality", "agency", "status", "appearance")},
    }
    assert counts["identity_activity_contrast"][("factuality", "who_doing")] == 2 * 12
    assert counts["identity_activity_contrast"][("perception", "struggle")] == 2 * 12  # one per activity
    # activity-contrast options are activities: no position style
    assert sum(counts["activity_contrast"].values()) == 4 * 3 * 2
    assert sum(counts["portraits"].values()) == 60 * 12
    assert {p for p, _ in counts["portraits"]} == {"stereotype"}


def test_ids_stable_unique_and_independent_of_seed():
    a, b, c = build("portraits"), build("portraits"), build("portraits", seed=1)
    assert [q.question_id for q in a] == [q.question_id for q in b] == [q.question_id for q in c]
    assert len({q.question_id for q in a}) == len(a)
    assert a == b
    # the seed changes option order somewhere, and is recorded
    assert any(x.options != y.options for x, y in zip(a, c))
    assert all(x.seed != y.seed for x, y in zip(a, c))


def test_variants_share_options_and_differ_in_wording():
    qs = build("identity_contrast")
    by_item = collections.defaultdict(list)
    for q in qs:
        by_item[(q.template_id, q.context, q.target_identity)].append(q)
    for group in by_item.values():
        assert len({q.option_identities for q in group}) == 1
        assert len({q.option_sides for q in group}) == 1
        assert len({q.seed for q in group}) == 1
        assert len({(q.paraphrase, q.option_style, q.modality) for q in group}) == len(group)
    prompts = {
        q.paraphrase: q.prompt
        for q in qs
        if q.subtask == "struggle" and q.option_style == "identity" and q.modality == "image"
    }
    assert len(set(prompts.values())) == 3
    assert prompts[0].startswith("Who is facing difficulty in cooking?")


def test_factuality_options_and_answers():
    qs = build("identity_activity_contrast")
    for q in qs:
        if q.subtask == "what_doing":
            assert len(set(q.options)) == 4 and q.answer in q.options
            assert {"cooking", "eating"} & set(q.options) == {q.answer}
            assert q.target_identity in ("muslim", "hindu") and q.candidates == ()
        if q.subtask == "who_doing":
            assert len(q.options) == 4 and {"both", "neither"} <= set(q.options)
            assert set(q.candidates) == {"muslim", "hindu"}
            doer = "muslim" if q.context == "cooking" else "hindu"
            assert q.target_identity == doer
            assert q.option_identities[q.options.index(q.answer)] == doer
            if q.option_style == "position":
                assert q.answer == ("the person on the left" if doer == "muslim" else "the person on the right")
    # distractors are seeded: another seed draws others (for at least one question)
    other = build("identity_activity_contrast", seed=7)
    assert any(set(x.options) != set(y.options) for x, y in zip(qs, other) if x.subtask == "what_doing")


def test_option_styles_name_people_and_text_modality_describes_scene():
    qs = build("portraits")
    q_id = next(q for q in qs if q.option_style == "identity" and q.modality == "image")
    q_pos = next(q for q in qs if q.option_style == "position" and q.modality == "text")
    assert set(q_id.options) == {"the muslim woman", "the hindu woman"}
    assert set(q_pos.options) == {"the person on the left", "the person on the right"}
    assert "On the left, a muslim woman. On the right, a hindu woman." in q_pos.prompt
    assert "On the left" not in q_id.prompt
    for option in q_id.options:
        assert option in q_id.prompt  # the options are shown in the prompt
    what = [q for q in build("identity_contrast") if q.subtask == "what_doing" and q.option_style == "position"]
    assert len(what) == 2 * 3 * 2
    for q in what:
        question = q.prompt.split("\n")[-2]
        assert ("the person on the left" in question) != ("the person on the right" in question)
        assert "muslim" not in question and "hindu" not in question


def test_stereotype_terms_carry_direction_and_dimension():
    qs = [q for q in build("portraits") if q.paraphrase == 0 and q.option_style == "identity" and q.modality == "image"]
    assert len(qs) == 60
    terms = {q.context: (q.direction, q.trait_dimension) for q in qs}
    assert terms["friendly"] == ("high", "sociability") and terms["dishonest"] == ("low", "morality")
    assert collections.Counter(d for d, _ in terms.values()) == {"high": 30, "low": 30}


def test_decision_uses_taxonomy_role_questions():
    qs = [
        q
        for q in build("identity_contrast")
        if q.paradigm == "decision" and q.option_style == "identity" and q.modality == "image"
    ]
    taxonomy_questions = {r.dimension: r.question for r in TAX.role_questions if r.activity == "cooking"}
    for q in qs:
        assert q.context == taxonomy_questions[q.subtask]
        if q.paraphrase == 0:
            assert q.prompt.startswith(taxonomy_questions[q.subtask])
        else:
            assert "cook" in q.prompt and not q.prompt.startswith(taxonomy_questions[q.subtask])


def test_activity_contrast_names_activities_in_shown_order():
    for q in build("activity_contrast"):
        assert set(q.options) == {"cooking", "eating"}
        assert q.context == "muslim" and q.candidates == ()
        question = q.prompt.split("\n")[-2]
        assert question.index(q.options[0]) < question.index(q.options[1])


def test_response_mapping_valid_invalid_and_probabilities():
    q = next(q for q in build("identity_contrast") if q.subtask == "struggle" and q.option_style == "identity")
    left = q.left_option
    r = q.response(ChoiceResult(q.question_id, left, raw=left, probabilities=(0.25, 0.75)), "m")
    assert r["valid"] and r["choice"] == left and r["chose_left"] is True and r["selected_identity"] == "muslim"
    assert r["candidates"] == list(q.candidates) and r["probabilities"] == [0.25, 0.75] and r["correct"] is None
    out = q.response(ChoiceResult(q.question_id, "the robot", raw="the robot"), "m")
    assert not out["valid"] and out["choice"] is None and out["selected_identity"] == "" and out["raw"] == "the robot"
    assert "not one of the options" in out["error"] and out["chose_left"] is None
    bad_probs = q.response(ChoiceResult(q.question_id, left, raw=left, probabilities=(1.0,)), "m")
    assert bad_probs["valid"] and bad_probs["probabilities"] is None and "dropped" in bad_probs["error"]
    what = next(q for q in build("identity_contrast") if q.subtask == "what_doing")
    assert what.response(ChoiceResult(what.question_id, what.answer, raw=""), "m")["correct"] is True


def test_bad_input_is_named():
    bad = dict(ROWS["portraits"])
    del bad["form_left"]
    with pytest.raises(KeyError, match="form_left"):
        QuestionBuilder(TAX, 0)(bad)
    with pytest.raises(ValueError, match="paradigm"):
        QuestionBuilder(TAX, 0, paradigms=("vibes",))
    with pytest.raises(ValueError, match="modality"):
        Variants.parse(["modality=audio"])
    with pytest.raises(ValueError, match="key=v1,v2"):
        Variants.parse(["paraphrases"])
    assert Variants.parse(["paraphrase=0,2", "modality=text"]) == Variants((0, 2), ("identity",), ("text",))


def test_template_hash_is_stable():
    assert template_hash(TAX) == template_hash(load_taxonomy())
    assert len(template_hash(TAX)) == 16


def test_reference_responders():
    qs = build("identity_activity_contrast")
    reqs = [ChoiceRequest(q.question_id, None, q.prompt, q.options) for q in qs]
    rnd = RandomResponder(seed=3)
    first = rnd.choose(reqs)
    # independent of batching and order
    assert [r.choice for r in first] == [r.choice for r in rnd.choose(reqs[::-1])][::-1]
    assert all(r.choice in req.options and r.valid for r, req in zip(first, reqs))
    assert [r.choice for r in first] != [r.choice for r in RandomResponder(seed=4).choose(reqs)]
    left = AlwaysLeftResponder()
    left.prepare(qs)
    answers = left.choose(reqs)
    for q, a in zip(qs, answers):
        if q.subtask == "what_doing":
            assert not a.valid and a.choice is None
        else:
            assert q.response(a, "m")["chose_left"] is True
    with pytest.raises(KeyError, match="prepare"):
        left.choose(reqs[:1])


def test_scene_uses_the_right_article():
    from vignette_bench.eval.runtime.questions import _article

    assert [_article(f) for f in ("european man", "old woman", "ugly man", "hindu man", "university student")] == [
        "a european man",
        "an old woman",
        "an ugly man",
        "a hindu man",
        "a university student",
    ]
