"""A sweep of 6 short trials with the local executor, 2 at a time on 1 thread each: every trial is
a gan_train run in its own model_dir, measured at the rungs (16, 48, 144 images: steps 1, 3, 9),
pruned by successive halving or completed; pruned trials keep their checkpoint and metrics; the
page, summary.json and best.json (a config gan_train accepts) are written; gantry.sweep returns
the study."""
import json

import gantry
from optuna.trial import TrialState

from conftest import run_app
from sweep_helpers import fid_steps, sweep_base, trial_logs, write_json

SPACE = {"optimizers.generator.lr": {"log_uniform": [5e-5, 2e-3]},
         "optimizers.discriminator.lr": {"grid": [1e-4, 4e-4]},
         "loss.penalties[0].gamma": {"log_uniform": [0.01, 1.0]}}
RUNG_STEPS = [1, 3, 9]


def r1_base(network):
    config = sweep_base(network)
    config["discriminator"]["norm"] = "none"  # R1 needs D's second derivative (no batch norm)
    config["loss"] = {"penalties": [{"type": "r1", "gamma": 0.1}]}
    return config


def test_local_sweep_of_six_trials(workdir, network, tmp_path):
    base = r1_base(network)
    lines = []
    study = gantry.sweep(tmp_path / "sweep", base, SPACE, trials=6, kimg=0.144, min_kimg=0.016, sampler="random",
                         pruner="successive_halving", seed=7, jobs=2, threads=1, say=lines.append)
    trials = study.get_trials()
    assert [t.number for t in trials] == list(range(6))
    states = [t.state for t in trials]
    assert set(states) <= {TrialState.COMPLETE, TrialState.PRUNED}, states
    assert TrialState.COMPLETE in states and TrialState.PRUNED in states, states
    logs = trial_logs(tmp_path / "sweep")
    for t in trials:
        model_dir = tmp_path / "sweep" / "trials" / f"trial-{t.number:04d}"
        assert t.user_attrs["model_dir"] == str(model_dir)
        assert 5e-5 <= t.params["optimizers.generator.lr"] <= 2e-3 and t.params["optimizers.discriminator.lr"] in (1e-4, 4e-4)
        config = json.loads((model_dir / "config.json").read_text())
        assert config["optimizers"]["generator"]["lr"] == t.params["optimizers.generator.lr"]
        assert config["loss"]["penalties"][0]["gamma"] == t.params["loss.penalties[0].gamma"]
        reached = sorted(t.intermediate_values)
        steps = RUNG_STEPS[:len(reached)]
        assert reached == [16, 48, 144][:len(reached)]
        # measured exactly at the rungs reached, once each, and checkpointed there (pruned ones too)
        assert fid_steps(model_dir) == steps, (t.number, fid_steps(model_dir))
        assert gantry.Run(model_dir).steps[-1] == steps[-1]
        for images, step in zip(reached, steps):
            row = [r for r in gantry.Run(model_dir).metrics("fid") if r["step"] == step][-1]
            assert t.intermediate_values[images] == row["value"]
        if t.state == TrialState.COMPLETE:
            assert reached == [16, 48, 144] and t.value == t.intermediate_values[144]
        # one gan_train run per rung, each after the first resuming where the previous stopped
        assert logs[t.number].count("== gan_sweep: gan_train --steps") == len(steps)
        assert logs[t.number].count("resumed from") == len(steps) - 1
        assert t.user_attrs["cpu_seconds"] > 0
    best = study.best_trial
    assert best.value == min(t.value for t in trials if t.state == TrialState.COMPLETE)
    best_config = json.loads((tmp_path / "sweep" / "best.json").read_text())
    assert best_config["optimizers"]["generator"]["lr"] == best.params["optimizers.generator.lr"]
    assert best_config["model_dir"] == base["model_dir"]  # a ready config: the base's, with the best values
    run_app("gan_train", "--config", str(write_json(tmp_path / "best.json", best_config)), "--dry-run")
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert summary["best"] == best.number and len(summary["trials"]) == 6 and not summary["live"]
    page = (tmp_path / "sweep" / "sweep.html").read_text()
    assert page.count("<tr data-trial=") == 6 and f'<tr data-trial="{best.number}" class="best">' in page
    assert any(line.startswith(f"best: trial {best.number}") for line in lines), lines
    # The same command again: nothing left to run, nothing rerun.
    again = gantry.sweep(tmp_path / "sweep", say=lines.append)
    assert [t.state for t in again.get_trials()] == states
    assert trial_logs(tmp_path / "sweep") == logs
