#!/usr/bin/env python3
"""Convert a StyleGAN2-ADA or R3GAN network pickle to a Gantry model_dir.

    PYTHONPATH=/path/to/stylegan2-ada-pytorch python3 scripts/convert_stylegan2_pkl.py network.pkl --out runs/converted
    build/apps/gan_sample --model-dir runs/converted --ema --noise-mode const --out grid.png
    build/apps/gan_train --config runs/converted/config.json --model-dir runs/finetune \\
        --set data.path=my_dataset.zip --set train.init_from=runs/converted/checkpoints/ckpt-0.safetensors

The pickle is the official training loop's snapshot (network-snapshot-*.pkl: G, D, G_ema, with
the mapping network and w_avg) of NVlabs/stylegan2-ada-pytorch or brownvc/R3GAN. Unpickling runs
the official code (the pickle names its classes and, for StyleGAN2-ADA, carries their source), so
it needs PyTorch and that repository on PYTHONPATH; its legacy.py also reads the TensorFlow
StyleGAN2(-ADA) pickles. The conversion itself is numpy only (`convert`), and maps every
official tensor to Gantry's name: a tensor it cannot place, a setting Gantry's network cannot
express (another architecture, kernel, filter or activation) or a network of another family is
refused with the reason, naming the tensors or keys.

Output: <out>/checkpoints/ckpt-0.safetensors (generator.*, discriminator.*, generator_ema.*, in
Gantry's checkpoint format) and <out>/config.json (a run config whose networks are the pickle's:
`gan_sample --model-dir <out>` samples from it, and `train.init_from` starts a fine-tuning run
from it with fresh optimizers, as the official --resume does). docs/models.md, "Weights from the
official code", says what is supported and what differs.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_file import write_safetensors  # noqa: E402  (the sibling module, however this one is loaded)

CHECKPOINT_FORMAT = "gantry.checkpoint.v1"
# StyleGAN2's [1,3,3,1] low-pass filter as upfirdn2d.setup_filter (and R3GAN's [1,2,1] convolved
# with [1,1]) stores it: the normalised outer product. Gantry builds the same buffer.
FIR_1331 = np.outer([1.0, 3.0, 3.0, 1.0], [1.0, 3.0, 3.0, 1.0]).astype(np.float32) / 64.0


class ConversionError(Exception):
    """What cannot be converted, and why."""


# ---------------------------------------------------------------------------------------------
# Reading a pickle: the only part that needs torch and the official code.

def load_pickle(path):
    """{"G", "D", "G_ema": network, "training_set_kwargs": dict or None}; a network is
    {"class": "module.Class", "kwargs": constructor kwargs or None, "attrs": {...},
    "state": {name: float32 array}}."""
    try:
        import torch  # noqa: F401  (unpickling builds torch modules)
    except ImportError as e:
        raise ConversionError(f"{path}: unpickling an official network needs PyTorch ({e}); install it, e.g. "
                              "scripts/setup_torch_bench, and run this script with that interpreter") from e
    try:
        import legacy  # the official code's loader (stylegan2-ada-pytorch/legacy.py, R3GAN/legacy.py)
    except ImportError as e:
        raise ConversionError(f"{path}: unpickling needs the official code on PYTHONPATH: the folder of "
                              "NVlabs/stylegan2-ada-pytorch for a StyleGAN2-ADA pickle, of brownvc/R3GAN for an "
                              f"R3GAN pickle (its legacy.py, dnnlib, torch_utils and training); {e}") from e
    try:
        with open(path, "rb") as f:
            data = legacy.load_network_pkl(f)
    except ModuleNotFoundError as e:
        raise ConversionError(f"{path}: the pickle needs module '{e.name}', which the official code on PYTHONPATH "
                              f"({os.path.dirname(os.path.abspath(legacy.__file__))}) does not have: a StyleGAN2-ADA "
                              "pickle needs NVlabs/stylegan2-ada-pytorch, an R3GAN pickle brownvc/R3GAN") from e
    missing = [k for k in ("G", "D", "G_ema") if data.get(k) is None]
    if missing:
        raise ConversionError(f"{path}: expected a training snapshot with G, D and G_ema, found no {', '.join(missing)}")
    nets = {k: describe_module(data[k]) for k in ("G", "D", "G_ema")}
    nets["training_set_kwargs"] = plain(data.get("training_set_kwargs"))
    return nets


def plain(value):
    """EasyDicts, tuples and numpy scalars as JSON-able Python values."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def describe_module(module):
    cls = type(module)
    attrs = {}
    # R3GAN's wrappers are not persistent classes (no init_kwargs): what the state does not
    # show is read from the modules (the stages' compute dtypes, the label and noise sizes).
    inner = getattr(module, "Model", None)
    if inner is not None and hasattr(inner, "MainLayers"):
        attrs["stage_dtypes"] = [str(getattr(stage, "DataType", "torch.float32")) for stage in inner.MainLayers]
    for name in ("z_dim", "c_dim", "img_resolution", "img_channels"):
        if isinstance(getattr(module, name, None), int):
            attrs[name] = getattr(module, name)
    # A persistent class (StyleGAN2-ADA's) is rebuilt in torch_utils.persistence; its own name stays.
    name = getattr(cls, "_orig_class_name", cls.__name__)
    return {"class": f"{cls.__module__}.{name}",
            "kwargs": plain(getattr(module, "init_kwargs", None)),
            "attrs": attrs,
            "state": {k: v.detach().cpu().float().numpy() for k, v in module.state_dict().items()}}


