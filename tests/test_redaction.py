from vignette_bench.redaction import contains_secret, redact, redact_argv


def test_userinfo_is_masked_and_host_kept():
    assert redact("openai:m@http://user:SECRET@host:8000/v1") == "openai:m@http://***@host:8000/v1"
    assert redact("https://tok@api.example/v1") == "https://***@api.example/v1"


def test_model_at_url_without_userinfo_is_unchanged():
    spec = "openai:gpt-4o@http://127.0.0.1:8000/v1?mode=score"
    assert redact(spec) == spec
    assert not contains_secret(spec)


def test_secret_query_values_and_token_shapes():
    assert redact("openai:m@http://h/v1?api_key=abc&mode=score") == "openai:m@http://h/v1?api_key=***&mode=score"
    assert redact("x?API-KEY=abc") == "x?API-KEY=***"
    assert redact("token hf_abcdefghijkl here") == "token *** here"
    assert redact("sk-proj-0123456789abcdef") == "***"


def test_argv_hides_flag_values_given_apart_or_joined():
    argv = [
        "vignette",
        "run",
        "--api-key",
        "s3cret",
        "--hf-token=hf_abcdefghijk",
        "--model",
        "openai:m@http://u:p@h/v1",
    ]
    assert redact_argv(argv) == [
        "vignette",
        "run",
        "--api-key",
        "***",
        "--hf-token=***",
        "--model",
        "openai:m@http://***@h/v1",
    ]
    assert redact_argv(["--seed", "3"]) == ["--seed", "3"]


def test_json_values_are_redacted_everywhere():
    from vignette_bench.redaction import redact_json

    value = {"base_url": "http://u:pw@h/v1", "nested": [{"spec": "x?token=abc"}], "n": 3, "ok": None}
    assert redact_json(value) == {
        "base_url": "http://***@h/v1",
        "nested": [{"spec": "x?token=***"}],
        "n": 3,
        "ok": None,
    }
