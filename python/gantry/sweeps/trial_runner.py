"""One trial, rung by rung: a normal Gantry run in its own model_dir, trained by gan_train to each
rung's step in turn (each run resumes exactly from the checkpoint the previous one wrote), the
metric read at the rung, reported to the study, and the pruner asked whether to go on.

In a synchronous sweep the trial stops at each rung before the last, reported there, and waits
without a worker for the rung's decision (synchronous_rungs.py); once promoted, any worker resumes
it. Each rung's result is reported once: a trial adopted again (a requeued or restarted worker)
skips the rungs the storage holds and resumes training from its latest checkpoint. A pruned trial
keeps its checkpoint and metrics. Failures are results: gan_train's error (a NaN stop of the NaN
guard, a config the trial's values break, a crash) fails the trial with its reason and the
sweep goes on.
"""
from __future__ import annotations

import json
import math
import os
import signal
import time
from pathlib import Path
from typing import Optional

import optuna
from optuna.trial import TrialState

from .. import Run
from .gan_train import STOPPED, GanTrainProcess, resolve_config
from .locks import TrialLock, claim_lock
from .rung_decision import PROMOTED, decide_rung, record_promotion
from .worker_context import WorkerContext, trial_dir

# Exit codes of a gan_train that a stop of its worker ended: a polite stop, or a signal that came
# before gan_train had its handlers (its setup), or SIGKILL after the grace time.
_INTERRUPTED = (STOPPED, -signal.SIGTERM, -signal.SIGINT, -signal.SIGUSR1, -signal.SIGKILL)


def trial_config(ctx: WorkerContext, params: dict, model_dir: Path, rung_steps: list[int]) -> dict:
    """The base config with the trial's values, its model_dir, and its metrics measured at the
    rungs' steps (hooks.metrics[].at_steps)."""
    config = ctx.space.apply(ctx.settings.base_config, params)
    config["model_dir"] = str(model_dir)
    for entry in config.get("hooks", {}).get("metrics", []):
        entry["at_steps"] = sorted(set(entry.get("at_steps", [])) | set(rung_steps))
    return config


def metric_at(model_dir: Path, metric_name: str, field: str, step: int) -> Optional[float]:
    """The metric's value at `step` (its last line there), or None."""
    value = None
    for row in Run(model_dir).metrics(metric_name):
        if row.get("step") == step and field in row:
            value = float(row[field])
    return value


