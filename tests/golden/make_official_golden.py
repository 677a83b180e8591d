#!/usr/bin/env python3
"""Forward-parity goldens made by the official code (tests/golden/test_golden_official.cpp,
tests/golden/test_convert_official.py).

    build/torch-bench/bin/python tests/golden/make_official_golden.py \\
        --stylegan2 /work/scratch/stylegan2-ada-pytorch --r3gan /work/scratch/R3GAN

--stylegan2 / --r3gan: checkouts of NVlabs/stylegan2-ada-pytorch at STYLEGAN2_COMMIT and of
brownvc/R3GAN at R3GAN_COMMIT (`git archive`, unmodified: the forward passes need no CPU patch).
Any torch 2.x with numpy (made with scripts/setup_torch_bench's venv, torch 2.15 CPU; R3GAN's
torch_utils imports pkg_resources, so that venv needs setuptools < 81).

Per case this builds tiny official networks (a few channels), sets every tensor to
`official_value` (deterministic from the network, the tensor's official name and shape, numpy
only, so the converter test rebuilds the same state dict in CI without torch), saves them as the
official training loop saves a snapshot (pickle.dump of {training_set_kwargs, G, D, G_ema,
augment_pipe}, with the official code's own pickling: StyleGAN2-ADA's persistent classes carry
their source), loads that pickle back with the official legacy.load_network_pkl, converts it with
scripts/convert_stylegan2_pkl.py (the pickle path) and runs the official forward passes (float32,
eval mode, StyleGAN2 with force_fp32) on fixed z and labels and on `discriminator_image`.
Written to tests/golden/data/official_<case>.safetensors:
  generator.* / discriminator.*  the converted checkpoint, without the noise_const buffers
      (sin waves, `noise_const_value`, which the C++ test computes too) and without G_ema (converted
      as G is, which test_convert_official.py checks);
  input.z, input.labels          (class indices as float32);
  output.<name>                  G's images at samples 0 and 1, rows 0, R/2 and R - 1 (all channels
      and columns), or D's logits for all samples; __metadata__ "outputs" says how each was made;
  random_noise.<buffer>          noise mode "random" (32 px StyleGAN2, batch 1): the official
      layers' own torch draws, recorded by replaying the seed in layer order; Gantry's noise is
      Philox, so the C++ test feeds them through the const path;
__metadata__: "gradients" (training_gradients: one training step's gradients of every parameter,
as (norm, projection) pairs under Gantry's names), "config" (the converter's run config),
"official_state" (each network's official tensor names and shapes (G_ema's are G's), constructor
arguments and the snapshot's training_set_kwargs),
"official" (repository@commit), "torch".
"""
import argparse
import copy
import importlib.util
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
import zlib

import numpy as np

STYLEGAN2_COMMIT = "d72cc7d041b42ec8e806021a205ed9349f87c6a4"
R3GAN_COMMIT = "19a7ddf463fbac2bd39b4c1c73d63f1c441c7403"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data")
FIR_1331 = np.outer([1.0, 3.0, 3.0, 1.0], [1.0, 3.0, 3.0, 1.0]).astype(np.float32) / 64.0
STORED_SAMPLES = 2  # G outputs kept: samples 0 and 1, rows 0, R/2, R - 1

