"""gantry.metrics and Run.evaluate against gan_eval's values."""
import json

import numpy as np
import pytest

import gantry
from conftest import app, run_app


def last_json(output: str) -> dict:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")][-1]


def gan_eval_files(tmp_path, real, fake, network, *args) -> dict:
    """gan_eval --real --fake on the two arrays saved as .npy files: its JSON row."""
    np.save(tmp_path / "fake.npy", fake)
    np.save(tmp_path / "real.npy", real)
    return last_json(run_app("gan_eval", "--real", str(tmp_path / "real.npy"), "--fake", str(tmp_path / "fake.npy"),
                             "--network", network, "--jsonl", "-", *args).stdout)


def test_arrays_and_files_equal_gan_eval(trained_run, network, tmp_path):
    run = gantry.Run(trained_run)
    fake = run.sample(200, seed=1)
    real = run.sample(200, seed=2, step=2)
    expected = gan_eval_files(tmp_path, real, fake, network, "--metrics", "fid,kid,pr,is", "--num", "200", "--batch", "50",
                              "--kid-subsets", "5", "--kid-subset-size", "100")
    row = gantry.metrics.compare(real, fake, network, "fid,kid,pr,is", batch=50, kid_subsets=5, kid_subset_size=100)
    for key in ("fid", "kid", "precision", "recall", "is_mean", "is_std"):
        assert row[key] == expected[key], key
    # the same from the files, and the one-metric helpers
    files = gantry.metrics.compare(tmp_path / "real.npy", str(tmp_path / "fake.npy"), network, "fid,kid,pr,is",
                                   batch=50, kid_subsets=5, kid_subset_size=100)
    assert files["fid"] == expected["fid"] and files["kid"] == expected["kid"]
    assert gantry.metrics.fid(real, fake, network, batch=50) == expected["fid"]
    p, r = gantry.metrics.precision_recall(real, fake, network, batch=50)
    assert (p, r) == (expected["precision"], expected["recall"])
    assert gantry.metrics.inception_score(fake, network, batch=50) == (expected["is_mean"], expected["is_std"])
    assert gantry.metrics.fid(fake, fake, network) == pytest.approx(0.0, abs=1e-3)


def test_density_coverage_equals_gan_eval(trained_run, network, tmp_path):
    run = gantry.Run(trained_run)
    fake = run.sample(120, seed=1)
    real = run.sample(120, seed=2, step=2)
    expected = gan_eval_files(tmp_path, real, fake, network, "--metrics", "dc", "--num", "120", "--batch", "40")
    density, coverage = gantry.metrics.density_coverage(real, fake, network, batch=40)
    assert (density, coverage) == (expected["density"], expected["coverage"])
    assert 0.0 <= coverage <= 1.0 and density >= 0.0
    row = gantry.metrics.compare(real, fake, network, "density_coverage", batch=40)
    assert (row["density"], row["coverage"]) == (density, coverage)
    # a set against itself: every fake sits in its own real's ball, k copies per ball (open balls)
    assert gantry.metrics.density_coverage(real, real, network, batch=40) == (1.0, 1.0)


def test_run_evaluate_equals_gan_eval_and_shares_its_cache(trained_run, network):
    out = run_app("gan_eval", "--model-dir", str(trained_run), "--metrics", "fid,kid", "--num", "64", "--batch", "32",
                  "--kid-subsets", "5", "--kid-subset-size", "32", "--network", network, "--jsonl", "-").stdout
    expected = last_json(out)
    caches = sorted(p.name for p in trained_run.glob("real-stats-*"))
    rows = gantry.Run(trained_run).evaluate(network, "fid,kid", num=64, batch=32, kid_subsets=5, kid_subset_size=32)
    assert len(rows) == 1 and rows[0]["step"] == 4
    assert rows[0]["fid"] == expected["fid"] and rows[0]["kid"] == expected["kid"]
    assert sorted(p.name for p in trained_run.glob("real-stats-*")) == caches  # read, not recomputed


def test_metric_errors(network):
    images = np.zeros((4, 1, 32, 32), np.float32)
    with pytest.raises(gantry.GantryError, match="metrics"):
        gantry.metrics.compare(images, images, network, "fid,bogus")
    with pytest.raises(gantry.GantryError, match="intra_fid: expected labelled images"):
        gantry.metrics.compare(images, images, network, "intra_fid")
    with pytest.raises(gantry.GantryError, match=r"fake: expected images \(N, C, H, W\)"):
        gantry.metrics.fid(images, np.zeros((4, 32, 32), np.float32), network)
    with pytest.raises(gantry.GantryError, match="nothing.json"):
        gantry.metrics.fid(images, images, "/nothing.json")
