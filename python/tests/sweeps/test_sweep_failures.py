"""Failures are results: a trial that diverges (the NaN guard stops its gan_train) and one that
crashes (a runtime error of gan_train) are recorded as failed with their reason, the sweep goes
on with the others, and the page shows why."""
import gantry
from optuna.trial import TrialState

from sweep_helpers import sweep_base


def test_diverging_and_crashing_trials_fail_with_their_reason(workdir, network, tmp_path):
    # A grid of 4: a learning rate of 1e30 diverges at once; R1 through D's batch norm needs a
    # second derivative that batch norm refuses (at the first step, not when the config is read).
    space = {"optimizers.discriminator.lr": {"grid": [2e-4, 1e30]},
             "loss.penalties": {"grid": [[], [{"type": "r1", "gamma": 1.0}]]}}
    study = gantry.sweep(tmp_path / "sweep", sweep_base(network), space, kimg=0.048, min_kimg=0.016, sampler="grid",
                         pruner="none", jobs=1, threads=1, say=lambda line: None)
    by_params = {(t.params["optimizers.discriminator.lr"], t.params["loss.penalties"]): t for t in study.get_trials()}
    assert len(by_params) == 4
    ok = by_params[(2e-4, "[]")]
    assert ok.state == TrialState.COMPLETE and sorted(ok.intermediate_values) == [16, 48]
    diverged = by_params[(1e30, "[]")]
    assert diverged.state == TrialState.FAIL
    assert "not finite" in diverged.user_attrs["fail_reason"], diverged.user_attrs["fail_reason"]  # the NaN guard
    crashed = by_params[(2e-4, '[{"gamma": 1.0, "type": "r1"}]')]
    assert crashed.state == TrialState.FAIL
    assert "batch norm" in crashed.user_attrs["fail_reason"], crashed.user_attrs["fail_reason"]
    assert study.best_trial.number == ok.number
    page = (tmp_path / "sweep" / "sweep.html").read_text()
    assert page.count('<span class="state failed">failed</span>') == sum(t.state == TrialState.FAIL for t in study.get_trials())
    assert "not finite" in page
