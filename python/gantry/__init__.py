"""Gantry from Python: load a run, sample it, compute its metrics, train in-process, and sweep.

Everything here calls Gantry's C++ library (the same code as gan_train, gan_sample and
gan_eval), so samples and metrics equal the apps' outputs bit for bit. Images are float32
arrays (N, C, H, W) in [-1, 1]. See docs/python.md.
"""
from __future__ import annotations

import json
import operator
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

# Plugins and the CUDA module resolve Gantry's symbols against the process, as they do against
# the apps: the extension's symbols must be global.
_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)
try:
    from . import _gantry
finally:
    sys.setdlopenflags(_flags)

import numpy as np

from . import metrics

GantryError = _gantry.GantryError
set_num_threads = _gantry.set_num_threads
num_threads = _gantry.num_threads

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["Run", "train", "sweep", "grid", "metrics", "GantryError", "set_num_threads", "num_threads"]


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Run:
    """A training run's model_dir: its config, checkpoints, metric series and generator."""

    def __init__(self, model_dir: PathLike):
        self.model_dir = Path(model_dir)
        if not (self.model_dir / "config.json").is_file():
            raise GantryError(f"{self.model_dir}: not a run's model_dir (no config.json)")
        self._generators: dict = {}

    def __repr__(self) -> str:
        return f"gantry.Run({str(self.model_dir)!r})"

    @property
    def config(self) -> dict:
        """The fully resolved config the run was written with (model_dir/config.json)."""
        with open(self.model_dir / "config.json") as f:
            return json.load(f)

    @property
    def steps(self) -> list[int]:
        """The steps that have a checkpoint, oldest first."""
        return [step for step, _ in _gantry.checkpoints(str(self.model_dir))]

    def checkpoint(self, step: Optional[int] = None) -> Path:
        """The checkpoint file of `step`, or the newest that reads back (a torn one falls back)."""
        if step is None:
            latest = _gantry.latest_checkpoint(str(self.model_dir))
            if latest is None:
                raise GantryError(f"{self.model_dir}: no checkpoint")
            return Path(latest)
        for s, path in _gantry.checkpoints(str(self.model_dir)):
            if s == step:
                return Path(path)
        raise GantryError(f"{self.model_dir}: no checkpoint of step {step} (steps: {self.steps})")

    def metrics(self, name: Optional[str] = None, as_arrays: bool = False) -> Union[list[dict], dict]:
        """The run's metric series: metrics.jsonl (name None) or metric-<name>.jsonl (e.g. "fid").

        A list of dicts, one per line; with as_arrays, a dict of NumPy arrays, one per key, NaN
        where a line lacks the key.
        """
        rows = _read_jsonl(self.model_dir / ("metrics.jsonl" if name is None else f"metric-{name}.jsonl"))
        if not as_arrays:
            return rows
        keys = [k for row in rows for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        keys = list(dict.fromkeys(keys))
        return {k: np.array([row.get(k, np.nan) for row in rows], dtype=np.float64) for k in keys}

    @property
    def metric_names(self) -> list[str]:
        """The names of the run's metric-<name>.jsonl series."""
        return sorted(p.name[len("metric-"):-len(".jsonl")] for p in self.model_dir.glob("metric-*.jsonl"))

    def state_dict(self, step: Optional[int] = None, network: str = "generator") -> dict[str, np.ndarray]:
        """A checkpoint's f32 tensors of `network` ("generator", "discriminator", "generator_ema",
        or "" for every tensor with its full name), in PyTorch's naming and layouts."""
        _, tensors, _ = _gantry.read_checkpoint(str(self.checkpoint(step)))
        if not network:
            return tensors
        prefix = network + "."
        out = {name[len(prefix):]: t for name, t in tensors.items() if name.startswith(prefix)}
        if not out:
            raise GantryError(f"{self.checkpoint(step)}: no tensors of {network!r}")
        return out

    def _generator(self, step: Optional[int], ema: bool):
        key = (step, ema)
        if key not in self._generators:
            self._generators[key] = _gantry.RunGenerator(str(self.model_dir), step, ema)
        return self._generators[key]

    @property
    def noise_shape(self) -> tuple:
        """The shape of one example's noise."""
        return tuple(self._generator(None, False).noise_shape)

    def sample(self, n: int, seed: int = 0, labels: Optional[Sequence[int]] = None, ema: bool = False,
               truncation_psi: float = 1.0, truncation_cutoff: int = 0, step: Optional[int] = None,
               batch: int = 256, noise_mode: str = "random") -> np.ndarray:
        """n samples (n, C, H, W) float32 in [-1, 1], equal to gan_sample's .npy for the same
        arguments. labels: classes of a conditional generator (cycled; default i % classes).
        noise_mode (stylegan2): random, const (the generator's fixed noise maps) or none."""
        if n <= 0:
            raise ValueError(f"n: expected a positive number of samples, found {n}")
        return self._generator(step, ema).sample(n, seed, list(labels or []), batch, truncation_psi, truncation_cutoff,
                                                 noise_mode)

    def sample_from(self, noise: np.ndarray, labels: Optional[Sequence[int]] = None, ema: bool = False,
                    truncation_psi: float = 1.0, truncation_cutoff: int = 0, step: Optional[int] = None,
                    batch: int = 256, noise_mode: str = "random") -> np.ndarray:
        """Samples from the caller's noise (N, *noise_shape), e.g. an interpolation path."""
        return self._generator(step, ema).sample_from(np.asarray(noise, dtype=np.float32), list(labels or []), batch,
                                                      truncation_psi, truncation_cutoff, noise_mode)

    def evaluate(self, network: PathLike, metrics: str = "fid", step: Optional[int] = None, all_steps: bool = False,
                 num: int = 10000, num_real: int = 0, batch: int = 250, seed: int = 0, ema: bool = False,
                 kid_subsets: int = 100, kid_subset_size: int = 1000, dc_k: int = 5) -> list[dict]:
        """gan_eval --model-dir: the checkpoints' metrics against the run's own real images, whose
        statistics are cached in the model dir (shared with gan_eval and the training hook)."""
        return _gantry.evaluate_run(str(self.model_dir), os.fspath(network), metrics, step,
                                    all_steps, num, num_real, batch, seed, ema, kid_subsets, kid_subset_size, dc_k, "")


def grid(images: np.ndarray, path: Optional[PathLike] = None, columns: int = 0, padding: int = 2) -> np.ndarray:
    """Tiles images (N, 1 or 3, H, W) in [-1, 1] as the sample grids are tiled: an 8-bit array
    (H', W') or (H', W', 3) RGB; with `path`, also written there as PNG."""
    return _gantry.grid(np.asarray(images, dtype=np.float32), "" if path is None else os.fspath(path), columns, padding)


def train(config: Union[PathLike, dict], model_dir: Optional[PathLike] = None, devices: Optional[str] = None,
          steps: Optional[int] = None, overrides: Iterable[str] = (), resume: str = "auto",
          time_limit: Optional[float] = None, callbacks: Iterable[Callable[[dict], Any]] = (),
          stdout: Any = None) -> dict:
    """Trains as gan_train does (resume, hooks, outputs in model_dir), in this process.

    config: a config file's path or a dict. callbacks: called after every step with its results
    (step, losses and their components, images/s, ...); one returning True stops the run politely
    with a checkpoint, as Ctrl-C (KeyboardInterrupt) does. The run's log goes to `stdout`
    (default sys.stdout). Returns {"status": "done" | "stopped", "exit_code": 0 | 75, "step": N}.
    """
    args = _gantry.TrainArguments()
    if isinstance(config, dict):
        args.config_json, args.source = json.dumps(config), "<config dict>"
    else:
        path = os.fspath(config)
        try:
            with open(path) as f:
                args.config_json = f.read()
        except OSError as e:
            raise GantryError(f"{path}: cannot open the file ({e.strerror})") from None
        args.source = path
    args.overrides = list(overrides)
    args.model_dir = "" if model_dir is None else os.fspath(model_dir)
    # Checked by the library as gan_train's --steps and --time-limit are (GantryError naming them);
    # operator.index refuses a float number of steps rather than truncating it.
    args.steps = None if steps is None else operator.index(steps)
    args.devices = devices or ""
    args.resume = resume
    args.time_limit = None if time_limit is None else float(time_limit)
    args.callbacks = list(callbacks)
    args.stdout = stdout
    return _gantry.train(args)


def sweep(dir: PathLike, config: Union[PathLike, dict, None] = None, space: Union[PathLike, dict, None] = None,
          **options: Any):
    """A hyperparameter sweep (docs/sweeps.md), as the gan_sweep command runs it; returns its Optuna study.

    dir: the sweep's folder; config: the base config (a path or a dict; None continues the sweep in
    dir with its own settings); space: the search space (a path or a dict: key path -> {"grid" |
    "categorical": [...]} or {"uniform" | "log_uniform" | "int": [low, high]}). options: gamma,
    gamma_factor, trials, metric, direction, kimg (a trial's budget), min_kimg, reduction_factor,
    sampler ("tpe", "random", "grid"), pruner ("hyperband", "successive_halving", "median", "none"),
    synchronous (decide each rung once every trial reported it), seed, storage ("journal", "sqlite" or a URL), executor ("local", "slurm"), jobs, threads, workers,
    sbatch_args, gan_train, page_seconds, say (a function taking each progress line; default print).
    Needs Optuna (Debian's python3-optuna). Errors in the settings or the space raise ValueError
    subclasses naming the key; a stop (Ctrl-C) raises gantry.sweeps.SweepStopped after the trials
    saved their state.
    """
    from .sweeps import run_sweep

    return run_sweep(dir, config, space, **options)
