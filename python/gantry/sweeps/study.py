"""The sweep's Optuna study: its storage (the single source of truth), samplers and pruner.

Storage: "journal" is Optuna's JournalFileStorage in the sweep folder (study.journal; appends under
a lock file, safe on a shared file system, so Slurm workers on other nodes use it directly),
"sqlite" a SQLite file there (study.db; one machine), or any Optuna storage URL
(postgresql://..., mysql://...).

Samplers are made afresh for every trial, seeded with seed + the trial's number: a trial's
parameters then depend only on its number and the trials before it, not on which process asked
or in which order workers came (Optuna's samplers each keep their own random state, so two
workers seeded alike would otherwise draw the same values).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import optuna

from .settings import SweepSettings
from .space import SearchSpace

STUDY_NAME = "gan_sweep"  # fixed: Hyperband's brackets are a hash of the name and trial number


def storage_of(sweep_dir: Path, kind: str):
    if kind == "journal":
        # Optuna 3.1 calls the journal storage experimental; it is the one safe on shared file systems.
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        return optuna.storages.JournalStorage(optuna.storages.JournalFileStorage(str(Path(sweep_dir) / "study.journal")))
    if kind == "sqlite":
        return f"sqlite:///{Path(sweep_dir).resolve() / 'study.db'}"
    return kind  # an Optuna storage URL


def make_sampler(settings: SweepSettings, space: SearchSpace, trial_number: int) -> optuna.samplers.BaseSampler:
    seed = settings.seed + trial_number
    if settings.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if settings.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.GridSampler(space.grid(), seed=seed)


def make_pruner(settings: SweepSettings) -> optuna.pruners.BasePruner:
    first = settings.rungs[0]
    if settings.pruner == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=first, max_resource=settings.budget_images,
                                              reduction_factor=settings.reduction_factor)
    if settings.pruner == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=first, reduction_factor=settings.reduction_factor)
    if settings.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=settings.median_startup_trials, n_warmup_steps=0)
    return optuna.pruners.NopPruner()


def open_study(sweep_dir: Path, settings: SweepSettings, sampler: optuna.samplers.BaseSampler = None,
               create: bool = False) -> optuna.Study:
    """The study, with the sweep's pruner. Without a sampler, a random one: reporting, pruning and
    telling need none, and a grid sampler would try to stop the study when its grid is done."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_of(sweep_dir, settings.storage)
    sampler = sampler or optuna.samplers.RandomSampler(seed=settings.seed)
    if create:
        return optuna.create_study(study_name=STUDY_NAME, storage=storage, sampler=sampler,
                                   pruner=make_pruner(settings), direction=settings.direction, load_if_exists=True)
    return optuna.load_study(study_name=STUDY_NAME, storage=storage, sampler=sampler, pruner=make_pruner(settings))
