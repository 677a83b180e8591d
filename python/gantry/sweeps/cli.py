"""gan_sweep: hyperparameter sweeps of Gantry runs (docs/sweeps.md).

    gan_sweep --config base.json --space space.json --dir runs/sweep --kimg 12 [--trials 8]
              [--metric fid] [--sampler tpe|random|grid] [--pruner hyperband|successive_halving|median|none]
              [--synchronous]
              [--jobs N --threads T | --slurm --workers W --threads T --sbatch=--partition=gpu ...]
    gan_sweep --gamma --config base.json --dir runs/gamma --kimg 12      R1's γ around the heuristic
    gan_sweep --dir runs/sweep                                           continue (or just report) a sweep
    gan_sweep replay --dir runs/grid --pruner hyperband --seeds 0,1,2    another pruner on a finished grid
    gan_sweep worker --dir runs/sweep --slot K ...                       what the executors start

Exit codes: 0 the sweep is finished, 2 a usage, settings or search-space error, 75 stopped with the
trials' state saved (run the same command again), 1 a failure of the sweep itself.
"""
from __future__ import annotations

import argparse
import sys

from .gan_train import STOPPED


def _worker(argv: list[str]) -> int:
    from .worker import run_worker

    p = argparse.ArgumentParser(prog="gan_sweep worker", description="a sweep's worker (started by the executors)")
    p.add_argument("--dir", required=True)
    p.add_argument("--slot", type=int, required=True)
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--gan-train", required=True)
    a = p.parse_args(argv)
    return run_worker(a.dir, a.slot, a.slots, a.gan_train, a.threads)


def _replay(argv: list[str]) -> int:
    from .replay import print_replay
    from .settings import SettingsError

    p = argparse.ArgumentParser(prog="gan_sweep replay", description="what another pruner would have decided on a "
                                "finished full-budget grid sweep (--sampler grid --pruner none), without training")
    p.add_argument("--dir", required=True, help="the grid sweep's folder")
    p.add_argument("--pruner", required=True, help="hyperband, successive_halving, median or none")
    p.add_argument("--reduction-factor", type=int, default=3)
    p.add_argument("--min-kimg", type=float, help="the first rung (default: the budget / reduction factor^2)")
    p.add_argument("--synchronous", action="store_true", help="decide each rung once every trial has reported it")
    p.add_argument("--seeds", default="0", help="the grid sampler's seeds to replay, e.g. 0,1,2 (default 0)")
    a = p.parse_args(argv)
    try:
        print_replay(a.dir, a.pruner, a.reduction_factor, a.min_kimg, [int(s) for s in a.seeds.split(",")],
                     a.synchronous)
    except SettingsError as e:
        print(f"gan_sweep replay: {e}", file=sys.stderr)
        return 2
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gan_sweep", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True, help="the sweep's folder (trials, storage, page, best.json)")
    p.add_argument("--config", help="the base config (JSON); without it, --dir's sweep goes on with its settings")
    p.add_argument("--space", help="the search space (JSON: key path -> grid/categorical/uniform/log_uniform/int)")
    p.add_argument("--gamma", action="store_true", help="sweep R1's gamma around 0.0002 * resolution^2 / batch")
    p.add_argument("--gamma-factor", type=int, default=16, help="--gamma's span: x1/F ... xF (default 16)")
    p.add_argument("--trials", type=int, help="trials in all (default 8; the grid's size for --sampler grid)")
    p.add_argument("--metric", default="fid",
                   help="a hooks.metrics entry's name, optionally .field (default fid; e.g. dc.coverage)")
    p.add_argument("--direction", choices=("minimize", "maximize"), help="default: by the metric's type")
    p.add_argument("--kimg", type=float, help="a trial's full budget in thousands of images seen")
    p.add_argument("--min-kimg", type=float, help="the first rung (default: the budget / reduction factor^2)")
    p.add_argument("--reduction-factor", type=int, default=3, help="eta of successive halving and Hyperband (default 3)")
    p.add_argument("--sampler", default="tpe", help="tpe (default), random or grid")
    p.add_argument("--pruner", default="hyperband", help="hyperband (default), successive_halving, median or none")
    p.add_argument("--synchronous", action="store_true",
                   help="decide each rung once every trial has reported it (successive halving, hyperband): "
                        "the trials there wait, and the best 1/eta go on")
    p.add_argument("--median-startup-trials", type=int, default=5, help="the median pruner's trials before it prunes")
    p.add_argument("--seed", type=int, default=0, help="the samplers' seed (trial n draws with seed + n)")
    p.add_argument("--storage", default="journal",
                   help="journal (default: a file in --dir, safe on shared file systems), sqlite, or an Optuna URL")
    p.add_argument("--jobs", type=int, default=1, help="local: trials at a time (default 1)")
    p.add_argument("--threads", type=int,
                   help="threads of each trial's gan_train (local default: cores / jobs; Slurm: 1, its --cpus-per-task)")
    p.add_argument("--slurm", action="store_true", help="run the trials as one sbatch --array job of workers")
    p.add_argument("--workers", type=int, default=2, help="--slurm: array tasks (default 2)")
    p.add_argument("--sbatch", action="append", default=[], metavar="ARG",
                   help="--slurm: an sbatch option, e.g. --sbatch=--partition=gpu (repeatable)")
    p.add_argument("--gan-train", help="the gan_train app (default: $GANTRY_GAN_TRAIN, the build's, or PATH)")
    p.add_argument("--page-seconds", type=float, default=30, help="how often the sweep page is rewritten while it runs")
    return p


def main(argv: list[str] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        return _worker(argv[1:])
    if argv[:1] == ["replay"]:
        return _replay(argv[1:])
    a = parser().parse_args(argv)
    from .driver import SweepStopped, run_sweep
    from .settings import SettingsError
    from .space import SpaceError

    try:
        run_sweep(a.dir, a.config, a.space, gamma=a.gamma, gamma_factor=a.gamma_factor, trials=a.trials, metric=a.metric,
                  direction=a.direction, kimg=a.kimg, min_kimg=a.min_kimg, reduction_factor=a.reduction_factor,
                  sampler=a.sampler, pruner=a.pruner, synchronous=a.synchronous, seed=a.seed, storage=a.storage,
                  median_startup_trials=a.median_startup_trials, executor="slurm" if a.slurm else "local", jobs=a.jobs,
                  threads=a.threads, workers=a.workers, sbatch_args=a.sbatch, gan_train=a.gan_train,
                  page_seconds=a.page_seconds, say=lambda line: print(line, flush=True))
    except (SettingsError, SpaceError, FileNotFoundError) as e:
        print(f"gan_sweep: {e}", file=sys.stderr)
        return 2
    except SweepStopped as e:
        print(f"gan_sweep: {e}", file=sys.stderr)
        return STOPPED
    return 0


if __name__ == "__main__":
    sys.exit(main())
