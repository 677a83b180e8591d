"""scripts/convert_stylegan2_pkl.py without torch or the official code (ctest convert_official,
label golden): the official state dicts of tests/golden/data/official_*.safetensors rebuilt from
their manifests (make_official_golden.official_value), converted again and compared bit for bit
with what the converter wrote from the real pickles; G_ema's placement; every refusal; and the
converted model_dir end to end: gan_sample samples from it in each noise mode and gan_train
fine-tunes from it (train.init_from). The pickle path itself (torch + the official code) is the
golden script's, docs/models.md "Weights from the official code".
"""
import builtins
import copy
import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("GANTRY_SOURCE_DIR", HERE.parents[1]))
BUILD = Path(os.environ.get("GANTRY_BUILD_DIR", SOURCE / "build"))
FASHION_MNIST = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
CASES = ["stylegan2_32", "stylegan2_64", "r3gan_32", "r3gan_32_unconditional"]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


convert = load("convert_stylegan2_pkl", SOURCE / "scripts" / "convert_stylegan2_pkl.py")
read_safetensors = load("safetensors_file", SOURCE / "scripts" / "safetensors_file.py").read_safetensors
golden = load("make_official_golden", HERE / "make_official_golden.py")


def official_networks(case):
    """The golden case's official networks as load_pickle returns them, rebuilt without torch."""
    tensors, metadata = read_safetensors(HERE / "data" / f"official_{case}.safetensors")
    state = json.loads(metadata["official_state"])
    nets = {}
    for net in ("G", "D", "G_ema"):
        manifest = state[net].get("tensors", state["G"]["tensors"] if net == "G_ema" else None)
        nets[net] = {"class": state[net]["class"], "kwargs": state[net]["kwargs"], "attrs": state[net]["attrs"],
                     "state": golden.official_state(net, manifest)}
    nets["training_set_kwargs"] = state["training_set_kwargs"]
    return nets, tensors, metadata


@pytest.mark.parametrize("case", CASES)
def test_conversion_equals_the_one_made_from_the_pickle(case):
    nets, stored, metadata = official_networks(case)
    tensors, config, _ = convert.convert(nets, "runs/converted")
    converted = dict(tensors)
    assert len(converted) == len(tensors), "a name given twice"
    assert config == json.loads(metadata["config"])
    kept = {k for k in converted if not k.startswith("generator_ema.") and not k.endswith("noise_const")}
    assert kept == {k for k in stored if k.startswith(("generator.", "discriminator."))}
    for name in kept:
        assert converted[name].dtype == np.float32 and np.array_equal(converted[name], stored[name]), name
    for name, value in converted.items():  # the constant noise maps the golden leaves to the formula
        if name.endswith("noise_const"):
            block, conv = name.split(".")[2], name.split(".")[3]
            assert np.array_equal(value, golden.noise_const_value(4 << int(block), int(conv[-1]))), name


@pytest.mark.parametrize("case", CASES)
def test_g_ema_is_converted_as_g_from_its_own_tensors(case):
    nets, _, _ = official_networks(case)
    converted = dict(convert.convert(nets, "x")[0])
    as_generator, _, _ = convert.CONVERTERS[convert.family_of(nets["G"])][0](nets["G_ema"], "G_ema")
    ema = {k[len("generator_ema."):]: v for k, v in converted.items() if k.startswith("generator_ema.")}
    assert ema.keys() == as_generator.keys() == {k[len("generator."):] for k in converted if k.startswith("generator.")}
    for name, value in ema.items():
        assert np.array_equal(value, as_generator[name]), name
    moved = [n for n, v in ema.items() if not np.array_equal(v, converted["generator." + n])]
    assert len(moved) > len(ema) // 2, "G_ema's tensors should differ from G's"


def refused(nets, *fragments):
    with pytest.raises(convert.ConversionError) as e:
        convert.convert(nets, "x")
    for fragment in fragments:
        assert fragment in str(e.value), str(e.value)
    return str(e.value)


def test_every_tensor_that_cannot_be_placed_is_named():
    nets, _, _ = official_networks("stylegan2_32")
    nets["G"]["state"]["synthesis.b8.conv1.extra"] = np.zeros(3, np.float32)
    nets["G"]["state"]["synthesis.b64.const"] = np.zeros(3, np.float32)
    refused(nets, "G: cannot place 2 tensor(s)", "synthesis.b64.const", "synthesis.b8.conv1.extra")
    nets, _, _ = official_networks("r3gan_32")
    nets["D"]["state"]["Model.ExtraLayer.weight"] = np.zeros(3, np.float32)
    refused(nets, "D: cannot place 1 tensor(s)", "Model.ExtraLayer.weight")


