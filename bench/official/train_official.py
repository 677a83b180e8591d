#!/usr/bin/env python3
"""Train with the official StyleGAN2-ADA or R3GAN code on this CPU, at the settings of Gantry's
configs/stylegan2_fashion_mnist.json / configs/r3gan_fashion_mnist.json, from a ZIP made by
gan_dataset: one side of the training-parity experiment (issue 44 part 3; docs/models.md,
"Weights from the official code").

    python3 bench/official/patch_for_cpu.py /work/scratch/sg2-cpu          # once per checkout
    build/apps/gan_dataset --source /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \\
        --dest datasets/fashion_mnist_rgb32.zip --resolution 32 --channels 3
    OMP_NUM_THREADS=2 build/torch-bench/bin/python bench/official/train_official.py --family stylegan2 \\
        --official /work/scratch/sg2-cpu --data datasets/fashion_mnist_rgb32.zip --outdir runs/official --kimg 100 --seed 0

The venv needs, beside torch (scripts/setup_torch_bench), what the official code imports:
    build/torch-bench/bin/pip install click requests psutil pillow scipy 'setuptools<70'
(R3GAN's conv2d_gradfix imports pkg_resources, which setuptools 70 and later no longer ship.)

The official code is imported from --official (a checkout patched by patch_for_cpu.py) and its
own training loop runs unchanged; this script only builds its arguments, as its train.py would,
with the network sizes and hyperparameters of Gantry's config (each an option below, defaults
those of the shipped config):
  stylegan2: train.setup_training_loop_kwargs (cfg auto, --fp32, --aug noaug, metrics none), then
    z/w 64, 2 mapping layers, channel_base 512 / channel_max 128 in G and D, minibatch std group 4,
    no style mixing, no path length regularisation (and no lazy G phase, whose learning-rate
    correction Gantry applies only when path length is on), R1 gamma 0.1 every 16 D steps, Adam
    0.0025 (0, 0.99), batch 32, G EMA 10 kimg with ramp-up 0.05;
  r3gan: R3GAN's train.py settings built here (its presets are hard-coded): widths 32 x 4, one block
    per stage, cardinality 4, expansion 2, noise 64, float32 stages, no augmentation, batch 32,
    lr 2e-4 -> 5e-5, beta2 0.9 -> 0.99, gamma 0.05 -> 0.005 and the EMA half life 0 -> 2.5 kimg on
    R3GAN's cosine schedules over --decay-kimg (48).
Snapshots (network-snapshot-<kimg>.pkl every --snap ticks of --tick kimg) convert with
scripts/convert_stylegan2_pkl.py, so gan_eval scores both sides with the same feature network.
The log's "kimg" / "sec/tick" lines give the images/s.
"""
import argparse
import os
import sys
import tempfile


def stylegan2_args(a):
    import dnnlib
    import train
    desc, args = train.setup_training_loop_kwargs(
        gpus=1, snap=a.snap, metrics=[], seed=a.seed, data=a.data, cond=False, mirror=False, cfg="auto",
        gamma=a.gamma, kimg=a.kimg, batch=a.batch, aug="noaug", fp32=True, workers=1)
    for kwargs in (args.G_kwargs.synthesis_kwargs, args.D_kwargs):
        kwargs.channel_base, kwargs.channel_max = a.channel_base, a.channel_max
    args.G_kwargs.z_dim = args.G_kwargs.w_dim = a.latent
    args.G_kwargs.mapping_kwargs.num_layers = a.mapping_layers
    args.D_kwargs.epilogue_kwargs.mbstd_group_size = a.mbstd
    for opt in (args.G_opt_kwargs, args.D_opt_kwargs):
        opt.lr = a.lr
        opt.betas = [0.0, 0.99]  # floats: PyTorch 2.x's Adam refuses train.py's [0, 0.99]
    args.loss_kwargs.pl_weight = 0
    args.loss_kwargs.style_mixing_prob = 0
    args.G_reg_interval = None  # no path length: G trains in one phase, without the lazy correction
    # R1 as a phase of its own every --r1-interval D steps (the official default 16), or, for 1,
    # in D's every step, one phase (Dboth)
    args.D_reg_interval = a.r1_interval if a.r1_interval > 1 else None
    args.ema_kimg, args.ema_rampup = a.ema_kimg, 0.05
    args.kimg_per_tick = a.tick
    args.image_snapshot_ticks = args.network_snapshot_ticks = a.snap
    args.data_loader_kwargs = dnnlib.EasyDict(pin_memory=False, num_workers=1, prefetch_factor=2)
    return desc, args


