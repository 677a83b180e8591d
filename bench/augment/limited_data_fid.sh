#!/bin/bash
# Limited-data comparison (docs/augmentation.md, "Limited data"): trains one config in segments
# of EVERY steps up to STEPS, each resumed exactly from the last checkpoint, and after each
# segment prints the domain FID of 5000 samples of that checkpoint against REAL (the first 5000
# Fashion-MNIST test images at 32x32 in [-1, 1], as .npy). One thread, so runs side by side
# compare in CPU seconds, which go to OUT/NAME.cpu (user, sys per process).
#
# usage: bench/augment/limited_data_fid.sh BIN_DIR NETWORK.json REAL.npy OUT NAME CONFIG EVERY STEPS [--set k=v ...]
set -euo pipefail
bin=$1; net=$2; real=$3; out=$4; name=$5; config=$6; every=$7; steps=$8; shift 8
export GANTRY_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
mkdir -p "$out"
dir=$out/$name
for ((s = every; s <= steps; s += every)); do
  if [ ! -f "$dir/checkpoints/ckpt-$s.safetensors" ]; then
    /usr/bin/time -a -o "$out/$name.cpu" -f "train $s %U %S" "$bin/gan_train" --config "$config" --model-dir "$dir" \
      --steps $s --set train.threads=1 --set hooks.sample_every_steps=0 --set hooks.log_every_steps=250 \
      --set hooks.save_summary_steps=10 --set hooks.save_checkpoints_steps=$every --set hooks.keep_checkpoint_max=0 \
      "$@" >> "$out/$name.log" 2>&1
  fi
  # the same noise (seed 1) at every checkpoint and in every run
  /usr/bin/time -a -o "$out/$name.cpu" -f "sample $s %U %S" "$bin/gan_sample" --model-dir "$dir" --step $s \
    --num 5000 --npy "$out/$name-$s.npy" --seed 1 > /dev/null 2>&1
  fid=$(/usr/bin/time -a -o "$out/$name.cpu" -f "eval $s %U %S" "$bin/gan_eval" --real "$real" --fake "$out/$name-$s.npy" \
    --network "$net" --metrics fid --num 5000 --jsonl - 2>/dev/null | tail -1)
  rm -f "$out/$name-$s.npy"
  echo "$name step $s: $fid" | tee -a "$out/$name.fid"
done