def test_a_missing_or_misshapen_tensor_is_named():
    nets, _, _ = official_networks("stylegan2_64")
    del nets["D"]["state"]["b16.skip.weight"]
    refused(nets, "D: expected tensor 'b16.skip.weight'")
    nets, _, _ = official_networks("stylegan2_64")
    nets["G"]["state"]["mapping.fc1.weight"] = np.zeros((8, 9), np.float32)
    refused(nets, "'mapping.fc1.weight': expected shape (8, 8), found (8, 9)")


@pytest.mark.parametrize("net,key,value,fragment", [
    ("D", "architecture", "skip", "architecture = 'skip' is not supported"),
    ("D", "architecture", "orig", "architecture = 'orig' is not supported"),
    ("G", "synthesis_kwargs.architecture", "resnet", "architecture = 'resnet' is not supported"),
    ("G", "synthesis_kwargs.resample_filter", [1, 2, 1], "resample_filter = [1, 2, 1] is not supported"),
    ("G", "mapping_kwargs.layer_features", 16, "layer_features = 16 is not supported"),
    ("D", "epilogue_kwargs.mbstd_group_size", None, "mbstd_group_size = None"),
    ("D", "epilogue_kwargs.mbstd_num_channels", 0, "mbstd_num_channels = 0"),
    ("G", "mapping_kwargs.w_avg_beta", None, "w_avg_beta = None"),
    ("G", "mapping_kwargs.num_layers", 0, "mapping_kwargs.num_layers = 0"),
    ("D", "mapping_kwargs.num_layers", 0, "mapping_kwargs.num_layers = 0"),
])
def test_unsupported_stylegan2_settings_are_refused_with_the_reason(net, key, value, fragment):
    nets, _, _ = official_networks("stylegan2_32")
    kwargs = nets[net]["kwargs"]
    *path, last = key.split(".")
    for part in path:
        kwargs = kwargs.setdefault(part, {})
    kwargs[last] = value
    refused(nets, fragment)