# ---------------------------------------------------------------------------------------------
# The conversion (numpy only).

class OfficialState:
    """An official state dict being placed: every tensor must be taken or knowingly dropped."""

    def __init__(self, what, state):
        self.what = what
        self.state = dict(state)
        self.used = set()

    def has(self, name):
        return name in self.state

    def take(self, name, shape=None):
        if name not in self.state:
            raise ConversionError(f"{self.what}: expected tensor '{name}', found none")
        value = np.asarray(self.state[name], dtype=np.float32)
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ConversionError(f"{self.what}: tensor '{name}': expected shape {tuple(shape)}, "
                                  f"found {tuple(value.shape)}")
        self.used.add(name)
        return value

    def take_filter(self, name):
        """A resampling filter buffer, which must be StyleGAN2's [1,3,3,1] (Gantry's)."""
        f = self.take(name)
        if f.shape != FIR_1331.shape or not np.allclose(f, FIR_1331, rtol=0, atol=1e-7):
            raise ConversionError(f"{self.what}: tensor '{name}': expected the [1,3,3,1] resampling filter "
                                  f"(normalised outer product), found {f.tolist()}; Gantry's networks resample "
                                  "with that filter only")
        return f

    def finish(self):
        left = sorted(set(self.state) - self.used)
        if left:
            raise ConversionError(f"{self.what}: cannot place {len(left)} tensor(s) in Gantry's network: "
                                  + ", ".join(left))


def require(condition, what, message):
    if not condition:
        raise ConversionError(f"{what}: {message}")


def setting(kwargs, key, default, what, allowed=None):
    """kwargs[key] (default when absent or None where None means the default); checked against allowed."""
    value = kwargs.get(key, default)
    if allowed is not None and value not in allowed:
        raise ConversionError(f"{what}: {key} = {value!r} is not supported (Gantry's network has "
                              f"{' or '.join(repr(a) for a in allowed)})")
    return value


def family_of(net):
    """'stylegan2' or 'r3gan' from the network's state names; refuses anything else."""
    cls, state = net["class"], net["state"]
    if any(k.startswith("Model.MainLayers.") for k in state):
        return "r3gan"
    if any(k.startswith("synthesis.input.") or k.startswith("synthesis.L0_") for k in state):
        raise ConversionError(f"{cls}: a StyleGAN3 (alias-free) generator; Gantry has no such network (StyleGAN2-ADA "
                              "and R3GAN pickles convert)")
    if any(k.startswith("synthesis.b") for k in state) or any(k.startswith("b4.") for k in state):
        return "stylegan2"
    raise ConversionError(f"{cls}: not a StyleGAN2-ADA or R3GAN network (state names such as "
                          f"{', '.join(sorted(state)[:4])})")


