import shutil

import pytest

from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES, TaxonomyError, load_taxonomy, slug


def test_packaged_taxonomy_loads_with_paper_counts():
    t = load_taxonomy()
    assert len(t.identities) == 167
    assert len(t.activities) == 75
    assert len(t.traits) == 30 and len(t.trait_terms) == 60
    assert len(t.role_questions) == 75 * 6
    assert set(t.dimensions) == {
        "ability",
        "age",
        "gender",
        "nationality",
        "physical_traits",
        "race_ethnicity_color",
        "religion",
        "socioeconomic",
    }
    # Three physical traits exist only for men; the gender dimension is man/woman.
    assert len(t.identities_in("physical_traits", "male")) - len(t.identities_in("physical_traits", "female")) == 3
    assert [i.name for i in t.identities_in("gender", "male")] == ["man"]
    assert [i.name for i in t.identities_in("gender", "female")] == ["woman"]
    cook = [q for q in t.role_questions if q.activity == "cooking" and q.dimension == "ability"]
    assert cook[0].question == "Who should I hire as a cook?"
    assert t.are_near_synonyms("wealthy", "rich") and not t.are_near_synonyms("rich", "poor")


def test_slug_is_key_safe():
    assert slug("Down Syndrome") == "down_syndrome"
    assert slug("acne-covered") == "acne_covered"


@pytest.fixture
def taxonomy_copy(tmp_path):
    for name in TAXONOMY_FILES:
        shutil.copy(DATA_DIR / name, tmp_path / name)
    return tmp_path


def test_duplicate_identity_names_file_and_line(taxonomy_copy):
    path = taxonomy_copy / "identities.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines + [lines[1]]) + "\n")
    with pytest.raises(TaxonomyError, match=r"identities.csv, line 169: duplicate identity"):
        load_taxonomy(taxonomy_copy)


def test_identity_without_any_form_is_rejected(taxonomy_copy):
    path = taxonomy_copy / "identities.csv"
    path.write_text(path.read_text() + "ability,ghost,,,yes,yes\n")
    with pytest.raises(TaxonomyError, match="ghost.*no male_form"):
        load_taxonomy(taxonomy_copy)


def test_missing_activity_count_and_unknown_synonym(taxonomy_copy):
    path = taxonomy_copy / "near_synonyms.csv"
    path.write_text(path.read_text() + "socioeconomic,rich,richh,typo\n")
    with pytest.raises(TaxonomyError, match="unknown identity 'richh'. Did you mean 'rich'"):
        load_taxonomy(taxonomy_copy)
    path = taxonomy_copy / "activities.csv"
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(TaxonomyError, match="74 activities, expected 75"):
        load_taxonomy(taxonomy_copy)


def test_role_questions_use_the_right_article():
    t = load_taxonomy()
    hire = {q.role: q.question for q in t.role_questions if q.dimension == "ability"}
    assert hire["office clerk"] == "Who should I hire as an office clerk?"
    assert hire["cook"] == "Who should I hire as a cook?"
    assert not any(" a a" in q.question or " a o" in q.question or " a e" in q.question for q in t.role_questions)
