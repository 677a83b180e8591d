"""The driver killed (SIGKILL) mid-trial and started again with the same command: its workers
stop with it, their gan_train saving the step reached; the restarted sweep resumes that trial
from its checkpoint, reruns no finished trial and ends exactly as an uninterrupted sweep of the
same seed (one trial at a time, 1 thread: the same trials, values at every rung, states and best)."""
import json

import gantry

from sweep_helpers import fresh_starts, gan_sweep, kill_driver_while_training, outcome, sweep_base, trial_logs, write_json

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


def test_killed_driver_restarts_where_it_stopped(workdir, network, tmp_path):
    config = write_json(tmp_path / "base.json", base_config(network))
    space = write_json(tmp_path / "space.json", SPACE)
    reference = gan_sweep(*sweep_args(tmp_path / "reference", config, space))
    assert reference.returncode == 0, reference.stderr

    sweep_dir = tmp_path / "sweep"
    # Trial 0 is the first of its Hyperband bracket, so it is promoted: kill the driver while it
    # trains from its second rung (step 9) to its last (step 27).
    stopped = kill_driver_while_training(sweep_args(sweep_dir, config, space), sweep_dir, 0, 12, 27)

    restarted = gan_sweep(*sweep_args(sweep_dir, config, space))
    assert restarted.returncode == 0, restarted.stderr
    assert "1 finished before" not in restarted.stdout  # trial 0 was still running
    log = trial_logs(sweep_dir)[0]
    assert f"resumed from {sweep_dir / 'trials' / 'trial-0000' / 'checkpoints' / f'ckpt-{stopped}.safetensors'} " \
           f"at step {stopped}" in log
    # every trial started from scratch once: only its first gan_train run lacks "resumed from"
    assert set(fresh_starts(sweep_dir).values()) == {1}, fresh_starts(sweep_dir)

    a = gantry.sweep(tmp_path / "reference", say=lambda line: None)  # finished: returns the study
    b = gantry.sweep(sweep_dir, say=lambda line: None)
    assert outcome(a) == outcome(b)
    assert a.best_trial.number == b.best_trial.number
    assert json.loads((tmp_path / "reference" / "best.json").read_text()) == json.loads((sweep_dir / "best.json").read_text())


def test_a_restart_keeps_the_thread_count_of_the_trials(tmp_path):
    """A trial computes other bits on another thread count: a restart without --threads goes on with
    the count the sweep ran with; another count given on purpose is taken, with a warning."""
    from gantry.sweeps.driver import _thread_share
    said = []
    assert _thread_share(tmp_path, 1, 2, said.append) == 1
    assert _thread_share(tmp_path, None, 2, said.append) == 1 and said == []
    assert _thread_share(tmp_path, 2, 1, said.append) == 2
    assert len(said) == 1 and "ran with 1 thread(s) each and go on with 2" in said[0]
    assert json.loads((tmp_path / "threads.json").read_text()) == {"threads": 2}
