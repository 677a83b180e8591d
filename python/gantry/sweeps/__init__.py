"""Hyperparameter sweeps of Gantry runs with early stopping (docs/sweeps.md): Optuna's samplers,
pruners and storages choose and judge; every trial is a gan_train run in its own model_dir,
trained rung by rung and resumed exactly; local workers or a Slurm array run them.

gantry.sweep(...) (gantry/__init__.py) and the gan_sweep command call run_sweep."""
from .driver import SweepStopped, run_sweep
from .settings import SettingsError
from .space import SearchSpace, SpaceError, load_space

__all__ = ["run_sweep", "SweepStopped", "SettingsError", "SearchSpace", "SpaceError", "load_space"]
