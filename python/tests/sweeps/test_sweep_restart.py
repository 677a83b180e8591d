"""The driver killed (SIGKILL) mid-trial and started again with the same command: its workers
stop with it, their gan_train saving the step reached; the restarted sweep resumes that trial
from its checkpoint, reruns no finished trial and ends exactly as an uninterrupted sweep of the
same seed (one trial at a time, 1 thread: the same trials, values at every rung, states and best)."""
import json
import os
import re
import signal
import subprocess
import time

import gantry

from sweep_helpers import GAN_SWEEP, gan_sweep, sweep_base, trial_logs, write_json

SPACE = {"optimizers.generator.lr": {"log_uniform": [5e-5, 2e-3]},
         "optimizers.discriminator.beta1": {"categorical": [0.0, 0.5]}}


def base_config(network):
    config = sweep_base(network)
    config["generator"]["ngf"] = config["discriminator"]["ndf"] = 24  # steps long enough to land a kill in
    return config


def sweep_args(sweep_dir, config, space):
    return ["--dir", str(sweep_dir), "--config", str(config), "--space", str(space), "--trials", "5",
            "--kimg", "0.432", "--min-kimg", "0.048", "--sampler", "tpe", "--pruner", "hyperband", "--seed", "3",
            "--jobs", "1", "--threads", "1"]


def wait_for(predicate, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {what} within {seconds} s")


def test_killed_driver_restarts_where_it_stopped(workdir, network, tmp_path):
    config = write_json(tmp_path / "base.json", base_config(network))
    space = write_json(tmp_path / "space.json", SPACE)
    reference = gan_sweep(*sweep_args(tmp_path / "reference", config, space))
    assert reference.returncode == 0, reference.stderr

    sweep_dir = tmp_path / "sweep"
    log0 = sweep_dir / "trials" / "trial-0000" / "gan_train.log"
    driver = subprocess.Popen([GAN_SWEEP, *sweep_args(sweep_dir, config, space)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    # Trial 0 is the first of its Hyperband bracket, so it is promoted: kill the driver while it
    # trains from its second rung (step 9) to its last (step 27).
    wait_for(lambda: log0.exists() and "\nstep 12 |" in log0.read_text(), 120, "trial 0 at step 12")
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    polite_stop = re.compile(r"^stopped at step (\d+) of 27 \(SIGTERM\)", re.M)
    wait_for(lambda: polite_stop.search(log0.read_text()), 60, "trial 0's gan_train to stop politely")
    stopped = int(polite_stop.search(log0.read_text()).group(1))
    assert 12 <= stopped < 27

    restarted = gan_sweep(*sweep_args(sweep_dir, config, space))
    assert restarted.returncode == 0, restarted.stderr
    assert "1 finished before" not in restarted.stdout  # trial 0 was still running
    log = trial_logs(sweep_dir)[0]
    assert f"resumed from {sweep_dir / 'trials' / 'trial-0000' / 'checkpoints' / f'ckpt-{stopped}.safetensors'} " \
           f"at step {stopped}" in log
    # every trial started from scratch once: only its first gan_train run lacks "resumed from"
    for number, text in trial_logs(sweep_dir).items():
        runs = text.split("== gan_sweep: gan_train --steps")[1:]
        assert sum("resumed from" not in r for r in runs) == 1, (number, text)

    a = gantry.sweep(tmp_path / "reference", say=lambda line: None)  # finished: returns the study
    b = gantry.sweep(sweep_dir, say=lambda line: None)
    assert [(t.params, t.state, t.intermediate_values, t.value) for t in a.get_trials()] == \
           [(t.params, t.state, t.intermediate_values, t.value) for t in b.get_trials()]
    assert a.best_trial.number == b.best_trial.number
    assert json.loads((tmp_path / "reference" / "best.json").read_text()) == json.loads((sweep_dir / "best.json").read_text())
