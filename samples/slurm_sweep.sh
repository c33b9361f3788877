#!/usr/bin/env bash
# A gemm.wgmma sweep over a Slurm job array: each array task runs one shard of the points on its node, on every GPU
# the task was given (--gpus all: a worker per GPU, each taking the next point), into its own results store, and the
# last step merges the shards into one store that holds the whole sweep.
#   sbatch --array=0-3 --gpus=1 samples/slurm_sweep.sh          # four shards, one GPU each
#   sbatch --array=0-1 --gpus=8 samples/slurm_sweep.sh          # two shards, eight GPUs each
#   bash samples/slurm_sweep.sh merge                             # afterwards (or as a dependent job)
#   tilelab results --db sweeps/all.db --sweeps                   # the sweep, once, with every point
# Outside Slurm, SHARD=I/N bash samples/slurm_sweep.sh runs shard I of N (GPUS=0,1 picks the GPUs; default all).
#SBATCH --job-name=tilelab-sweep
#SBATCH --output=sweeps/%A_%a.log
set -euo pipefail
TILELAB=${TILELAB:-tilelab}
DIR=${DIR:-sweeps}
mkdir -p "$DIR"
if [ "${1:-}" = merge ]; then
  exec "$TILELAB" results merge "$DIR"/shard-*.db --into "$DIR/all.db"
fi
SHARD=${SHARD:-${SLURM_ARRAY_TASK_ID:-0}/${SLURM_ARRAY_TASK_COUNT:-1}}
# Slurm sets CUDA_VISIBLE_DEVICES to the GPUs it gave the task, so "all" is the task's own.
GPUS=${GPUS:-all}
# The same command on every node: the sweep's id (kernel, problems, space, fixed config) is the same in every shard.
"$TILELAB" sweep gemm.wgmma --problem M=4096,N=4096,K=4096 --problem M=8192,N=8192,K=8192 \
  --space 'block_N=128,256;num_stages=2,3,4,5,6;panel=4,8,16' --shard "$SHARD" --gpus "$GPUS" --plain \
  --db "$DIR/shard-${SHARD%/*}.db"
