"""Turn a spec's estimator import path and params into a seeded scikit-learn estimator."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from sklearn.utils._param_validation import InvalidParameterError

from training.errors import SpecError

__all__ = ["make_estimator"]

_EXAMPLE = "'sklearn.ensemble.HistGradientBoostingRegressor' or 'my_pkg.models:make_pipeline'"


def make_estimator(path: str, params: dict[str, Any], seed: int) -> Any:
    """Import ``path``, call it with ``params`` (and ``random_state=seed`` if unset)."""
    factory = _import(path)
    kwargs = dict(params)
    if _accepts_random_state(factory) and "random_state" not in kwargs:
        kwargs["random_state"] = seed
    estimator = _construct(path, factory, kwargs, given=sorted(params))
    _seed_nested(estimator, seed, params)
    _validate(path, estimator)
    return estimator


def _import(path: str) -> Callable[..., Any]:
    module_name, attr = _split(path)
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise SpecError(
            f"cannot import estimator {path!r}: {_text(exc)}",
            f"set estimator to an importable class or factory such as {_EXAMPLE}",
        ) from exc
    if not callable(obj):
        raise SpecError(
            f"estimator {path!r} is a {type(obj).__name__}, not a class or factory",
            f"point estimator at a class or factory such as {_EXAMPLE}",
        )
    return obj  # type: ignore[no-any-return]


def _split(path: str) -> tuple[str, str]:
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise SpecError(
            f"estimator {path!r} is not an import path",
            f"write it as module.Name, for example {_EXAMPLE}",
        )
    return module_name, attr


def _accepts_random_state(factory: Callable[..., Any]) -> bool:
    try:
        return "random_state" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _construct(path: str, factory: Callable[..., Any], kwargs: dict[str, Any], given: list[str]) -> Any:
    try:
        estimator = factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise SpecError(
            f"estimator {path!r} rejected params {given}: {_text(exc)}",
            f"use only parameters that {path} accepts: {_parameter_names(factory)}",
        ) from exc
    if not (hasattr(estimator, "fit") and hasattr(estimator, "get_params")):
        raise SpecError(
            f"estimator {path!r} built a {type(estimator).__name__}, which is not a scikit-learn estimator",
            "point estimator at a scikit-learn estimator class or a factory returning one",
        )
    return estimator


def _validate(path: str, estimator: Any) -> None:
    """Check param values now rather than at fit time (scikit-learn >= 1.2 estimators)."""
    validate = getattr(estimator, "_validate_params", None)
    if not callable(validate):
        return
    try:
        validate()
    except InvalidParameterError as exc:
        raise SpecError(
            f"estimator {path!r} rejected its params: {_text(exc)}",
            "fix the estimator params in the training spec",
        ) from exc


def _parameter_names(factory: Callable[..., Any]) -> str:
    try:
        names = [n for n in inspect.signature(factory).parameters if n not in ("args", "kwargs")]
    except (TypeError, ValueError):
        return "see its documentation"
    return ", ".join(names) or "none"


def _seed_nested(estimator: Any, seed: int, params: dict[str, Any]) -> None:
    """Seed every unset ``random_state`` inside a factory-built pipeline."""
    unset = {
        key: seed
        for key, value in estimator.get_params(deep=True).items()
        if _is_seed_key(key) and value is None and key not in params
    }
    if unset:
        estimator.set_params(**unset)


def _is_seed_key(key: str) -> bool:
    return key == "random_state" or key.endswith("__random_state")


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".")