def resolutions(img_resolution):
    return [2 ** i for i in range(2, int(np.log2(img_resolution)) + 1)]


def channels_of(channel_base, channel_max):
    return lambda res: min(channel_base // res, channel_max)


def stylegan2_kwargs(net, what):
    kw = net["kwargs"]
    require(isinstance(kw, dict), what, "expected the constructor arguments (init_kwargs) of a persistent "
            "StyleGAN2-ADA class, found none (a pickle of another code base?)")
    return kw


def convert_stylegan2_generator(net, what):
    """Gantry's "stylegan2" generator: (tensors {name: array}, generator config)."""
    kw = stylegan2_kwargs(net, what)
    s = OfficialState(what, net["state"])
    z_dim, c_dim, w_dim = kw["z_dim"], kw["c_dim"], kw["w_dim"]
    res, img_channels = kw["img_resolution"], kw["img_channels"]
    mk, sk = kw.get("mapping_kwargs") or {}, kw.get("synthesis_kwargs") or {}
    require(z_dim > 0, what, f"z_dim = {z_dim}: Gantry's generator needs a noise input")
    require(res >= 8 and res & (res - 1) == 0, what, f"img_resolution = {res}: Gantry's stylegan2 needs a power of "
            "two of at least 8")
    setting(sk, "architecture", "skip", f"{what}.synthesis_kwargs", ["skip"])
    setting(sk, "resample_filter", [1, 3, 3, 1], f"{what}.synthesis_kwargs", [[1, 3, 3, 1]])
    setting(sk, "activation", "lrelu", f"{what}.synthesis_kwargs", ["lrelu"])
    setting(sk, "kernel_size", 3, f"{what}.synthesis_kwargs", [3])
    use_noise = setting(sk, "use_noise", True, f"{what}.synthesis_kwargs", [True, False])
    channel_base, channel_max = sk.get("channel_base", 32768), sk.get("channel_max", 512)
    conv_clamp = sk.get("conv_clamp") or 0
    layers = setting(mk, "num_layers", 8, f"{what}.mapping_kwargs")
    require(layers >= 1, what, "mapping_kwargs.num_layers = 0: Gantry's mapping network has at least one layer")
    setting(mk, "activation", "lrelu", f"{what}.mapping_kwargs", ["lrelu"])
    for key in ("embed_features", "layer_features"):
        setting(mk, key, None, f"{what}.mapping_kwargs", [None, w_dim])
    w_avg_beta = mk.get("w_avg_beta", 0.995)
    require(w_avg_beta is not None, what, "mapping_kwargs.w_avg_beta = None (no w_avg): Gantry's generator tracks "
            "w_avg for truncation")
    ch = channels_of(channel_base, channel_max)

    out = {}
    if c_dim > 0:
        out["embed.weight"] = s.take("mapping.embed.weight", (w_dim, c_dim))
        out["embed.bias"] = s.take("mapping.embed.bias", (w_dim,))
    in_features = z_dim + (w_dim if c_dim > 0 else 0)
    for i in range(layers):
        out[f"mapping.{i}.weight"] = s.take(f"mapping.fc{i}.weight", (w_dim, in_features if i == 0 else w_dim))
        out[f"mapping.{i}.bias"] = s.take(f"mapping.fc{i}.bias", (w_dim,))
    out["w_avg"] = s.take("mapping.w_avg", (w_dim,))

    def synthesis_layer(src, dst, c_in, c_out, r, up):
        out[f"{dst}.conv.weight"] = s.take(f"{src}.weight", (c_out, c_in, 3, 3))
        out[f"{dst}.conv.affine.weight"] = s.take(f"{src}.affine.weight", (c_in, w_dim))
        out[f"{dst}.conv.affine.bias"] = s.take(f"{src}.affine.bias", (c_in,))
        f = s.take_filter(f"{src}.resample_filter")  # every SynthesisLayer keeps one; Gantry's up-sampling ones
        if up:
            out[f"{dst}.conv.resample_filter"] = f
        # Without noise inputs (use_noise False) the layer adds nothing: strength 0 is the same function.
        out[f"{dst}.noise.noise_strength"] = (s.take(f"{src}.noise_strength", ()) if use_noise
                                              else np.zeros((), np.float32))
        out[f"{dst}.noise.noise_const"] = (s.take(f"{src}.noise_const", (r, r)) if use_noise
                                           else np.zeros((r, r), np.float32))
        out[f"{dst}.bias"] = s.take(f"{src}.bias", (c_out,))

    for k, r in enumerate(resolutions(res)):
        src, dst = f"synthesis.b{r}", f"synthesis.{k}"
        block_filter = s.take_filter(f"{src}.resample_filter")
        if r == 4:
            out[f"{dst}.const"] = s.take(f"{src}.const", (ch(4), 4, 4))
        else:
            synthesis_layer(f"{src}.conv0", f"{dst}.conv0", ch(r // 2), ch(r), r, up=True)
        synthesis_layer(f"{src}.conv1", f"{dst}.conv1", ch(r), ch(r), r, up=False)
        out[f"{dst}.torgb.conv.weight"] = s.take(f"{src}.torgb.weight", (img_channels, ch(r), 1, 1))
        out[f"{dst}.torgb.conv.affine.weight"] = s.take(f"{src}.torgb.affine.weight", (ch(r), w_dim))
        out[f"{dst}.torgb.conv.affine.bias"] = s.take(f"{src}.torgb.affine.bias", (ch(r),))
        out[f"{dst}.torgb.bias"] = s.take(f"{src}.torgb.bias", (img_channels,))
        if r > 4:
            out[f"{dst}.resample_filter"] = block_filter
    s.finish()
    config = {"type": "stylegan2", "noise_dim": z_dim, "w_dim": w_dim, "mapping_layers": layers,
              "mapping_lr_mul": mk.get("lr_multiplier", 0.01), "w_avg_beta": w_avg_beta,
              "channel_base": channel_base, "channel_max": channel_max, "conditional": c_dim > 0,
              "const_noise": True, "conv_clamp": conv_clamp}
    shape = {"img_resolution": res, "img_channels": img_channels, "c_dim": c_dim}
    return out, config, shape


def convert_stylegan2_discriminator(net, what):
    """Gantry's "stylegan2" discriminator: (tensors, discriminator config, image shape)."""
    kw = stylegan2_kwargs(net, what)
    s = OfficialState(what, net["state"])
    c_dim, res, img_channels = kw["c_dim"], kw["img_resolution"], kw["img_channels"]
    bk, mk, ek = kw.get("block_kwargs") or {}, kw.get("mapping_kwargs") or {}, kw.get("epilogue_kwargs") or {}
    setting(kw, "architecture", "resnet", what, ["resnet"])
    for sub, name in ((bk, "block_kwargs"), (ek, "epilogue_kwargs"), (mk, "mapping_kwargs")):
        setting(sub, "activation", "lrelu", f"{what}.{name}", ["lrelu"])
    setting(bk, "resample_filter", [1, 3, 3, 1], f"{what}.block_kwargs", [[1, 3, 3, 1]])
    channel_base, channel_max = kw.get("channel_base", 32768), kw.get("channel_max", 512)
    ch = channels_of(channel_base, channel_max)
    setting(kw, "cmap_dim", None, what, [None, ch(4)])
    for key in ("embed_features", "layer_features"):
        setting(mk, key, None, f"{what}.mapping_kwargs", [None, ch(4)])
    group = ek.get("mbstd_group_size", 4)
    require(group is not None, what, "epilogue_kwargs.mbstd_group_size = None (the whole batch): Gantry's minibatch "
            "std takes a fixed group size")
    mbstd_channels = ek.get("mbstd_num_channels", 1)
    require(mbstd_channels >= 1, what, "epilogue_kwargs.mbstd_num_channels = 0: Gantry's discriminator always has "
            "the minibatch std layer")
    layers = mk.get("num_layers", 8) if c_dim > 0 else 0
    require(c_dim == 0 or layers >= 1, what, "mapping_kwargs.num_layers = 0: Gantry's label mapping network has at "
            "least one layer (mapping_layers 0 is its embedding-only projection, another function)")
    conv_clamp = kw.get("conv_clamp") or 0

    out = {}

    def conv(src, dst, c_out, c_in, k, bias=True, down=False):
        out[f"{dst}.weight"] = s.take(f"{src}.weight", (c_out, c_in, k, k))
        if bias:
            out[f"{dst}.bias"] = s.take(f"{src}.bias", (c_out,))
        f = s.take_filter(f"{src}.resample_filter")  # every Conv2dLayer keeps one; Gantry's resampling ones
        if down:
            out[f"{dst}.resample_filter"] = f

    blocks = list(reversed(resolutions(res)))[:-1]  # R, ..., 8
    conv(f"b{res}.fromrgb", "fromrgb", ch(res), img_channels, 1)
    for k, r in enumerate(blocks):
        s.take_filter(f"b{r}.resample_filter")  # the block's own (used by the skip architecture only)
        conv(f"b{r}.conv0", f"blocks.{k}.conv0", ch(r), ch(r), 3)
        conv(f"b{r}.conv1", f"blocks.{k}.conv1", ch(r // 2), ch(r), 3, down=True)
        conv(f"b{r}.skip", f"blocks.{k}.skip", ch(r // 2), ch(r), 1, bias=False, down=True)
    conv("b4.conv", "conv", ch(4), ch(4) + mbstd_channels, 3)
    out["fc.weight"] = s.take("b4.fc.weight", (ch(4), ch(4) * 16))
    out["fc.bias"] = s.take("b4.fc.bias", (ch(4),))
    outputs = ch(4) if c_dim > 0 else 1
    out["out.weight"] = s.take("b4.out.weight", (outputs, ch(4)))
    out["out.bias"] = s.take("b4.out.bias", (outputs,))
    if c_dim > 0:
        out["embed.weight"] = s.take("mapping.embed.weight", (ch(4), c_dim))
        out["embed.bias"] = s.take("mapping.embed.bias", (ch(4),))
        for i in range(layers):
            out[f"mapping.{i}.weight"] = s.take(f"mapping.fc{i}.weight", (ch(4), ch(4)))
            out[f"mapping.{i}.bias"] = s.take(f"mapping.fc{i}.bias", (ch(4),))
    s.finish()
    config = {"type": "stylegan2", "channel_base": channel_base, "channel_max": channel_max,
              "mbstd_group_size": group, "mbstd_num_channels": mbstd_channels, "conditional": c_dim > 0,
              "mapping_layers": layers, "mapping_lr_mul": mk.get("lr_multiplier", 0.01), "conv_clamp": conv_clamp}
    return out, config, {"img_resolution": res, "img_channels": img_channels, "c_dim": c_dim}


def r3gan_block(s, src, dst, out):
    """One ResidualBlock: (width, expanded width, groups)."""
    w1 = s.take(f"{src}.LinearLayer1.Layer.weight")
    ec, c = w1.shape[0], w1.shape[1]
    require(w1.shape[2:] == (1, 1), s.what, f"'{src}.LinearLayer1.Layer.weight': expected a 1x1 kernel, found "
            f"{w1.shape}")
    w2 = s.take(f"{src}.LinearLayer2.Layer.weight")
    require(w2.shape[0] == ec and ec % w2.shape[1] == 0 and w2.shape[2:] == (3, 3), s.what,
            f"'{src}.LinearLayer2.Layer.weight': expected ({ec}, {ec}/groups, 3, 3) (Gantry's blocks have 3x3 "
            f"kernels), found {w2.shape}")
    out[f"{dst}.conv1"] = w1
    out[f"{dst}.bias1"] = s.take(f"{src}.NonLinearity1.Bias", (ec,))
    out[f"{dst}.conv2"] = w2
    out[f"{dst}.bias2"] = s.take(f"{src}.NonLinearity2.Bias", (ec,))
    out[f"{dst}.conv3"] = s.take(f"{src}.LinearLayer3.Layer.weight", (c, ec, 1, 1))
    return c, ec, ec // w2.shape[1]


def r3gan_stage_blocks(s, src, layers, dst, width, expansions, out):
    """The residual blocks Layers.<j> (j in layers) of one stage as dst.<0...>; their groups."""
    groups = set()
    for b, j in enumerate(layers):
        c, ec, g = r3gan_block(s, f"{src}.{j}", f"{dst}.{b}", out)
        require(c == width, s.what, f"'{src}.{j}': width {c}, expected the stage's {width}")
        expansions.append(ec // c)
        groups.add(g)
    require(len(groups) == 1, s.what, f"'{src}': the blocks' group counts {sorted(groups)} differ; Gantry's "
            "cardinality is one per stage")
    return groups.pop()


def r3gan_stages(state):
    """{stage: number of Layers entries} from Model.MainLayers.<stage>.Layers.<j>... names."""
    stages = {}
    for name in state:
        parts = name.split(".")
        if parts[:2] == ["Model", "MainLayers"] and len(parts) > 4 and parts[3] == "Layers":
            i, j = int(parts[2]), int(parts[4])
            stages[i] = max(stages.get(i, 0), j + 1)
    return [stages[i] for i in range(len(stages))]


def r3gan_layout(widths, blocks, expansions, groups, what):
    exp = set(expansions)
    require(len(exp) == 1, what, f"expansion factors {sorted(exp)} differ between blocks; Gantry's r3gan has one")
    return {"widths": widths, "blocks_per_stage": blocks, "expansion": exp.pop(), "cardinality": groups}


def r3gan_resolution(net, stages, what):
    res = 4 * 2 ** (stages - 1)
    require(res in (32, 64), what, f"{stages} stages ({res} px): Gantry's r3gan supports 32 and 64 px images")
    dtypes = net["attrs"].get("stage_dtypes", [])
    return res, [i for i, d in enumerate(dtypes) if d != "torch.float32"]


def convert_r3gan_generator(net, what):
    s = OfficialState(what, net["state"])
    counts = r3gan_stages(s.state)
    require(counts, what, "expected Model.MainLayers.* tensors (an R3GAN generator), found none")
    res, low_precision = r3gan_resolution(net, len(counts), what)
    out, widths, blocks, expansions, groups = {}, [], [], [], []
    for i, n in enumerate(counts):
        src = f"Model.MainLayers.{i}.Layers"
        if i == 0:
            basis = s.take(f"{src}.0.Basis")
            out["basis"] = basis
            out["basis_linear"] = s.take(f"{src}.0.LinearLayer.weight")
            width = basis.shape[0]
        else:
            s.take_filter(f"{src}.0.Resampler.Kernel")
            if s.has(f"{src}.0.LinearLayer.Layer.weight"):
                t = s.take(f"{src}.0.LinearLayer.Layer.weight")
                out[f"stages.{i}.transition"] = t
                width = t.shape[0]
        require(n > 1, what, f"stage {i} has no residual block; Gantry's r3gan needs at least one per stage")
        groups.append(r3gan_stage_blocks(s, src, range(1, n), f"stages.{i}.blocks", width, expansions, out))
        widths.append(width)
        blocks.append(n - 1)
    out["aggregation"] = s.take("Model.AggregationLayer.Layer.weight", (3, widths[-1], 1, 1))
    in_features = out["basis_linear"].shape[1]
    embed = 0
    if s.has("Model.EmbeddingLayer.weight"):
        e = s.take("Model.EmbeddingLayer.weight")  # Linear(c_dim, E) on one-hot labels: a table (c_dim, E)
        out["embed"] = np.ascontiguousarray(e.T)
        embed = e.shape[0]
    s.finish()
    config = {"type": "r3gan", "noise_dim": in_features - embed, **r3gan_layout(widths, blocks, expansions, groups, what),
              "conditional": embed > 0, "tanh": False}
    if embed:
        config["embed_dim"] = embed
    shape = {"img_resolution": res, "img_channels": 3, "c_dim": out["embed"].shape[0] if embed else 0,
             "low_precision_stages": low_precision}
    return out, config, shape


def convert_r3gan_discriminator(net, what):
    s = OfficialState(what, net["state"])
    counts = r3gan_stages(s.state)
    require(counts, what, "expected Model.MainLayers.* tensors (an R3GAN discriminator), found none")
    res, low_precision = r3gan_resolution(net, len(counts), what)
    out, widths, blocks, expansions, groups = {}, [], [], [], []
    out["extraction"] = s.take("Model.ExtractionLayer.Layer.weight")
    require(out["extraction"].shape[1:] == (3, 1, 1), what, "'Model.ExtractionLayer.Layer.weight': expected "
            f"(width, 3, 1, 1), found {out['extraction'].shape}")
    width = out["extraction"].shape[0]
    for i, n in enumerate(counts):
        src = f"Model.MainLayers.{i}.Layers"
        require(n > 1, what, f"stage {i} has no residual block; Gantry's r3gan needs at least one per stage")
        groups.append(r3gan_stage_blocks(s, src, range(n - 1), f"stages.{i}.blocks", width, expansions, out))
        widths.append(width)
        blocks.append(n - 1)
        last = f"{src}.{n - 1}"
        if i + 1 < len(counts):
            s.take_filter(f"{last}.Resampler.Kernel")
            if s.has(f"{last}.LinearLayer.Layer.weight"):
                t = s.take(f"{last}.LinearLayer.Layer.weight")
                out[f"stages.{i}.transition"] = t
                width = t.shape[0]
        else:
            basis = s.take(f"{last}.Basis.weight", (width, 1, 4, 4))
            out["basis"] = np.ascontiguousarray(basis.reshape(width, 4, 4))
            out["basis_linear"] = s.take(f"{last}.LinearLayer.weight")
    embed = 0
    if s.has("Model.EmbeddingLayer.weight"):
        e = s.take("Model.EmbeddingLayer.weight")
        out["embed"] = np.ascontiguousarray(e.T)
        embed = e.shape[0]
        require(out["basis_linear"].shape[0] == embed, what, f"the basis maps to {out['basis_linear'].shape[0]} "
                f"features, expected the label embedding's {embed}")
    s.finish()
    config = {"type": "r3gan", **r3gan_layout(widths, blocks, expansions, groups, what), "conditional": embed > 0}
    if embed:
        config["embed_dim"] = embed
    shape = {"img_resolution": res, "img_channels": 3, "c_dim": out["embed"].shape[0] if embed else 0,
             "low_precision_stages": low_precision}
    return out, config, shape


CONVERTERS = {"stylegan2": (convert_stylegan2_generator, convert_stylegan2_discriminator),
              "r3gan": (convert_r3gan_generator, convert_r3gan_discriminator)}


def run_config(family, generator, discriminator, shape, training_set_kwargs, out_dir):
    """A Gantry run config for the converted networks (docs/config.md); data from the snapshot's
    training set when it names one (`--set data.path=...` to fine-tune on another)."""
    tsk = training_set_kwargs or {}
    c, r = shape["img_channels"], shape["img_resolution"]
    data = {"type": "zip", "path": tsk.get("path") or "dataset.zip", "image_shape": [c, r, r],
            "use_labels": shape["c_dim"] > 0, "mirror": bool(tsk.get("xflip", False))}
    if shape["c_dim"] > 0:
        data["num_classes"] = shape["c_dim"]
    config = {"model_dir": out_dir, "data": data, "generator": generator, "discriminator": discriminator,
              "train": {"seed": 0, "generator_ema": {"type": "half_life", "half_life_kimg": 10}}}
    if family == "stylegan2":
        config["loss"] = {"type": "non_saturating", "penalties": [{"type": "r1", "gamma": 10, "interval": 16}]}
        adam = {"type": "adam", "lr": 0.0025, "beta1": 0.0, "beta2": 0.99}
    else:
        config["loss"] = {"type": "relativistic_pairing", "penalties": [{"type": "r1", "gamma": 0.05}],
                          "terms": [{"type": "r2", "gamma": 0.05}]}
        adam = {"type": "adam", "lr": 0.0002, "beta1": 0.0, "beta2": 0.99}
    config["optimizers"] = {"generator": dict(adam), "discriminator": dict(adam)}
    return config


def convert(nets, out_dir="runs/converted"):
    """nets as load_pickle returns them -> (tensors [(name, float32 array)], config, notes)."""
    family = family_of(nets["G"])
    for key in ("D", "G_ema"):
        other = family_of(nets[key])
        require(other == family, key, f"a {other} network next to a {family} G")
    convert_g, convert_d = CONVERTERS[family]
    g, g_config, g_shape = convert_g(nets["G"], "G")
    ema, ema_config, _ = convert_g(nets["G_ema"], "G_ema")
    require(ema_config == g_config, "G_ema", f"built differently from G ({ema_config} vs {g_config})")
    d, d_config, d_shape = convert_d(nets["D"], "D")
    for key in ("img_resolution", "img_channels", "c_dim"):
        require(g_shape[key] == d_shape[key], "D", f"{key} {d_shape[key]}, G's is {g_shape[key]}")
    notes = []
    low = g_shape.get("low_precision_stages") or d_shape.get("low_precision_stages")
    if low:
        notes.append(f"the official networks run stages {low} in bfloat16 (FP16Stages); Gantry computes in float32")
    if family == "stylegan2":
        notes.append("style_mixing_prob, the loss and the optimizers are not in the pickle: config.json has "
                     "StyleGAN2-ADA's defaults (mixing 0.9, R1 gamma 10 every 16, Adam 0.0025 (0, 0.99)); set your "
                     "run's values before fine-tuning")
        g_config["style_mixing_prob"] = 0.9
    config = run_config(family, g_config, d_config, g_shape, nets.get("training_set_kwargs"), out_dir)
    tensors = ([("generator." + k, v) for k, v in g.items()] + [("discriminator." + k, v) for k, v in d.items()]
               + [("generator_ema." + k, v) for k, v in ema.items()])
    return tensors, config, notes


# ---------------------------------------------------------------------------------------------
# Writing Gantry's files.

def check_new_model_dir(out_dir):
    """A run's folder is never overwritten: its checkpoints and config stay as they were."""
    taken = [p for p in (os.path.join(out_dir, "checkpoints"), os.path.join(out_dir, "config.json")) if os.path.exists(p)]
    require(not taken, f"--out {out_dir}", f"expected a new model_dir, found {', '.join(taken)}; choose another --out")


def write_model_dir(out_dir, tensors, config, source):
    """<out_dir>/checkpoints/ckpt-0.safetensors + latest, and <out_dir>/config.json."""
    ckpt_dir = os.path.join(out_dir, "checkpoints")
    check_new_model_dir(out_dir)
    os.makedirs(ckpt_dir, exist_ok=True)
    metadata = {"format": CHECKPOINT_FORMAT, "step": "0", "seed": str(config["train"]["seed"]),
                "config": json.dumps(config), "converted_from": source}
    path = os.path.join(ckpt_dir, "ckpt-0.safetensors")
    write_safetensors(path, tensors, metadata)
    with open(os.path.join(ckpt_dir, "latest"), "w") as f:
        f.write("ckpt-0.safetensors\n")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pickle", help="the official training snapshot (network-snapshot-*.pkl)")
    parser.add_argument("--out", required=True, help="the Gantry model_dir to write")
    args = parser.parse_args(argv)
    try:
        check_new_model_dir(args.out)
        nets = load_pickle(args.pickle)
        tensors, config, notes = convert(nets, args.out)
    except ConversionError as e:
        sys.exit(f"convert_stylegan2_pkl: {e}")
    with open(args.pickle, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    path = write_model_dir(args.out, tensors, config, f"{os.path.basename(args.pickle)} sha256 {digest}")
    print(f"wrote {path}: {len(tensors)} tensors ({config['generator']['type']}, "
          f"{config['data']['image_shape']}, {'conditional' if config['data']['use_labels'] else 'unconditional'})")
    print(f"wrote {os.path.join(args.out, 'config.json')}")
    for note in notes:
        print(f"note: {note}")


if __name__ == "__main__":
    main()
