"""gan_sweep replay: another pruner's decisions on a finished full-budget grid equal those of a real
sweep with that pruner (same values, seed and thread count: the same bits), at no training cost;
rungs the grid did not measure, and a sweep that is not a full-budget grid, are refused."""
import gantry
import pytest

from gantry.sweeps import SettingsError
from gantry.sweeps.replay import replay_grid
from sweep_helpers import sweep_base

SPACE = {"optimizers.generator.lr": {"grid": [5e-5, 2e-4, 8e-4, 3e-3]},
         "optimizers.discriminator.lr": {"grid": [1e-4, 4e-4]}}


def test_replay_equals_a_real_sweep_with_that_pruner(workdir, network, tmp_path):
    common = dict(kimg=0.144, min_kimg=0.016, sampler="grid", threads=1, say=lambda line: None)
    gantry.sweep(tmp_path / "grid", sweep_base(network), SPACE, pruner="none", jobs=2, **common)
    real = gantry.sweep(tmp_path / "halving", sweep_base(network), SPACE, pruner="successive_halving", jobs=1, **common)
    replay = replay_grid(tmp_path / "grid", "successive_halving", 3, 0.016, seed=0)
    trials = real.get_trials()
    assert [(p, state, images) for p, state, images in replay["trials"]] == \
           [(t.params, t.state.name.lower(), max(t.intermediate_values)) for t in trials]
    assert "pruned" in [state for _, state, _ in replay["trials"]]
    assert replay["pick"] == real.best_trial.params
    assert replay["images"] == sum(max(t.intermediate_values) for t in trials)
    assert replay["grid_images"] == 8 * 144
    with pytest.raises(SettingsError, match=r"trial \d+ has no fid at 32 images; expected the grid to measure it"):
        replay_grid(tmp_path / "grid", "hyperband", 2, 0.016, seed=0)
    with pytest.raises(SettingsError, match="expected a full-budget grid sweep"):
        replay_grid(tmp_path / "halving", "hyperband", 3, 0.016, seed=0)
