"""The search space of a sweep: for each key path of the config, the values to try.

A space is a JSON object from key paths (gantry/sweeps/key_path.py) to one of

    {"grid": [v1, v2, ...]}            the values of a grid (categorical for other samplers)
    {"categorical": [v1, v2, ...]}     any JSON values: numbers, strings, objects, lists
    {"uniform": [low, high]}           a float, optionally {"step": s}
    {"log_uniform": [low, high]}       a float on a log scale, 0 < low
    {"int": [low, high]}               an integer, optionally {"step": s} or {"log": true}

e.g. {"loss.penalties[0].gamma": {"log_uniform": [0.001, 1]}, "optimizers.generator.lr":
{"grid": [1e-4, 2e-4, 4e-4]}}. Every error names the file and the key, what was expected and what
was found; whether the values suit the config is checked against the config itself
(check_against_config) by resolving it as gan_train does.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import optuna

from .key_path import KeyPathError, parse_key_path, set_key

KINDS = {
    "grid": "{\"grid\": [v1, v2, ...]}",
    "categorical": "{\"categorical\": [v1, v2, ...]}",
    "uniform": "{\"uniform\": [low, high]} (optionally \"step\")",
    "log_uniform": "{\"log_uniform\": [low, high]} with 0 < low",
    "int": "{\"int\": [low, high]} (optionally \"step\" or \"log\")",
}
_OPTIONS = {"grid": set(), "categorical": set(), "uniform": {"step"}, "log_uniform": set(), "int": {"step", "log"}}
_EXPECTED = "one of " + ", ".join(KINDS.values())


class SpaceError(ValueError):
    """A search space that cannot be used: the message names the file and the key."""


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _scalar(x: Any) -> bool:
    return x is None or isinstance(x, (bool, int, float, str))


@dataclass(frozen=True)
class Parameter:
    """One key of the space."""

    path: str
    kind: str
    low: Optional[float] = None
    high: Optional[float] = None
    step: Optional[float] = None
    log: bool = False
    choices: tuple = ()
    # Choices that are objects or lists travel through the study as their JSON text.
    encoded: bool = False

    def distribution(self) -> optuna.distributions.BaseDistribution:
        if self.kind in ("grid", "categorical"):
            return optuna.distributions.CategoricalDistribution(self.choices)
        if self.kind == "int":
            return optuna.distributions.IntDistribution(int(self.low), int(self.high), log=self.log,
                                                        step=int(self.step or 1))
        return optuna.distributions.FloatDistribution(self.low, self.high, log=self.kind == "log_uniform",
                                                      step=self.step)

    def config_value(self, value: Any) -> Any:
        """The config's value for the study's value of this parameter."""
        return json.loads(value) if self.encoded else value

    def probe_values(self) -> list:
        """Values that must all suit the config: the range's ends, or every choice (study values)."""
        if self.kind in ("grid", "categorical"):
            return list(self.choices)
        if self.kind == "int":
            high = int(self.low) + (int(self.high) - int(self.low)) // int(self.step or 1) * int(self.step or 1)
            return [int(self.low), high]
        return [self.low, self.high]

    def grid_values(self, source: str) -> list:
        if self.kind in ("grid", "categorical"):
            return list(self.choices)
        if self.kind == "int" and not self.log:
            return list(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        raise SpaceError(f"{source}: {self.path}: the grid sampler needs values to enumerate: expected "
                         f"{KINDS['grid']} (or an int range), found {self.kind!r}")

    def to_json(self) -> dict:
        if self.kind in ("grid", "categorical"):
            return {self.kind: [self.config_value(c) for c in self.choices]}
        spec: dict = {self.kind: [self.low, self.high]}
        if self.step is not None:
            spec["step"] = self.step
        if self.log:
            spec["log"] = True
        return spec


def _parse_parameter(path: str, spec: Any, source: str) -> Parameter:
    where = f"{source}: {path}"
    try:
        parse_key_path(path)
    except KeyPathError as e:
        raise SpaceError(f"{source}: {e}") from None
    if not isinstance(spec, dict):
        raise SpaceError(f"{where}: expected {_EXPECTED}, found {json.dumps(spec)}")
    kinds = [k for k in spec if k in KINDS]
    if len(kinds) != 1:
        raise SpaceError(f"{where}: expected exactly one of {', '.join(KINDS)}, found "
                         f"{', '.join(kinds) if kinds else 'none'} in {json.dumps(spec)}")
    kind = kinds[0]
    unknown = sorted(set(spec) - {kind} - _OPTIONS[kind])
    if unknown:
        accepted = ", ".join(sorted(_OPTIONS[kind])) or "none"
        raise SpaceError(f"{where}: unknown key {unknown[0]!r} for {kind!r} (accepted: {accepted})")
    value = spec[kind]
    if kind in ("grid", "categorical"):
        if not isinstance(value, list) or not value:
            raise SpaceError(f"{where}: expected {KINDS[kind]} with at least one value, found {json.dumps(spec)}")
        encoded = not all(_scalar(v) for v in value)
        choices = tuple(json.dumps(v, sort_keys=True) for v in value) if encoded else tuple(value)
        if len(set(choices)) != len(choices):
            raise SpaceError(f"{where}: expected distinct values, found {json.dumps(value)}")
        return Parameter(path, kind, choices=choices, encoded=encoded)
    if not (isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value)):
        raise SpaceError(f"{where}: expected {KINDS[kind]}, found {json.dumps(spec)}")
    low, high = value
    if not low < high:
        raise SpaceError(f"{where}: expected low < high, found [{low}, {high}]")
    if kind == "log_uniform" and low <= 0:
        raise SpaceError(f"{where}: expected 0 < low for a log scale, found [{low}, {high}]")
    step = spec.get("step")
    log = spec.get("log", False)
    if kind == "int":
        if not (_is_int(low) and _is_int(high)):
            raise SpaceError(f"{where}: expected integer bounds, found [{low}, {high}]")
        if not isinstance(log, bool):
            raise SpaceError(f"{where}: log: expected true or false, found {json.dumps(log)}")
        if step is not None and not (_is_int(step) and step >= 1):
            raise SpaceError(f"{where}: step: expected an integer >= 1, found {json.dumps(step)}")
        if log and low <= 0:
            raise SpaceError(f"{where}: expected 0 < low with \"log\": true, found [{low}, {high}]")
        if log and step not in (None, 1):
            raise SpaceError(f"{where}: expected no step with \"log\": true (Optuna's rule), found step {step}")
    elif step is not None and not (_is_number(step) and 0 < step <= high - low):
        raise SpaceError(f"{where}: step: expected a number in (0, high - low], found {json.dumps(step)}")
    return Parameter(path, kind, low=low, high=high, step=step, log=log)