# case -> (family, official constructor arguments, batch, seed)
CASES = {
    "stylegan2_32": ("stylegan2", dict(
        G=dict(z_dim=8, c_dim=3, w_dim=8, img_resolution=32, img_channels=3,
               mapping_kwargs=dict(num_layers=3),
               synthesis_kwargs=dict(channel_base=64, channel_max=4, num_fp16_res=0, conv_clamp=1.0)),
        D=dict(c_dim=3, img_resolution=32, img_channels=3, channel_base=64, channel_max=4, num_fp16_res=0,
               conv_clamp=1.0, mapping_kwargs=dict(num_layers=2),
               epilogue_kwargs=dict(mbstd_group_size=2, mbstd_num_channels=2))), 4, 320),
    "stylegan2_64": ("stylegan2", dict(
        G=dict(z_dim=8, c_dim=0, w_dim=8, img_resolution=64, img_channels=3,
               mapping_kwargs=dict(num_layers=2),
               synthesis_kwargs=dict(channel_base=128, channel_max=4, num_fp16_res=0)),
        D=dict(c_dim=0, img_resolution=64, img_channels=3, channel_base=128, channel_max=4, num_fp16_res=0,
               epilogue_kwargs=dict(mbstd_group_size=4))), 4, 640),
    "r3gan_32": ("r3gan", dict(
        G=dict(NoiseDimension=8, WidthPerStage=[6, 6, 4, 4], CardinalityPerStage=[3, 3, 2, 2],
               BlocksPerStage=[2, 1, 1, 1], ExpansionFactor=2, ConditionEmbeddingDimension=4, FP16Stages=[],
               c_dim=3, img_resolution=32),
        D=dict(WidthPerStage=[4, 4, 6, 6], CardinalityPerStage=[2, 2, 3, 3], BlocksPerStage=[1, 1, 1, 2],
               ExpansionFactor=2, ConditionEmbeddingDimension=6, FP16Stages=[], c_dim=3, img_resolution=32)),
        4, 330),
    "r3gan_32_unconditional": ("r3gan", dict(
        G=dict(NoiseDimension=8, WidthPerStage=[4, 4, 4, 4], CardinalityPerStage=[2, 2, 2, 2],
               BlocksPerStage=[1, 1, 1, 1], ExpansionFactor=2, FP16Stages=[], c_dim=0, img_resolution=32),
        D=dict(WidthPerStage=[4, 4, 4, 4], CardinalityPerStage=[2, 2, 2, 2], BlocksPerStage=[1, 1, 1, 1],
               ExpansionFactor=2, FP16Stages=[], c_dim=0, img_resolution=32)), 4, 331),
}


# ---------------------------------------------------------------------------------------------
# Values both sides compute (numpy only; test_golden_official.cpp has the same formulas).

def noise_const_value(res, conv):
    """StyleGAN2's constant noise map of synthesis layer conv<conv> at resolution res."""
    h, w = np.meshgrid(np.arange(res), np.arange(res), indexing="ij")
    return (1.3 * np.sin(0.37 * h + 0.91 * w + 0.5 * conv)).astype(np.float32)


def discriminator_image(n, c, res):
    """D's input (n, c, res, res)."""
    i, k, h, w = np.meshgrid(np.arange(n), np.arange(c), np.arange(res), np.arange(res), indexing="ij")
    return (0.8 * np.sin(0.21 * (h + 1) * (k + 1) + 0.13 * w + 0.7 * i)).astype(np.float32)


def official_value(net, name, shape):
    """The value of official tensor `name` of network net ("G", "D" or "G_ema"): N(0, 1) draws
    keyed by net and name, scaled as the official initialisation scales them where it draws, and
    non-trivial where it starts at zero or one (biases, noise strengths, w_avg, R3GAN's third
    convolutions), which would hide mistakes; the resampling filters as the official code sets them."""
    last = name.split(".")[-1]
    if last in ("resample_filter", "Kernel"):
        return FIR_1331.copy()
    if last == "noise_const":  # synthesis.b<res>.conv<j>.noise_const
        return noise_const_value(shape[0], int(name.split(".")[-2][-1]))
    draw = np.asarray(np.random.RandomState(zlib.crc32(f"{net}.{name}".encode())).standard_normal(shape), np.float64)
    if name.startswith("Model."):  # R3GAN: weights N(0, 1 / fan_in), the depthwise basis N(0, 1/16)
        if last == "Bias":
            scale = 0.5
        elif name.endswith("DiscriminativeBasis.weight") or name.endswith("Basis.weight"):
            scale = 0.25
        elif last == "Basis":
            scale = 1.0
        else:
            scale = 1.0 / math.sqrt(np.prod(shape[1:]))
        return (scale * draw).astype(np.float32)
    if name.endswith("affine.bias"):
        return (1.0 + 0.3 * draw).astype(np.float32)  # styles start at 1
    if last == "bias":
        return (0.3 * draw).astype(np.float32)
    if last in ("noise_strength", "w_avg"):
        return (0.5 * draw).astype(np.float32)
    if name.startswith("mapping.fc"):
        return (100.0 * draw).astype(np.float32)  # stored / lr_multiplier 0.01
    return draw.astype(np.float32)


