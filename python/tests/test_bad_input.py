"""Bad input on the Python package (issue 47): every argument the library cannot honour is refused
naming it, arrays go through the checks files go through, and a model_dir whose checkpoints are
damaged is refused, never overwritten (docs/hardening.md)."""
import hashlib
import json
import math
import shutil
import struct

import numpy as np
import pytest

import gantry
from conftest import tiny_config


def tree_digest(root):
    """Every file under `root` and its bytes, to show that a refusal wrote nothing."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def damage_header(path):
    """Flips the safetensors header length (the first 8 bytes), as a storage fault would."""
    data = bytearray(path.read_bytes())
    data[0:8] = bytes(b ^ 0xFF for b in data[0:8])
    path.write_bytes(bytes(data))


def poison(path, prefix, value=math.nan):
    """Writes `value` over the first element of the first f32 tensor whose name starts with
    `prefix` in a safetensors file; returns the tensor's name."""
    data = bytearray(path.read_bytes())
    header_len = struct.unpack("<Q", data[0:8])[0]
    header = json.loads(data[8:8 + header_len])
    name = sorted(k for k, v in header.items() if k.startswith(prefix) and v["dtype"] == "F32")[0]
    begin = 8 + header_len + header[name]["data_offsets"][0]
    data[begin:begin + 4] = struct.pack("<f", value)
    path.write_bytes(bytes(data))
    return name


@pytest.fixture
def damaged_run(trained_run, tmp_path):
    """A copy of the trained run whose every checkpoint has its header flipped."""
    model_dir = tmp_path / "damaged"
    shutil.copytree(trained_run, model_dir)
    for ckpt in (model_dir / "checkpoints").glob("ckpt-*.safetensors"):
        damage_header(ckpt)
    return model_dir


# ---- values silently dropped: every argument is checked, naming it

def test_train_refuses_negative_steps_and_time_limit_naming_them(tmp_path):
    model_dir = tmp_path / "run"
    with pytest.raises(gantry.GantryError, match="steps: expected a non-negative integer, found -3"):
        gantry.train(tiny_config(model_dir), steps=-3)
    with pytest.raises(gantry.GantryError,
                       match=r"time_limit: expected 0 \(no limit\) or a positive number of seconds, found -5"):
        gantry.train(tiny_config(model_dir), time_limit=-5)
    with pytest.raises(gantry.GantryError, match="time_limit: expected .* found nan"):
        gantry.train(tiny_config(model_dir), time_limit=math.nan)
    with pytest.raises(TypeError):  # not truncated to 2
        gantry.train(tiny_config(model_dir), steps=2.5)
    with pytest.raises(gantry.GantryError, match="resume: expected one of auto, never, must, restart"):
        gantry.train(tiny_config(model_dir), resume="sometimes")
    assert not model_dir.exists()


def test_metric_options_are_refused_naming_them(network):
    images = np.zeros((8, 1, 32, 32), np.float32)
    with pytest.raises(gantry.GantryError, match="num: expected an integer >= 0, found -1"):
        gantry.metrics.fid(images, images, network, num=-1)
    with pytest.raises(gantry.GantryError, match="num_real: expected an integer >= 0, found -2"):
        gantry.metrics.fid(images, images, network, num_real=-2)
    with pytest.raises(gantry.GantryError, match="kid_subset_size: expected an integer >= 2, found 1"):
        gantry.metrics.kid(images, images, network, kid_subset_size=1)
    with pytest.raises(gantry.GantryError, match="dc_k: expected an integer >= 1, found 0"):
        gantry.metrics.density_coverage(images, images, network, dc_k=0)


def test_run_evaluate_refuses_what_it_cannot_honour(trained_run, network):
    run = gantry.Run(trained_run)
    with pytest.raises(gantry.GantryError, match=r"step: expected a checkpoint's step \(>= 0\), found -1"):
        run.sample(2, step=-1)  # not "the latest"
    with pytest.raises(gantry.GantryError, match="num_real: expected an integer >= 0, found -1"):
        run.evaluate(network, num=16, num_real=-1)
    with pytest.raises(gantry.GantryError, match="num: fid needs at least 2 images, found 1"):
        run.evaluate(network, num=1)


# ---- arrays go through the checks files go through, naming the argument

