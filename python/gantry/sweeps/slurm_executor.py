"""The Slurm executor: one `sbatch --array=0-(W-1)` job whose tasks are workers pulling trials from
the shared storage (the sweep folder must be on a file system every node sees). Each task is a
slot: requeued (`--requeue`: preemption, `scontrol requeue`; or by its script after a time-limit
signal made it stop with 75) it starts again as the same slot and resumes its trial from the
trial's last checkpoint.

The driver only submits and watches: killed and started again, it finds the array job it
submitted (slurm/jobs) still queued or running and waits for it; when that job is gone while
trials remain (tasks cancelled or failed), it submits a new array, whose slots adopt the
unfinished trials.
"""
from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional

from .worker_command import worker_command, worker_pythonpath

# Resubmissions in a row after which a sweep that makes no progress stops (workers that cannot start).
MAX_FRUITLESS_SUBMISSIONS = 3
# A job found gone is asked about again this much later before another is submitted beside it, so
# that one empty or wrong answer of Slurm's cannot double the sweep's workers.
GONE_CONFIRM_SECONDS = 5.0

# Note [a requeued task is not gone]: plain `squeue` lists pending, running and completing jobs
# only; a task on its way back to the queue or held can be in a state it leaves out (REQUEUED,
# REQUEUE_FED, SPECIAL_EXIT, STOPPED, ...), and a driver that took that silence for the end of its
# array job would submit a second one beside it (a CI run once found two). So the driver asks for
# every state and counts a job as gone only when all its tasks are in one of these final states
# (or Slurm has forgotten the job), and asks once more before submitting.
# PREEMPTED is left out: under PreemptMode=REQUEUE it may precede the requeue; a job that ends
# preempted for good (PreemptMode=CANCEL) is resubmitted once Slurm forgets it (MinJobAge).
ENDED_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
                          "OUT_OF_MEMORY"})


class SlurmError(RuntimeError):
    """sbatch refused the job, or its workers keep failing."""


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


class SlurmExecutor:
    def __init__(self, sweep_dir: Path, workers: int, threads: int, gan_train: str, sbatch_args: list[str], cwd: str,
                 say: Callable[[str], None]):
        self.sweep_dir = Path(sweep_dir).resolve()
        self.folder = self.sweep_dir / "slurm"
        self.workers = workers
        self.threads = threads
        self.gan_train = gan_train
        self.sbatch_args = list(sbatch_args)
        self.cwd = cwd
        self.say = say

    def script(self) -> str:
        command = " ".join(shlex.quote(a) for a in worker_command(self.sweep_dir, "SLOT", self.workers, self.threads,
                                                                  self.gan_train))
        command = command.replace(" SLOT ", ' "$SLURM_ARRAY_TASK_ID" ')
        return f"""#!/bin/bash
# Written by gan_sweep: one worker of the sweep in {self.sweep_dir} per array task (its slot).
#SBATCH --job-name=gan_sweep
#SBATCH --array=0-{self.workers - 1}
#SBATCH --cpus-per-task={max(self.threads, 1)}
#SBATCH --requeue --open-mode=append
#SBATCH --output={self.folder}/worker-%a.log
#SBATCH --chdir={self.cwd}
export PYTHONPATH={shlex.quote(worker_pythonpath())}
# A job step, so that `--signal=USR1@N` (which signals steps) reaches the worker. The shell may get
# the signal too: a trap keeps it alive (it runs once srun returns) to requeue the task below.
trap 'true' USR1
srun --ntasks=1 --cpus-per-task={max(self.threads, 1)} {command}
code=$?
# Stopped by a signal with the trial's state saved (e.g. --signal=USR1@60 before the time limit):
# go on later, as the same slot. This task alone: one task's SLURM_JOB_ID is the array's own id,
# and requeueing that requeues every task of the array, killing the running siblings.
if [ "$code" -eq 75 ]; then scontrol requeue "${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"; fi
exit "$code"
"""

    def jobs(self) -> list[str]:
        path = self.folder / "jobs"
        return path.read_text().split() if path.exists() else []

    def alive(self, job: str) -> Optional[bool]:
        """Whether any task of the array job is queued, running or on its way back to the queue; None when
        Slurm did not answer. All states are asked for (Note [a requeued task is not gone])."""
        r = _run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"])
        if r.returncode != 0:
            return False if "Invalid job id" in r.stderr else None
        return any(state.strip() and state.strip() not in ENDED_STATES for state in r.stdout.splitlines())

    def submit(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        script = self.folder / "worker.sh"
        script.write_text(self.script())
        script.chmod(0o755)
        r = _run(["sbatch", "--parsable", *self.sbatch_args, str(script)])
        if r.returncode != 0:
            raise SlurmError(f"sbatch {' '.join(self.sbatch_args + [str(script)])}: {r.stderr.strip() or r.stdout.strip()}")
        job = r.stdout.strip().split(";")[0]
        with open(self.folder / "jobs", "a") as f:
            f.write(job + "\n")
        self.say(f"submitted array job {job}: {self.workers} worker(s), {max(self.threads, 1)} CPU(s) each; "
                 f"logs in {self.folder}/worker-<slot>.log")
        return job

    def run(self, on_progress: Callable[[], None], progress_seconds: float, finished: Callable[[], bool],
            progress_count: Callable[[], int]) -> int:
        """Returns 0 once the sweep is finished and its array job gone."""
        jobs = self.jobs()
        job = jobs[-1] if jobs else None
        if job:
            self.say(f"following array job {job} (submitted before)")
        fruitless, count_at_submit = 0, progress_count()
        last = time.monotonic()
        while True:
            state = self.alive(job) if job else False
            if state is False and job is not None and not finished():
                time.sleep(GONE_CONFIRM_SECONDS)
                state = self.alive(job)
            if state is False:
                if finished():
                    return 0
                if job is not None:
                    self.say(f"array job {job} is gone with trials unfinished ({progress_count()} finished)")
                    fruitless = fruitless + 1 if progress_count() == count_at_submit else 0
                    if fruitless >= MAX_FRUITLESS_SUBMISSIONS:
                        raise SlurmError(f"array job {job} ended {fruitless} times in a row without finishing a trial; "
                                         f"see {self.folder}/worker-<slot>.log")
                count_at_submit = progress_count()
                job = self.submit()
            time.sleep(2)
            if time.monotonic() - last >= progress_seconds:
                on_progress()
                last = time.monotonic()
