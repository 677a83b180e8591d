"""--synchronous: a trial waits at each rung until every trial has reported it, and the pruner
decides the rung for all of them together. A real sweep of 8 trials, 2 at a time, promotes at
every rung exactly the best 1/η of the trials that reached it (textbook successive halving), and
equals the synchronous replay of a full-budget grid of the same values (rung values bit for bit,
states, rungs reached, pick), whatever order its two workers reported in."""
import re

import gantry
from optuna.trial import TrialState

from gantry.sweeps.replay import replay_grid
from sweep_helpers import fid_steps, sweep_base, trial_logs

SPACE = {"optimizers.generator.lr": {"grid": [5e-5, 2e-4, 8e-4, 3e-3]},
         "optimizers.discriminator.lr": {"grid": [1e-4, 4e-4]}}
RUNGS = [16, 48, 144]  # images: steps 1, 3 and 9 at batch 16


def textbook_promotions(trials, rungs, eta):
    """For each rung but the last: the trials that reached it and the best max(1, n // η) of them."""
    out = []
    for images in rungs[:-1]:
        reached = [t for t in trials if images in t.intermediate_values]
        best = sorted(reached, key=lambda t: t.intermediate_values[images])[:max(1, len(reached) // eta)]
        out.append(({t.number for t in reached}, {t.number for t in best}))
    return out


def test_synchronous_successive_halving_is_textbook(workdir, network, tmp_path):
    common = dict(kimg=0.144, min_kimg=0.016, sampler="grid", threads=1, say=lambda line: None)
    study = gantry.sweep(tmp_path / "sync", sweep_base(network), SPACE, pruner="successive_halving", synchronous=True,
                         jobs=2, **common)
    trials = study.get_trials()
    for k, (reached, best) in enumerate(textbook_promotions(trials, RUNGS, 3)):
        went_on = {t.number for t in trials if RUNGS[k + 1] in t.intermediate_values}
        assert went_on == best, (RUNGS[k], reached, went_on, best)
        for t in trials:
            if t.number in reached - went_on:
                assert t.state == TrialState.PRUNED and max(t.intermediate_values) == RUNGS[k]
    assert [sum(images in t.intermediate_values for t in trials) for images in RUNGS] == [8, 2, 1]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == 1 and study.best_trial.number == complete[0].number
    logs = trial_logs(tmp_path / "sync")
    for t in trials:
        steps = [1, 3, 9][:len(t.intermediate_values)]
        assert fid_steps(t.user_attrs["model_dir"]) == steps  # each rung measured once
        assert logs[t.number].count("== gan_sweep: gan_train --steps") == len(steps)
        assert logs[t.number].count("resumed from") == len(steps) - 1
    workers = "".join(p.read_text() for p in (tmp_path / "sync" / "workers").glob("local-*.log"))
    assert len(re.findall(r"waits at 16 images \(fid [0-9.]+\) for the other trials to reach it", workers)) == 8, workers
    assert workers.count("promoted at 16 images") == 2 and workers.count("pruned at 16 images") == 6, workers

    gantry.sweep(tmp_path / "grid", sweep_base(network), SPACE, pruner="none", jobs=2, **common)
    grid = {str(t.params): t.intermediate_values for t in gantry.sweep(tmp_path / "grid").get_trials()}
    for t in trials:  # the same values train the same bits (1 thread)
        assert t.intermediate_values == {images: grid[str(t.params)][images] for images in t.intermediate_values}
    replay = replay_grid(tmp_path / "grid", "successive_halving", 3, 0.016, seed=0, synchronous=True)
    assert replay["trials"] == [(t.params, t.state.name.lower(), max(t.intermediate_values)) for t in trials]
    assert replay["pick"] == study.best_trial.params
    assert replay["images"] == 6 * 16 + 48 + 144  # a quarter of the grid's 8 * 144