def test_arrays_holding_nan_or_nothing_are_refused_like_files(network, tmp_path):
    images = np.zeros((8, 1, 32, 32), np.float32)
    bad = images.copy()
    bad[3, 0, 5, 7] = np.nan
    with pytest.raises(gantry.GantryError, match=r"real: expected finite values, found nan at index \d+"):
        gantry.metrics.fid(bad, images, network)
    np.save(tmp_path / "bad.npy", bad)  # the same data as a file: the same check, naming the file
    with pytest.raises(gantry.GantryError, match=r"bad.npy\): expected finite values, found nan"):
        gantry.metrics.fid(str(tmp_path / "bad.npy"), images, network)
    bad[3, 0, 5, 7] = -np.inf
    with pytest.raises(gantry.GantryError, match="fake: expected finite values, found -inf"):
        gantry.metrics.kid(images, bad, network)
    with pytest.raises(gantry.GantryError, match="fake: expected at least one image"):
        gantry.metrics.fid(images, np.zeros((0, 1, 32, 32), np.float32), network)
    with pytest.raises(gantry.GantryError, match=r"real: expected f32 images in \[-1, 1\], found values in \[0, 255\]"):
        gantry.metrics.fid(np.full((8, 1, 32, 32), 255, np.float32) * (np.arange(8) > 0)[:, None, None, None],
                           images, network)


def test_too_few_images_name_the_set_and_the_metric(network, tmp_path):
    images = np.zeros((8, 1, 32, 32), np.float32)
    with pytest.raises(gantry.GantryError, match="fake: pr needs at least 4 images, found 3"):
        gantry.metrics.precision_recall(images, images[:3], network)
    folder = tmp_path / "one_image"
    folder.mkdir()
    gantry.grid(images[:1], folder / "a.png", columns=1, padding=0)
    with pytest.raises(gantry.GantryError, match=r"real \(.*one_image\): fid needs at least 2 images, found 1"):
        gantry.metrics.fid(str(folder), images, network)


def test_noise_and_grids_with_nan_are_refused(trained_run):
    run = gantry.Run(trained_run)
    noise = np.zeros((2, *run.noise_shape), np.float32)
    noise[1, 3] = np.nan
    with pytest.raises(gantry.GantryError, match="noise: expected finite values, found nan at index"):
        run.sample_from(noise)
    images = np.zeros((2, 1, 8, 8), np.float32)
    images[0, 0, 0, 0] = np.inf
    with pytest.raises(gantry.GantryError, match="grid: images: expected finite values, found inf"):
        gantry.grid(images)


# ---- damaged model_dirs: refused with each file and why, never overwritten

def test_a_run_whose_checkpoints_are_all_damaged_is_refused_and_left_alone(damaged_run):
    before = tree_digest(damaged_run)
    with pytest.raises(gantry.GantryError, match=r"holds 2 checkpoint file\(s\) and none reads back") as refused:
        gantry.Run(damaged_run).checkpoint()
    assert "ckpt-2.safetensors" in str(refused.value) and "ckpt-4.safetensors" in str(refused.value)
    with pytest.raises(gantry.GantryError, match="cannot resume") as refused:
        gantry.train(tiny_config(damaged_run, steps=6))
    assert 'resume="restart"' in str(refused.value)
    assert tree_digest(damaged_run) == before


def test_restart_moves_damaged_checkpoints_aside_and_trains_from_zero(damaged_run):
    damaged = {p.name: p.read_bytes() for p in (damaged_run / "checkpoints").iterdir() if p.is_file()}
    result = gantry.train(tiny_config(damaged_run), resume="restart")
    assert result["status"] == "done" and result["step"] == 4
    kept = damaged_run / "checkpoints" / "set-aside-1"
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == damaged  # byte for byte, `latest` included
    assert gantry.Run(damaged_run).steps == [2, 4]  # the new run's, not the damaged ones


def test_a_non_finite_checkpoint_tensor_is_refused_with_its_name(trained_run, tmp_path):
    model_dir = tmp_path / "nan"
    shutil.copytree(trained_run, model_dir)
    name = poison(model_dir / "checkpoints" / "ckpt-4.safetensors", "generator.")
    with pytest.raises(gantry.GantryError,
                       match=rf"ckpt-4.safetensors: tensor '{name}': expected finite values, found nan at index 0"):
        gantry._gantry.read_checkpoint(str(model_dir / "checkpoints" / "ckpt-4.safetensors"))
    # the newest is refused and sampling falls back to the one before it
    assert gantry.Run(model_dir).checkpoint().name == "ckpt-2.safetensors"
