#!/usr/bin/env bash
# A Slurm batch array: one exhaustive search as 4 array tasks, then a merge job that waits for
# them all (afterany: a task whose part saw a violation exits 1, and the merge must still run).
#
#   sbatch slurm-array.sh            # submits the array and the merge; prints both job ids
#
# Each node needs wddm-fence on its PATH and the working folder on a shared file system.
#SBATCH --job-name=wddm-fence-shards
#SBATCH --array=1-4
#SBATCH --cpus-per-task=1
#SBATCH --output=shard-%a.log
set -uo pipefail
SHARDS=4
EXPLORE_ARGS=(scenario-1 --untimed)

if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
  echo "submit this with sbatch (it is one task of a batch array)" >&2
  exit 2
fi
if [ "$SLURM_ARRAY_TASK_ID" = 1 ]; then
  # the first task submits the merge, to run after every task of this array
  sbatch --dependency=afterany:"$SLURM_ARRAY_JOB_ID" --job-name=wddm-fence-merge --output=merge.log \
    --wrap "wddm-fence explore --merge shard-*-of-$SHARDS.json"
fi
wddm-fence explore "${EXPLORE_ARGS[@]}" --shard "$SLURM_ARRAY_TASK_ID/$SHARDS" --report "shard-$SLURM_ARRAY_TASK_ID-of-$SHARDS.json"
code=$?
[ $code -le 1 ] || exit $code   # 1 is this part's violation: the merge's to judge
