"""What defines a sweep — written once to its folder as sweep.json, so a restarted driver or a
worker anywhere (a Slurm node) runs exactly this sweep, and a restart with other settings is
refused with the list of what differs (as gan_train refuses a config its checkpoint cannot follow).

Rungs are counts of images seen: the metric is measured and the pruner asked at each, and the
last is the full budget of a trial. For successive halving and Hyperband they are
min_images · η^k below the budget (every bracket's rungs are among them); the median pruner and
no pruner use the same ones.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Optional

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("hyperband", "successive_halving", "median", "none")
# Pruners whose rungs can be decided synchronously (synchronous_rungs.py): the median pruner
# compares with finished trials, which a barrier at a rung would never let finish.
SYNCHRONOUS_PRUNERS = ("hyperband", "successive_halving")
STORAGES = ("journal", "sqlite")
# Metric types whose value is better when lower; the others (is, pr's precision, dc's density,
# coverage, recall) are better when higher.
LOWER_IS_BETTER = ("fid", "kid", "intra_fid")


class SettingsError(ValueError):
    """Settings that cannot make a sweep; the message names the option or file."""


def rungs_of(budget_images: int, min_images: int, reduction_factor: int) -> list[int]:
    """[min, min·η, min·η², ...] below the budget, then the budget."""
    if not 0 < min_images <= budget_images:
        raise SettingsError(f"--min-kimg: expected a count in (0, the budget {budget_images / 1000:g} kimg], "
                            f"found {min_images / 1000:g} kimg")
    if reduction_factor < 2:
        raise SettingsError(f"--reduction-factor: expected an integer >= 2, found {reduction_factor}")
    rungs = []
    r = min_images
    while r < budget_images:
        rungs.append(r)
        r *= reduction_factor
    return rungs + [budget_images]


@dataclass
class SweepSettings:
    base_config: dict                  # the base config's content
    base_config_file: str
    space: dict                        # the search space (gantry/sweeps/space.py), normalised
    space_file: str
    metric: str                        # a metric-<name>.jsonl's name, optionally ".field" (default "value")
    direction: str                     # minimize or maximize
    budget_images: int                 # a trial's full budget
    rungs: list[int]                   # images seen at which the metric decides; the last is the budget
    sampler: str = "tpe"
    pruner: str = "hyperband"
    synchronous: bool = False          # each rung decided once every trial reported it (synchronous_rungs.py)
    reduction_factor: int = 3
    seed: int = 0
    trials: int = 8
    storage: str = "journal"
    median_startup_trials: int = 5     # the median pruner's trials before it prunes
    cwd: str = field(default_factory=os.getcwd)  # where trials run (the config's relative paths)

    # Keys a restart may change: how many trials (a sweep can be extended).
    CHANGEABLE = ("trials",)

    @property
    def metric_name(self) -> str:
        return self.metric.split(".", 1)[0]

    @property
    def metric_field(self) -> str:
        return self.metric.split(".", 1)[1] if "." in self.metric else "value"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict, source: str) -> "SweepSettings":
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise SettingsError(f"{source}: unknown key {unknown[0]!r} (written by another version of gan_sweep?)")
        try:
            return cls(**data)
        except TypeError as e:
            raise SettingsError(f"{source}: expected the settings gan_sweep writes, found: {e}") from None

    def differences(self, other: "SweepSettings") -> list[str]:
        """`key: ours -> theirs` for each study-defining key that differs."""
        out = []
        for f in fields(self):
            if f.name in self.CHANGEABLE:
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
                shown = (lambda v: json.dumps(v, sort_keys=True) if len(json.dumps(v)) < 80 else "(changed)")
                out.append(f"{f.name}: {shown(a)} -> {shown(b)}")
        return out


def settings_file(sweep_dir: Path) -> Path:
    return Path(sweep_dir) / "sweep.json"


def read_settings(sweep_dir: Path) -> Optional[SweepSettings]:
    path = settings_file(sweep_dir)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SettingsError(f"{path}: line {e.lineno}: expected the JSON gan_sweep wrote, found an error: {e.msg}") from None
    return SweepSettings.from_json(data, str(path))


def write_settings(sweep_dir: Path, settings: SweepSettings) -> None:
    path = settings_file(sweep_dir)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(settings.to_json(), indent=2) + "\n")
    os.replace(tmp, path)
