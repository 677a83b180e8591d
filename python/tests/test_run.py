"""gantry.Run against the apps' outputs: config, checkpoints, metric series, state dicts,
samples equal to gan_sample's bit for bit, interpolation, grids, errors, and no leak."""
import json
import resource

import numpy as np
import pytest

import gantry
from conftest import run_app


def test_import_names_the_api():
    for name in ("Run", "train", "grid", "metrics", "GantryError"):
        assert hasattr(gantry, name)


def test_config_checkpoints_and_metrics(trained_run):
    run = gantry.Run(trained_run)
    config = run.config
    assert config == json.loads((trained_run / "config.json").read_text())
    assert config["train"]["steps"] == 4 and config["generator"]["ngf"] == 8
    assert run.steps == [2, 4]
    assert run.checkpoint().name == "ckpt-4.safetensors"
    assert run.checkpoint(2).name == "ckpt-2.safetensors"
    rows = run.metrics()
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    arrays = run.metrics(as_arrays=True)
    assert arrays["step"].tolist() == [1, 2, 3, 4]
    assert arrays["discriminator_loss"].dtype == np.float64 and np.isfinite(arrays["discriminator_loss"]).all()


def test_state_dict_is_the_checkpoints(trained_run):
    run = gantry.Run(trained_run)
    g = run.state_dict()
    d = run.state_dict(network="discriminator")
    ema = run.state_dict(network="generator_ema")
    assert set(g) == set(ema) and "1.running_mean" in g  # PyTorch's names: Sequential index, then the field
    assert g["0.weight"].shape == (16, 32, 4, 4)  # ConvTranspose2d [in, out, kh, kw]: noise 16 -> 4 * ngf
    assert d["0.weight"].shape == (8, 1, 4, 4)  # Conv2d [out, in, kh, kw]
    everything = run.state_dict(network="")
    for name, t in g.items():
        assert t.dtype == np.float32
        np.testing.assert_array_equal(t, everything["generator." + name])
    # step 2's weights differ from step 4's
    first = next(iter(g))
    assert not np.array_equal(run.state_dict(step=2)[first], g[first])


def test_sample_equals_gan_sample(trained_run, tmp_path):
    run = gantry.Run(trained_run)
    for ema, seed in ((False, 7), (True, 3)):
        npy = tmp_path / f"s{int(ema)}.npy"
        run_app("gan_sample", "--model-dir", str(trained_run), "--num", "300", "--seed", str(seed),
                "--batch", "128", "--npy", str(npy), *(["--ema"] if ema else []))
        ours = run.sample(300, seed=seed, ema=ema, batch=128)
        assert ours.shape == (300, 1, 32, 32) and ours.dtype == np.float32
        np.testing.assert_array_equal(ours, np.load(npy))
        assert ours.min() >= -1 and ours.max() <= 1
    # an older step, and the same seed gives the same samples
    np.testing.assert_array_equal(run.sample(4, step=2), run.sample(4, step=2))
    assert not np.array_equal(run.sample(4, step=2), run.sample(4))


def test_sample_from_noise_and_interpolation(trained_run, tmp_path):
    run = gantry.Run(trained_run)
    assert run.noise_shape == (16, 1, 1)
    rng = np.random.default_rng(0)
    z = rng.standard_normal((2, 16, 1, 1)).astype(np.float32)
    path = np.stack([(1 - t) * z[0] + t * z[1] for t in np.linspace(0, 1, 5)]).astype(np.float32)
    strip = run.sample_from(path)
    assert strip.shape == (5, 1, 32, 32)
    np.save(tmp_path / "z.npy", path)
    run_app("gan_sample", "--model-dir", str(trained_run), "--noise", str(tmp_path / "z.npy"),
            "--npy", str(tmp_path / "s.npy"))
    np.testing.assert_array_equal(strip, np.load(tmp_path / "s.npy"))
    np.testing.assert_array_equal(strip[0], run.sample_from(path[:1])[0])


def test_grid(trained_run, tmp_path):
    images = gantry.Run(trained_run).sample(6)
    png = tmp_path / "grid.png"
    g = gantry.grid(images, png, columns=3)
    assert g.dtype == np.uint8 and g.shape == (2 + 2 * 34, 2 + 3 * 34)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rgb = gantry.grid(np.repeat(images, 3, axis=1))
    assert rgb.shape[-1] == 3
    np.testing.assert_array_equal(rgb[..., 0], gantry.grid(images))


def test_bad_arguments_raise_with_the_message(trained_run, tmp_path):
    with pytest.raises(gantry.GantryError, match="config.json"):
        gantry.Run(tmp_path)
    run = gantry.Run(trained_run)
    with pytest.raises(gantry.GantryError, match="no checkpoint of step 3"):
        run.checkpoint(3)
    with pytest.raises(gantry.GantryError, match=r"noise: expected f32 of shape \(N, \(16, 1, 1\)\)"):
        run.sample_from(np.zeros((2, 8), np.float32))
    with pytest.raises(ValueError, match="positive"):
        run.sample(0)
    # Noise modes are a style-based generator's (the converted official networks'); DCGAN has none.
    with pytest.raises(gantry.GantryError, match=r'noise_mode: a noise mode needs a style-based generator'):
        run.sample(2, noise_mode="const")
    with pytest.raises(gantry.GantryError, match=r'noise_mode: expected noise mode "random", "const" or "none"'):
        run.sample(2, noise_mode="fixed")
    with pytest.raises(gantry.GantryError, match="grid: expected images"):
        gantry.grid(np.zeros((2, 2, 8, 8), np.float32))


def test_a_thousand_samples_do_not_leak(trained_run):
    run = gantry.Run(trained_run)
    for _ in range(50):  # warm the allocator's caches
        run.sample(16)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(1000):
        run.sample(16, seed=i)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    # 1,000 calls of 64 KiB each would leak 64 MiB; allow allocator noise
    assert grown_kib < 8 * 1024, f"peak RSS grew {grown_kib} KiB over 1,000 sample calls"
