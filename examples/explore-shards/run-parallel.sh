#!/usr/bin/env bash
# One exhaustive search as N shards run by GNU parallel (Debian's `parallel`), then their merge.
#
#   examples/explore-shards/run-parallel.sh N [explore arguments…]
#
# e.g. run-parallel.sh 4 --fences 2 --waiters 3 --signals 2
#      run-parallel.sh 8 scenario-1 --untimed
#
# Environment:
#   WDDM_FENCE      the command (default: wddm-fence; in this repository: node dist/cli.js)
#   SHARDS_DIR      where the reports go (default: a new temporary folder, kept: its path is printed)
#   PARALLEL_ARGS   more options for parallel, e.g. "--sshlogin 8/alice@host1,8/alice@host2"
#                   (then each host needs the same wddm-fence and the scenario file at the same path,
#                   and --return brings each report back: see README.md)
# The exit code is the merge's: 0 every invariant holds, 1 a counterexample, 2 bad arguments.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N [explore arguments…]   (N: the number of shards, at least 1)" >&2
  exit 2
fi
if ! command -v parallel >/dev/null 2>&1; then
  echo "$0: GNU parallel is not installed (Debian: apt-get install -y parallel)" >&2
  exit 77
fi
shards=$1
shift
read -r -a command <<< "${WDDM_FENCE:-wddm-fence}"
dir=${SHARDS_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/wddm-fence-shards.XXXXXX")}
mkdir -p "$dir"
echo "shard reports in $dir" >&2

# Each shard's exit code is its own part's (1 when it saw a violation): --halt never runs every
# shard whatever another one found; only a shard that could not run (exit 2) fails the search.
# shellcheck disable=SC2086
parallel --halt never ${PARALLEL_ARGS:-} \
  "${command[@]}" explore "$@" --shard {}/"$shards" --report "$dir"/shard-{}-of-"$shards".json '>' "$dir"/shard-{}.log ';' \
  'code=$?; [ $code -le 1 ] || { cat' "$dir"/shard-{}.log '>&2; exit $code; }' \
  ::: $(seq 1 "$shards") || { code=$?; [ $code -le 100 ] && echo "$0: $code shard(s) could not run (their logs are in $dir)" >&2; exit 2; }

# The merge's own output options (--json) come from the same arguments; the reports record the rest.
merge_options=()
for argument in "$@"; do [ "$argument" = --json ] && merge_options+=(--json); done
reports=()
for i in $(seq 1 "$shards"); do reports+=("$dir/shard-$i-of-$shards.json"); done
exec "${command[@]}" explore --merge "${reports[@]}" ${merge_options[@]+"${merge_options[@]}"}