def official_state(net, manifest):
    """{name: array} for a network's [[name, shape], ...] manifest."""
    return {name: np.asarray(official_value(net, name, tuple(shape)), np.float32) for name, shape in manifest}


def load_converter():
    spec = importlib.util.spec_from_file_location("convert_stylegan2_pkl",
                                                  os.path.join(ROOT, "scripts", "convert_stylegan2_pkl.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# The official side (torch and the official code, one case per process).

def set_official_values(torch, module, net):
    with torch.no_grad():
        for name, t in module.state_dict().items():
            t.copy_(torch.from_numpy(np.asarray(official_value(net, name, tuple(t.shape)), np.float32)))


def stylegan2_noise_layers(G):
    """The SynthesisLayers in forward order, with Gantry's names for their noise_const buffers."""
    out = []
    for k, res in enumerate(G.synthesis.block_resolutions):
        block = getattr(G.synthesis, f"b{res}")
        for conv in ("conv0", "conv1"):
            if hasattr(block, conv):
                out.append((getattr(block, conv), f"generator.synthesis.{k}.{conv}.noise.noise_const"))
    return out


def stored_image(x):
    """The part of G's images (N, C, R, R) a golden keeps."""
    r = x.shape[-1]
    return x[:STORED_SAMPLES][:, :, [0, r // 2, r - 1], :]


def gradient_summary(g):
    """(norm, projection) of a gradient in Gantry's layout: sqrt(sum g^2) and sum g_i sin(0.7 i + 0.3)
    over the flat index i (test_golden_official.cpp computes the same), so a golden keeps two numbers
    per tensor, not the tensor."""
    flat = np.asarray(g, np.float64).reshape(-1)
    return [float(np.sqrt(np.square(flat).sum())), float((flat * np.sin(0.7 * np.arange(flat.size) + 0.3)).sum())]


def training_gradients(torch, conv, family, described, G, D, z, c, image):
    """The gradients one training step takes, by the official networks in training mode (StyleGAN2's
    noise mode const, its per-layer maps the golden's): G's non-saturating loss mean softplus(-D(G(z)))
    w.r.t. G's parameters ("generator"), D's mean softplus(D(G(z))) + mean softplus(-D(x)) and R1 with
    gamma 2, mean ||d sum D(x) / dx||^2, w.r.t. D's ("discriminator", "r1"), x = discriminator_image.
    Named as the converter names the parameters (each gradient put where its parameter was, through
    convert()), summarised by gradient_summary: {loss: {gantry name: [norm, projection]}}."""
    G, D = copy.deepcopy(G).train().requires_grad_(True), copy.deepcopy(D).train().requires_grad_(True)
    kw = dict(noise_mode="const", force_fp32=True) if family == "stylegan2" else {}
    softplus = torch.nn.functional.softplus

    def grads(module, loss):
        named = [(n, p) for n, p in module.named_parameters()]
        got = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
        return {n: (g if g is not None else torch.zeros_like(p)).detach().numpy() for (n, p), g in zip(named, got)}

    fake = G(z, c, **kw)
    by_net = {"generator": ("G", grads(G, softplus(-D(fake, c)).mean()))}
    by_net["discriminator"] = ("D", grads(D, softplus(D(fake.detach(), c)).mean() + softplus(-D(image, c)).mean()))
    x = image.clone().requires_grad_(True)
    (dx,) = torch.autograd.grad(D(x, c).sum(), [x], create_graph=True)
    by_net["r1"] = ("D", grads(D, dx.square().sum([1, 2, 3]).mean()))
    names = {net: parameter_names(conv, described, net, g) for net, g in by_net.values()}
    out = {}
    for loss, (net, g) in by_net.items():
        placed = copy.deepcopy(described)
        placed[net]["state"].update(g)  # buffers keep their values; only parameters are read back
        prefix = "generator." if net == "G" else "discriminator."
        converted = dict(conv.convert(placed, "runs/converted")[0])
        out[loss] = {name: gradient_summary(converted[prefix + name]) for name in names[net]}
    return out


def parameter_names(conv, described, net, grads):
    """The Gantry names of `net`'s parameters: those whose converted tensor changes when the official
    parameters are replaced by distinct values (the converter maps names, it does not mix tensors)."""
    prefix = "generator." if net == "G" else "discriminator."
    marked = copy.deepcopy(described)
    for name in grads:
        marked[net]["state"][name] = marked[net]["state"][name] + 1000.0
    before = dict(conv.convert(described, "runs/converted")[0])
    after = dict(conv.convert(marked, "runs/converted")[0])
    return sorted(n[len(prefix):] for n in after if n.startswith(prefix) and not np.array_equal(after[n], before[n]))


def run_case(case, work):
    import torch
    import legacy
    from training import networks

    family, kwargs, n, seed = CASES[case]
    G, D = networks.Generator(**kwargs["G"]), networks.Discriminator(**kwargs["D"])
    G_ema = copy.deepcopy(G)
    for module, net in ((G, "G"), (D, "D"), (G_ema, "G_ema")):
        set_official_values(torch, module, net)
    c_dim, res = kwargs["G"]["c_dim"], kwargs["G"]["img_resolution"]
    pkl = os.path.join(work, f"network-snapshot-{case}.pkl")
    training_set_kwargs = dict(class_name="training.dataset.ImageFolderDataset", path="dataset.zip",
                               use_labels=c_dim > 0, max_size=None, xflip=False, resolution=res)
    snapshot = dict(training_set_kwargs=training_set_kwargs)  # as training_loop.py pickles it
    for name, module in [("G", G), ("D", D), ("G_ema", G_ema)]:
        snapshot[name] = copy.deepcopy(module).eval().requires_grad_(False).cpu()
    snapshot["augment_pipe"] = None
    with open(pkl, "wb") as f:
        pickle.dump(snapshot, f)

    conv = load_converter()
    described = conv.load_pickle(pkl)
    tensors, config, _ = conv.convert(described, "runs/converted")
    with open(pkl, "rb") as f:
        data = legacy.load_network_pkl(f)
    G, D = data["G"], data["D"]  # G_ema: converted as G is; test_convert_official.py checks it

    gen = torch.Generator().manual_seed(seed)
    z = torch.randn([n, G.z_dim], generator=gen)
    labels = torch.arange(n) % max(c_dim, 1)
    c = torch.nn.functional.one_hot(labels, c_dim).float() if c_dim > 0 else None
    image = torch.from_numpy(discriminator_image(n, 3, res))
    outputs, how = {}, {}

    def record(name, value, **spec):
        outputs["output." + name] = value.detach().float().numpy()
        how[name] = spec

    with torch.no_grad():
        if family == "stylegan2":
            def g(net, zz, cc, **kw):
                return net(zz, cc, force_fp32=True, **kw)
            for mode in ("const", "none"):
                record(f"G_{mode}", stored_image(g(G, z, c, noise_mode=mode)), network="generator", noise_mode=mode,
                       psi=1.0, cutoff=0)
            record("G_psi0.7", stored_image(g(G, z, c, noise_mode="const", truncation_psi=0.7)),
                   network="generator", noise_mode="const", psi=0.7, cutoff=0)
            record("G_psi0.5_cutoff3",
                   stored_image(g(G, z, c, noise_mode="const", truncation_psi=0.5, truncation_cutoff=3)),
                   network="generator", noise_mode="const", psi=0.5, cutoff=3)
            if res == 32:
                # Random noise, batch 1; the draws replayed (same seed, layer order) and checked by
                # feeding them back through the const path.
                torch.manual_seed(seed + 1)
                random_out = g(G, z[:1], c[:1] if c is not None else None, noise_mode="random")
                torch.manual_seed(seed + 1)
                layers = stylegan2_noise_layers(G)
                draws = {name: torch.randn([1, 1, layer.resolution, layer.resolution])[0, 0] for layer, name in layers}
                replay = copy.deepcopy(G)
                for layer, name in stylegan2_noise_layers(replay):
                    layer.noise_const.copy_(draws[name])
                assert torch.equal(g(replay, z[:1], c[:1] if c is not None else None, noise_mode="const"),
                                   random_out), "the replayed noise does not give the random-mode output"
                record("G_random", stored_image(random_out), network="generator", noise_mode="random", psi=1.0,
                       cutoff=0, batch=1)
                outputs.update({"random_noise." + name: t.numpy() for name, t in draws.items()})
            fake = g(G, z, c, noise_mode="const")
            fake_spec = dict(noise_mode="const", psi=1.0, cutoff=0)
        else:
            record("G", stored_image(G(z, c)), network="generator")
            fake, fake_spec = G(z, c), {}
        record("D_image", D(image, c).reshape(n, 1), network="discriminator", input="image")
        record("D_fake", D(fake, c).reshape(n, 1), network="discriminator", input="generator", **fake_spec)

    gradients = training_gradients(torch, conv, family, described, G, D, z, c, image)

    kept = [(name, v) for name, v in tensors
            if not name.endswith("noise_const") and not name.startswith("generator_ema.")]
    entries = kept + [("input.z", z.numpy()), ("input.labels", labels.float().numpy())] + list(outputs.items())
    repo, commit = (("NVlabs/stylegan2-ada-pytorch", STYLEGAN2_COMMIT) if family == "stylegan2"
                    else ("brownvc/R3GAN", R3GAN_COMMIT))
    state = {net: {"class": described[net]["class"], "kwargs": described[net]["kwargs"],
                   "attrs": described[net]["attrs"],
                   "tensors": [[k, list(v.shape)] for k, v in described[net]["state"].items()]}
             for net in ("G", "D", "G_ema")}
    assert state["G_ema"].pop("tensors") == state["G"]["tensors"]  # G_ema's are G's: stored once
    state["training_set_kwargs"] = described["training_set_kwargs"]
    metadata = {"config": json.dumps(config), "outputs": json.dumps(how), "official_state": json.dumps(state),
                "gradients": json.dumps(gradients),
                "official": f"{repo}@{commit}", "torch": torch.__version__,
                "regenerate": "tests/golden/make_official_golden.py (see its docstring)"}
    path = os.path.join(DATA, f"official_{case}.safetensors")
    conv.write_safetensors(path, entries, metadata)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stylegan2", help="checkout of NVlabs/stylegan2-ada-pytorch at " + STYLEGAN2_COMMIT)
    parser.add_argument("--r3gan", help="checkout of brownvc/R3GAN at " + R3GAN_COMMIT)
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a process with its code on sys.path
    args = parser.parse_args()
    if args.case:
        with tempfile.TemporaryDirectory() as work:
            run_case(args.case, work)
        return
    # Both repositories have top-level dnnlib / torch_utils / training packages: each case runs
    # in its own process with its repository on PYTHONPATH.
    for case, (family, *_rest) in CASES.items():
        official = args.stylegan2 if family == "stylegan2" else args.r3gan
        if not official:
            sys.exit(f"{case}: give --{family} (a checkout of the official code)")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(official))
        subprocess.run([sys.executable, os.path.abspath(__file__), "--case", case], env=env, check=True,
                       cwd=os.path.abspath(official))


if __name__ == "__main__":
    main()