class TrialRunner:
    def __init__(self, ctx: WorkerContext, study: optuna.Study, trial_id: int, lock: TrialLock):
        self.ctx = ctx
        self.lock = lock  # the trial's lock (locks.py), maybe taken already by the claim
        self.study = study
        self.trial = optuna.trial.Trial(study, trial_id)
        self.number = self.trial.number
        self.model_dir = trial_dir(ctx.sweep_dir, self.number)
        self.config_file = self.model_dir / "trial.json"
        self.log = self.model_dir / "gan_train.log"

    def frozen(self) -> optuna.trial.FrozenTrial:
        return self.study._storage.get_trial(self.trial._trial_id)

    def fail(self, reason: str) -> str:
        self.ctx.log(f"trial {self.number} failed: {reason}")
        self.trial.set_user_attr("fail_reason", reason)
        self.study.tell(self.number, state=TrialState.FAIL)
        return "failed"

    def prepare(self) -> Optional[str]:
        """Writes trial.json once; the rungs' steps follow from the trial's own batch size (a
        swept key may change it). Returns a failure reason, or None."""
        attrs = self.frozen().user_attrs
        if "rung_steps" in attrs and self.config_file.exists():
            return None
        params = self.frozen().params
        resolved, error = resolve_config(self.ctx.gan_train, trial_config(self.ctx, params, self.model_dir, []),
                                         self.ctx.settings.cwd)
        if error:
            return f"config refused: {error}"
        batch = int(resolved["train"]["global_batch_size"])
        steps = [math.ceil(images / batch) for images in self.ctx.settings.rungs]
        if not any(e.get("name", e.get("type", "fid")) == self.ctx.settings.metric_name
                   for e in resolved["hooks"].get("metrics", [])):
            return f"the config has no hooks.metrics entry named {self.ctx.settings.metric_name!r}"
        self.model_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.config_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(trial_config(self.ctx, params, self.model_dir, steps), indent=2) + "\n")
        os.replace(tmp, self.config_file)
        self.trial.set_user_attr("batch", batch)
        self.trial.set_user_attr("rung_steps", steps)
        return None

    def train_to(self, steps: int) -> Optional[str]:
        """Trains to `steps` (resuming). Returns None when there, "interrupted" when this worker was
        asked to stop, or a failure reason."""
        for attempt in range(3):
            process = GanTrainProcess(self.ctx.gan_train, self.config_file, steps, self.ctx.settings.cwd,
                                      self.ctx.threads, self.log, pass_fds=(self.lock.fd,))
            self.ctx.child = process
            if self.ctx.stopping:  # the signal came while it started
                process.stop()
            result = process.wait()
            self.ctx.child = None
            attrs = self.frozen().user_attrs
            self.trial.set_user_attr("cpu_seconds", attrs.get("cpu_seconds", 0.0) + result.cpu_seconds)
            if result.exit_code == 0:
                return None
            if result.exit_code in _INTERRUPTED:
                time.sleep(0.5)  # the worker's own signal may land just after its child's exit
                if self.ctx.stopping:
                    return "interrupted"
            if result.exit_code != STOPPED:
                return result.reason
            # Stopped politely without this worker asking (its own time limit, a signal sent to
            # it alone): it saved its state, so the same command goes on.
            self.ctx.log(f"trial {self.number}: gan_train stopped early ({result.reason or 'exit 75'}); resuming")
        return f"gan_train stopped early 3 times in a row before step {steps} (exit 75; a train.max_wall_seconds?)"

    def wait_at(self, images: int, value: float) -> str:
        """A synchronous sweep's trial at a rung: reported there and left without a slot, to wait
        for the rung's decision (synchronous_rungs.py), in one step under the claim lock, so that
        the decision never finds it reported and still owned."""
        with claim_lock(self.ctx.sweep_dir):
            if images not in self.frozen().intermediate_values:
                self.trial.report(value, images)
            self.trial.set_user_attr("slot", None)
        self.ctx.log(f"trial {self.number}: waits at {images} images ({self.ctx.settings.metric} {value:.6g}) for "
                     "the other trials to reach it")
        return "waiting"

    def run(self) -> str:
        """Runs the trial to its end, to this worker's stop or, in a synchronous sweep, to its next
        rung: "complete", "pruned", "failed", "interrupted" (the trial stays RUNNING, to be resumed)
        or "waiting" (at a rung, for its decision)."""
        self.lock.acquire(
            on_wait=lambda: self.ctx.log(f"trial {self.number}: waiting for its previous gan_train to exit"))
        try:
            return self._run()
        finally:
            self.lock.release()

    def _run(self) -> str:
        reason = self.prepare()
        if reason:
            return self.fail(reason)
        settings = self.ctx.settings
        steps_of_rung = self.frozen().user_attrs["rung_steps"]
        for rung, (images, steps) in enumerate(zip(settings.rungs, steps_of_rung)):
            frozen = self.frozen()
            if images in frozen.user_attrs.get(PROMOTED, []):
                continue  # reported and decided before this worker came
            reported = images in frozen.intermediate_values
            if reported:
                value = frozen.intermediate_values[images]  # reported, not yet decided
            else:
                if self.ctx.stopping:
                    return "interrupted"
                self.ctx.log(f"trial {self.number}: training to step {steps} ({images} images)")
                reason = self.train_to(steps)
                if reason == "interrupted":
                    return reason
                if reason:
                    return self.fail(reason)
                value = metric_at(self.model_dir, settings.metric_name, settings.metric_field, steps)
                if value is None:
                    return self.fail(f"no {settings.metric} at step {steps} in "
                                     f"{self.model_dir / ('metric-' + settings.metric_name + '.jsonl')}")
                if not math.isfinite(value):
                    return self.fail(f"{settings.metric} was {value} at step {steps}")
                self.trial.set_user_attr("images", images)
            last = rung == len(settings.rungs) - 1
            if settings.synchronous and not last:
                return self.wait_at(images, value)
            if not reported:
                self.trial.report(value, images)
            outcome = decide_rung(self.study, self.trial, value, last=last)
            if outcome != "promoted":
                self.ctx.log(f"trial {self.number}: {outcome} at {images} images ({settings.metric} {value:.6g})")
                return outcome
            record_promotion(self.study, self.frozen(), images)
        raise AssertionError("the last rung decides")
