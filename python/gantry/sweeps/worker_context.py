"""What a worker knows while it runs trials: the sweep, its own slot, gan_train, its thread share,
the gan_train child running now (to pass a stop signal on) and whether it was asked to stop."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .gan_train import GanTrainProcess
from .settings import SweepSettings
from .space import SearchSpace


def trial_dir(sweep_dir: Path, number: int) -> Path:
    """A trial's model_dir: <sweep>/trials/trial-NNNN."""
    return Path(sweep_dir).resolve() / "trials" / f"trial-{number:04d}"


@dataclass
class WorkerContext:
    sweep_dir: Path
    settings: SweepSettings
    space: SearchSpace
    gan_train: str
    threads: int          # GANTRY_NUM_THREADS of each gan_train (0: all cores)
    slot: int             # this worker's slot: a local slot or a Slurm array task
    slots: int            # slots of the executor running it (trials of higher slots are orphans)
    stop_signal: int = 0  # the signal that asked this worker to stop, or 0
    child: Optional[GanTrainProcess] = field(default=None, repr=False)

    @property
    def stopping(self) -> bool:
        return self.stop_signal != 0

    def log(self, text: str) -> None:
        print(f"gan_sweep worker {self.slot}: {text}", flush=True)