def r3gan_args(a):
    import dnnlib
    import train
    c = dnnlib.EasyDict()
    width, stages = a.width, 4
    c.G_kwargs = dnnlib.EasyDict(class_name="training.networks.Generator", NoiseDimension=a.latent,
                                 WidthPerStage=[width] * stages, CardinalityPerStage=[a.cardinality] * stages,
                                 BlocksPerStage=[1] * stages, ExpansionFactor=2, FP16Stages=[])
    c.D_kwargs = dnnlib.EasyDict(class_name="training.networks.Discriminator", WidthPerStage=[width] * stages,
                                 CardinalityPerStage=[a.cardinality] * stages, BlocksPerStage=[1] * stages,
                                 ExpansionFactor=2, FP16Stages=[])
    c.G_opt_kwargs = dnnlib.EasyDict(class_name="torch.optim.Adam", betas=[0.0, 0.0], eps=1e-8)  # floats for
    c.D_opt_kwargs = dnnlib.EasyDict(class_name="torch.optim.Adam", betas=[0.0, 0.0], eps=1e-8)  # PyTorch 2.x
    c.loss_kwargs = dnnlib.EasyDict(class_name="training.loss.R3GANLoss")
    c.data_loader_kwargs = dnnlib.EasyDict(pin_memory=False, prefetch_factor=2, num_workers=1)
    c.training_set_kwargs, name = train.init_dataset_kwargs(data=a.data)
    c.training_set_kwargs.use_labels = False
    c.training_set_kwargs.xflip = False
    decay = a.decay_kimg * 1000
    c.ema_scheduler = {"base_value": 0, "final_value": a.ema_kimg * 1000, "total_nimg": decay}
    c.aug_scheduler = {"base_value": 0, "final_value": 0, "total_nimg": decay}
    c.lr_scheduler = {"base_value": a.lr, "final_value": a.lr / 4, "total_nimg": decay}
    c.gamma_scheduler = {"base_value": a.gamma, "final_value": a.gamma / 10, "total_nimg": decay}
    c.beta2_scheduler = {"base_value": 0.9, "final_value": 0.99, "total_nimg": decay}
    c.num_gpus, c.batch_size = 1, a.batch
    c.g_batch_gpu = c.d_batch_gpu = a.batch
    c.metrics, c.total_kimg, c.kimg_per_tick = [], a.kimg, a.tick
    c.image_snapshot_ticks = c.network_snapshot_ticks = a.snap
    c.random_seed = c.training_set_kwargs.random_seed = a.seed
    return f"{name}-r3gan-batch{a.batch}", c


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", choices=["stylegan2", "r3gan"], required=True)
    p.add_argument("--official", required=True, help="the official checkout, patched by patch_for_cpu.py")
    p.add_argument("--data", required=True, help="a ZIP from gan_dataset (RGB for r3gan, whose networks are RGB)")
    p.add_argument("--outdir", required=True)
    p.add_argument("--kimg", type=int, default=100, help="thousands of real images to train on")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--tick", type=float, default=1, help="kimg per progress line")
    p.add_argument("--snap", type=int, default=25, help="ticks per network snapshot")
    p.add_argument("--latent", type=int, default=64, help="z (and w) size")
    p.add_argument("--lr", type=float, help="stylegan2 0.0025; r3gan 2e-4 (decays to a quarter)")
    p.add_argument("--gamma", type=float, help="R1 gamma: stylegan2 0.1; r3gan R1 and R2 0.05 (decays to a tenth)")
    p.add_argument("--ema-kimg", type=float, help="G EMA half life: stylegan2 10; r3gan's final 2.5")
    p.add_argument("--r1-interval", type=int, default=16, help="stylegan2: D steps between R1 phases (1: every step)")
    p.add_argument("--mapping-layers", type=int, default=2, help="stylegan2")
    p.add_argument("--channel-base", type=int, default=512, help="stylegan2")
    p.add_argument("--channel-max", type=int, default=128, help="stylegan2")
    p.add_argument("--mbstd", type=int, default=4, help="stylegan2: minibatch std group size")
    p.add_argument("--width", type=int, default=32, help="r3gan: every stage's width")
    p.add_argument("--cardinality", type=int, default=4, help="r3gan: groups of the 3x3 convolutions")
    p.add_argument("--decay-kimg", type=float, default=48, help="r3gan: length of the schedules")
    a = p.parse_args()
    defaults = {"stylegan2": (0.0025, 0.1, 10), "r3gan": (2e-4, 0.05, 2.5)}[a.family]
    a.lr = a.lr if a.lr is not None else defaults[0]
    a.gamma = a.gamma if a.gamma is not None else defaults[1]
    a.ema_kimg = a.ema_kimg if a.ema_kimg is not None else defaults[2]
    a.data, a.outdir = os.path.abspath(a.data), os.path.abspath(a.outdir)
    sys.path.insert(0, os.path.abspath(a.official))
    os.chdir(a.official)  # the official code finds its custom-op sources relative to itself
    import train
    if a.family == "stylegan2":
        desc, args = stylegan2_args(a)
        args.run_dir = os.path.join(a.outdir, f"{desc}-seed{a.seed}")
        os.makedirs(args.run_dir, exist_ok=False)
        with tempfile.TemporaryDirectory() as temp_dir:
            train.subprocess_fn(rank=0, args=args, temp_dir=temp_dir)
    else:
        desc, c = r3gan_args(a)
        train.launch_training(c=c, desc=f"{desc}-seed{a.seed}", outdir=a.outdir, dry_run=False)


if __name__ == "__main__":
    main()