@dataclass
class SearchSpace:
    """The parameters of a sweep, in the file's order."""

    parameters: list[Parameter] = field(default_factory=list)
    source: str = "space"

    @classmethod
    def from_json(cls, spec: Any, source: str = "space") -> "SearchSpace":
        if not isinstance(spec, dict) or not spec:
            raise SpaceError(f"{source}: expected an object from key paths to values, e.g. "
                             f"{{\"optimizers.generator.lr\": {{\"log_uniform\": [1e-4, 1e-3]}}}}, found "
                             f"{json.dumps(spec) if not isinstance(spec, dict) else 'an empty object'}")
        return cls([_parse_parameter(path, s, source) for path, s in spec.items()], source)

    def to_json(self) -> dict:
        return {p.path: p.to_json() for p in self.parameters}

    def distributions(self) -> dict:
        return {p.path: p.distribution() for p in self.parameters}

    def grid(self) -> dict:
        return {p.path: p.grid_values(self.source) for p in self.parameters}

    def grid_size(self) -> int:
        return math.prod(len(v) for v in self.grid().values())

    def apply(self, config: dict, params: dict) -> dict:
        """The config with each parameter's value (a study's params) set at its key."""
        for p in self.parameters:
            config = set_key(config, p.path, p.config_value(params[p.path]))
        return config

    def check_against_config(self, config: dict, resolve: Callable[[dict], Optional[str]]) -> None:
        """Checks that every key fits the config's structure and that every probe value (the
        ends of a range, each choice) resolves: `resolve(config)` returns gan_train's error or None.
        Probes all parameters at once first, and each alone only to name the one that fails."""
        def with_values(pick) -> dict:
            out = config
            for p in self.parameters:
                out = set_key(out, p.path, p.config_value(pick(p)))
            return out

        for p in self.parameters:
            try:
                set_key(config, p.path, None)
            except KeyPathError as e:
                raise SpaceError(f"{self.source}: {e}") from None
        rounds = max(len(p.probe_values()) for p in self.parameters)
        for k in range(rounds):
            if resolve(with_values(lambda p: p.probe_values()[k % len(p.probe_values())])) is None:
                continue
            for p in self.parameters:
                for v in p.probe_values():
                    error = resolve(set_key(config, p.path, p.config_value(v)))
                    if error is not None:
                        raise SpaceError(f"{self.source}: {p.path}: the value {json.dumps(p.config_value(v))} of "
                                         f"{json.dumps(p.to_json())} does not suit the config: {error}")
            error = resolve(with_values(lambda p: p.probe_values()[k % len(p.probe_values())]))
            raise SpaceError(f"{self.source}: each value suits the config alone, but not together: {error}")


def load_space(path: str) -> SearchSpace:
    """The space in a JSON file; errors name the file (and the line of a syntax error)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise SpaceError(f"{path}: cannot read the search space ({e.strerror})") from None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as e:
        raise SpaceError(f"{path}: line {e.lineno}, column {e.colno}: expected JSON, found an error: {e.msg}") from None
    return SearchSpace.from_json(spec, path)