def test_an_existing_model_dir_is_never_overwritten(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(convert.ConversionError, match="expected a new model_dir, found .*config.json"):
        convert.check_new_model_dir(str(tmp_path))
    assert (tmp_path / "config.json").read_text() == "{}"


def test_other_families_and_sizes_are_refused():
    nets, _, _ = official_networks("stylegan2_32")
    stylegan3 = copy.deepcopy(nets)
    stylegan3["G"]["state"] = {"synthesis.input.weight": np.zeros(2, np.float32), "mapping.fc0.weight": np.zeros(2)}
    refused(stylegan3, "StyleGAN3")
    other = copy.deepcopy(nets)
    other["D"]["state"] = {"fc.weight": np.zeros(2, np.float32)}
    refused(other, "not a StyleGAN2-ADA or R3GAN network", "fc.weight")
    mixed, _, _ = official_networks("r3gan_32")
    mixed["D"] = nets["D"]
    refused(mixed, "a stylegan2 network next to a r3gan G")
    r3gan, _, _ = official_networks("r3gan_32_unconditional")
    # A sixth and seventh stage (128 px): not a size Gantry's r3gan has.
    for net in ("G", "D"):
        state = r3gan[net]["state"]
        for name in list(state):
            if name.startswith("Model.MainLayers.3."):
                for stage in (4, 5):
                    state[name.replace("MainLayers.3.", f"MainLayers.{stage}.")] = state[name]
    refused(r3gan, "6 stages (128 px): Gantry's r3gan supports 32 and 64 px")


def test_a_resampling_filter_other_than_1331_is_refused():
    nets, _, _ = official_networks("r3gan_32")
    nets["G"]["state"]["Model.MainLayers.1.Layers.0.Resampler.Kernel"] = np.full((4, 4), 1 / 16, np.float32)
    refused(nets, "'Model.MainLayers.1.Layers.0.Resampler.Kernel': expected the [1,3,3,1] resampling filter")


def test_a_pickle_needs_torch_and_the_official_code_and_says_so(tmp_path, monkeypatch):
    pkl = tmp_path / "network-snapshot.pkl"
    pkl.write_bytes(b"not read")
    real_import = builtins.__import__

    def without(*names):
        def fake(name, *args, **kwargs):
            if name in names:
                raise ImportError(f"No module named '{name}'")
            return real_import(name, *args, **kwargs)
        return fake

    monkeypatch.setattr(builtins, "__import__", without("torch", "legacy"))
    with pytest.raises(convert.ConversionError, match="needs PyTorch"):
        convert.load_pickle(str(pkl))
    monkeypatch.setattr(builtins, "__import__", without("legacy"))
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    with pytest.raises(convert.ConversionError, match="needs the official code on PYTHONPATH"):
        convert.load_pickle(str(pkl))


# ---- end to end with the apps: the converted model_dir samples and fine-tunes.

def run_app(name, *args):
    result = subprocess.run([str(BUILD / "apps" / name), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{name} {' '.join(map(str, args))}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """stylegan2_64's networks as a model_dir (the converter's main() output, without the pickle)."""
    out = tmp_path_factory.mktemp("converted")
    nets, _, _ = official_networks("stylegan2_64")
    tensors, config, _ = convert.convert(nets, str(out))
    convert.write_model_dir(str(out), tensors, config, "official_stylegan2_64 (rebuilt)")
    return out


def test_gan_sample_samples_the_converted_networks_in_every_noise_mode(converted, tmp_path):
    samples = {}
    for mode in ("const", "none", "random"):
        for ema in ("--ema", "--no-ema"):
            npy = tmp_path / f"{mode}{ema}.npy"
            run_app("gan_sample", "--model-dir", converted, ema, "--noise-mode", mode, "--num", 3, "--npy", npy)
            samples[mode, ema] = np.load(npy)
            assert samples[mode, ema].shape == (3, 3, 64, 64)
    assert not np.array_equal(samples["const", "--ema"], samples["none", "--ema"])  # the noise maps count
    assert not np.array_equal(samples["const", "--ema"], samples["const", "--no-ema"])  # G_ema is its own


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """16 Fashion-MNIST images as a 64 px RGB ZIP (gan_dataset), stylegan2_64's image shape."""
    path = tmp_path_factory.mktemp("data") / "rgb64.zip"
    run_app("gan_dataset", "--source", FASHION_MNIST, "--dest", path, "--resolution", 64, "--channels", 3,
            "--max-images", 16)
    return path


def test_gan_train_fine_tunes_from_the_converted_networks(converted, dataset, tmp_path):
    run = tmp_path / "finetune"
    ckpt = converted / "checkpoints" / "ckpt-0.safetensors"
    log = run_app("gan_train", "--config", converted / "config.json", "--model-dir", run, "--steps", 1,
                  "--set", f"data.path={dataset}", "--set", f"train.init_from={ckpt}",
                  "--set", "train.global_batch_size=4", "--set", "hooks.sample_every_steps=0")
    assert f"started from the networks of {ckpt}" in log
    start, _ = read_safetensors(ckpt)
    after, _ = read_safetensors(run / "checkpoints" / "ckpt-1.safetensors")
    # One step from the converted weights: close to them (Adam's first step is about lr per weight).
    for name in ("generator.synthesis.4.conv1.conv.weight", "discriminator.fc.weight"):
        step = np.abs(after[name] - start[name]).max()
        assert 0 < step < 0.05, (name, step)


def test_init_from_names_what_does_not_fit(converted, dataset, tmp_path):
    def train(model_dir, *sets):
        args = ["--config", converted / "config.json", "--model-dir", model_dir, "--steps", 1,
                "--set", f"data.path={dataset}", "--set", "train.global_batch_size=4"]
        for s in sets:
            args += ["--set", s]
        return subprocess.run([str(BUILD / "apps" / "gan_train"), *map(str, args)], capture_output=True, text=True,
                              timeout=600)

    missing = train(tmp_path / "a", f"train.init_from={tmp_path / 'none'}")
    assert missing.returncode == 2 and "train.init_from: expected a checkpoint file" in missing.stderr, missing.stderr
    assert "nothing was written" in missing.stderr and not (tmp_path / "a").exists(), missing.stderr
    # Another network than the checkpoint's: every mismatched tensor is listed, with the file.
    other = train(tmp_path / "b", "generator.w_dim=16",
                  f"train.init_from={converted / 'checkpoints' / 'ckpt-0.safetensors'}")
    assert other.returncode == 2, other.stderr
    assert "ckpt-0.safetensors (generator): state dict does not match" in other.stderr, other.stderr
    assert "'mapping.0.weight': expected shape (16, 8), found (8, 8)" in other.stderr, other.stderr
