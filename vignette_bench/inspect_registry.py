"""What inspect_ai loads through this package's entry point (`[project.entry-points.inspect_ai]` in
pyproject.toml): the tasks `vignette_bench/identity_contrast` and `vignette_bench/portraits`, and the model
provider `vignette/SPEC`. inspect loads the entry point named after the package part of a task name
(`vignette_bench`), and every entry point when a model provider is not yet known; nothing here runs
unless inspect asks (docs/inspect.md)."""

from inspect_ai._util.registry import registry_add, registry_info

from vignette_bench.inspect_provider import VignetteModelAPI
from vignette_bench.inspect_tasks import identity_contrast, portraits

__all__ = ["VignetteModelAPI", "identity_contrast", "portraits"]

PACKAGE = "vignette_bench"

# inspect prefixes a task's name with its package only when it finds the package installed (in
# site-packages, or editable by its direct_url.json). A `vignette_bench.egg-info` that `pip install -e .`
# leaves in the checkout shadows the installed metadata whenever the checkout is on sys.path (PYTHONPATH,
# `python -m inspect_ai` run from it): the tasks would then be registered as bare `portraits`, and
# `vignette_bench/portraits`, the name this entry point is loaded for, would not be found.
for _task in (identity_contrast, portraits):
    _info = registry_info(_task)
    if "/" not in _info.name:
        registry_add(_task, _info.model_copy(update={"name": f"{PACKAGE}/{_info.name}"}))
