"""A synchronous sweep's driver killed (SIGKILL) at a barrier: trial 0 waits at the first rung
(reported there, held by no worker) while trial 1 trains towards it. Its worker dies with the
driver and trial 1's gan_train saves the step reached. Started again with the same command, the
sweep resumes trial 1 from that step, decides the rung once all 5 trials reported it (the best
one goes on), reports no rung twice, starts no trial from scratch twice, and ends exactly as an
uninterrupted sweep of the same seed."""
import re

import gantry
from optuna.trial import TrialState

from gantry.sweeps.settings import read_settings
from gantry.sweeps.study import open_study
from gantry.sweeps.synchronous_rungs import waiting_rung
from sweep_helpers import fid_steps, fresh_starts, gan_sweep, kill_driver_while_training, outcome, sweep_base, \
    trial_logs, write_json

SPACE = {"optimizers.generator.lr": {"log_uniform": [5e-5, 2e-3]},
         "optimizers.discriminator.beta1": {"categorical": [0.0, 0.5]}}


def sweep_args(sweep_dir, config, space):
    # Rungs at 192 and 432 images: steps 12 and 27 at batch 16.
    return ["--dir", str(sweep_dir), "--config", str(config), "--space", str(space), "--trials", "5",
            "--kimg", "0.432", "--min-kimg", "0.192", "--sampler", "random", "--pruner", "successive_halving",
            "--synchronous", "--seed", "3", "--jobs", "1", "--threads", "1"]


def test_driver_killed_at_a_barrier_restarts_where_it_stopped(workdir, network, tmp_path):
    base = sweep_base(network)
    base["generator"]["ngf"] = base["discriminator"]["ndf"] = 24  # steps long enough to land a kill in
    config = write_json(tmp_path / "base.json", base)
    space = write_json(tmp_path / "space.json", SPACE)
    reference = gan_sweep(*sweep_args(tmp_path / "reference", config, space))
    assert reference.returncode == 0, reference.stderr

    sweep_dir = tmp_path / "sweep"
    worker_log = sweep_dir / "workers" / "local-0.log"
    stopped = kill_driver_while_training(sweep_args(sweep_dir, config, space), sweep_dir, 1, 3, 12)
    assert re.search(r"trial 0: waits at 192 images \(fid [0-9.]+\)", worker_log.read_text()), worker_log.read_text()
    settings = read_settings(sweep_dir)
    at_barrier = open_study(sweep_dir, settings).get_trials()  # (the storage as the driver left it)
    assert waiting_rung(at_barrier[0], settings) == 0 and at_barrier[0].user_attrs["slot"] is None
    assert at_barrier[1].state == TrialState.RUNNING and not at_barrier[1].intermediate_values
    assert at_barrier[1].user_attrs["slot"] == 0 and len(at_barrier) == 2

    restarted = gan_sweep(*sweep_args(sweep_dir, config, space))
    assert restarted.returncode == 0, restarted.stderr
    assert f"resumed from {sweep_dir / 'trials' / 'trial-0001' / 'checkpoints' / f'ckpt-{stopped}.safetensors'} " \
           f"at step {stopped}" in trial_logs(sweep_dir)[1]
    assert set(fresh_starts(sweep_dir).values()) == {1}, fresh_starts(sweep_dir)
    b = gantry.sweep(sweep_dir, say=lambda line: None)
    for t in b.get_trials():  # each rung measured and reported once
        assert fid_steps(t.user_attrs["model_dir"]) == [12, 27][:len(t.intermediate_values)]
    states = [t.state for t in b.get_trials()]
    assert states.count(TrialState.COMPLETE) == 1 and states.count(TrialState.PRUNED) == 4, states
    best = min(b.get_trials(), key=lambda t: t.intermediate_values[192])  # the best 1 of 5 went on
    assert best.state == TrialState.COMPLETE and b.best_trial.number == best.number
    a = gantry.sweep(tmp_path / "reference", say=lambda line: None)
    assert outcome(a) == outcome(b)
    assert (tmp_path / "reference" / "best.json").read_text() == (sweep_dir / "best.json").read_text()
