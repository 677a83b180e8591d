"""Bad search-space files and settings (--synchronous with the median pruner among them): gan_sweep
exits with 2 before any training, naming the file and the key, what was expected and what was
found."""
import json

import pytest

from sweep_helpers import gan_sweep, sweep_base, write_json


def run_with_space(tmp_path, network, space_text, *extra):
    base = sweep_base(network)
    base["discriminator"]["norm"] = "none"
    base["loss"] = {"penalties": [{"type": "r1", "gamma": 0.1}]}
    config = write_json(tmp_path / "base.json", base)
    space = tmp_path / "space.json"
    space.write_text(space_text if isinstance(space_text, str) else json.dumps(space_text))
    return gan_sweep("--dir", str(tmp_path / "sweep"), "--config", str(config), "--space", str(space), "--kimg", "0.048",
                     *extra)


CASES = [
    ('{"optimizers.generator.lr": {"uniform": [1e-4, 1e-3]},\n  "train.seed" {"int": [0, 9]}}',
     "space.json: line 2, column 16: expected JSON, found an error: Expecting ':' delimiter"),
    ({"optimizers.generator.lrr": {"uniform": [1e-4, 1e-3]}},
     "space.json: optimizers.generator.lrr: the value 0.0001 of {\"uniform\": [0.0001, 0.001]} does not suit the "
     "config: optimizers.generator.lrr: unknown key (accepted keys:"),
    ({"train.seed": {"normal": [0, 1]}},
     "space.json: train.seed: expected exactly one of grid, categorical, uniform, log_uniform, int, found none in "
     "{\"normal\": [0, 1]}"),
    ({"optimizers.generator.lr": {"uniform": [1e-3, 1e-4]}},
     "space.json: optimizers.generator.lr: expected low < high, found [0.001, 0.0001]"),
    ({"optimizers.generator.lr": {"log_uniform": [0, 1e-3]}},
     "space.json: optimizers.generator.lr: expected 0 < low for a log scale, found [0, 0.001]"),
    ({"train.seed": {"int": [0, 9.5]}}, "space.json: train.seed: expected integer bounds, found [0, 9.5]"),
    ({"loss.penalties[3].gamma": {"uniform": [0, 1]}},
     "space.json: loss.penalties[3].gamma: expected an index below 1 (loss.penalties holds 1 entry: r1), found 3"),
    ({"optimizers.generator.beta2": {"uniform": [0.9, 1.5]}},
     "space.json: optimizers.generator.beta2: the value 1.5 of {\"uniform\": [0.9, 1.5]} does not suit the config: "
     "optimizers.generator.beta2: expected"),
    ({"optimizers.generator.lr": {"categorical": []}},
     "space.json: optimizers.generator.lr: expected {\"categorical\": [v1, v2, ...]} with at least one value"),
    ({"optimizers.generator.lr": {"uniform": [1e-4, 1e-3], "log": True}},
     "space.json: optimizers.generator.lr: unknown key 'log' for 'uniform' (accepted: step)"),
    ({"optimizers.generator..lr": {"uniform": [1e-4, 1e-3]}},
     "space.json: optimizers.generator..lr: expected names joined by dots"),
    ([1, 2], "space.json: expected an object from key paths to values"),
]


@pytest.mark.parametrize("space, message", CASES, ids=[str(i) for i in range(len(CASES))])
def test_bad_space_files_name_the_key(workdir, network, tmp_path, space, message):
    r = run_with_space(tmp_path, network, space)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "sweep" / "trials").exists()


def test_bad_settings_name_the_option(workdir, network, tmp_path):
    space = {"optimizers.generator.lr": {"uniform": [1e-4, 1e-3]}}
    r = run_with_space(tmp_path, network, space, "--sampler", "grid")
    assert r.returncode == 2 and "space.json: optimizers.generator.lr: the grid sampler needs values to enumerate" in r.stderr
    r = run_with_space(tmp_path, network, space, "--metric", "kid")
    assert r.returncode == 2 and "--metric kid: expected a hooks.metrics entry named 'kid'" in r.stderr, r.stderr
    r = run_with_space(tmp_path, network, {"train.seed": {"grid": [1, 2]}}, "--sampler", "grid", "--trials", "3")
    assert r.returncode == 2 and "--trials 3: the grid has 2 points; expected at most 2" in r.stderr, r.stderr
    r = run_with_space(tmp_path, network, space, "--storage", "redis")
    assert r.returncode == 2 and "--storage: expected journal, sqlite or an Optuna storage URL" in r.stderr, r.stderr
    r = run_with_space(tmp_path, network, space, "--pruner", "asha")
    assert r.returncode == 2 and "--pruner: expected one of hyperband, successive_halving, median, none, found 'asha'" in r.stderr
    r = run_with_space(tmp_path, network, space, "--pruner", "median", "--synchronous")
    assert r.returncode == 2 and "--synchronous: expected --pruner hyperband or successive_halving (the median pruner " \
                                 "compares with finished trials), found --pruner median" in r.stderr, r.stderr


def test_a_restart_with_other_settings_is_refused(workdir, network, tmp_path):
    space = {"optimizers.generator.lr": {"grid": [1e-4]}}
    r = run_with_space(tmp_path, network, space, "--sampler", "grid", "--kimg", "0.016", "--min-kimg", "0.016",
                       "--threads", "1")
    assert r.returncode == 0, r.stderr
    r = run_with_space(tmp_path, network, space, "--sampler", "grid", "--kimg", "0.016", "--min-kimg", "0.016",
                       "--seed", "4")
    assert r.returncode == 2, r.stderr
    assert "this sweep was started with other settings; these differ:\n  seed: 0 -> 4" in r.stderr, r.stderr
