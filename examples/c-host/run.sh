#!/usr/bin/env bash
# Builds the C host and runs it: build/core-nothreads.wasm → wasm2c → C,
# compiled with the wasm2c runtime Debian's wabt package ships, linked with
# host.c and core-binding.c. No JavaScript engine runs the core (Node only
# compiles the AssemblyScript sources into the .wasm, if it is missing).
#
#   bash examples/c-host/run.sh [host options]      (see host.c; none needed)
#
# Needs: wasm2c and its runtime (apt-get install -y wabt), a C compiler
# (apt-get install -y gcc). Without them it says what is missing and exits 77.
# Build steps go to stderr; stdout is the host's output alone.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/build/c-host"
wasm="$root/build/core-nothreads.wasm"
runtime="${WASM2C_RUNTIME_DIR:-/usr/share/wabt/wasm2c}"
cc="${CC:-cc}"

missing=()
command -v wasm2c >/dev/null 2>&1 || missing+=("wasm2c (Debian package wabt)")
[ -f "$runtime/wasm-rt-impl.c" ] || missing+=("the wasm2c runtime $runtime/wasm-rt-impl.c (Debian package wabt)")
command -v "$cc" >/dev/null 2>&1 || missing+=("a C compiler '$cc' (Debian package gcc)")
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "c-host: cannot build the C host; missing:"
    printf '  - %s\n' "${missing[@]}"
    echo "c-host: install them with: apt-get install -y wabt gcc"
  } >&2
  exit 77
fi

# A file is stale when it is missing or older than any of the files after it.
stale() {
  local target="$1"; shift
  [ -e "$target" ] || return 0
  local source
  for source in "$@"; do [ "$source" -nt "$target" ] && return 0; done
  return 1
}

mkdir -p "$out"
if [ ! -e "$wasm" ] || [ -n "$(find "$root/assembly" "$root/asconfig.json" -newer "$wasm" -print -quit)" ]; then
  echo "c-host: building the core (node scripts/build-core.mjs)" >&2
  node "$root/scripts/build-core.mjs" >&2
fi
if stale "$out/core.c" "$wasm"; then
  echo "c-host: wasm2c $(wasm2c --version) build/core-nothreads.wasm -> build/c-host/core.c" >&2
  wasm2c -n core "$wasm" -o "$out/core.c"
  if ! grep -q 'Z_core_instantiate' "$out/core.h"; then
    rm -f "$out/core.c" "$out/core.h"
    echo "c-host: this wasm2c ($(wasm2c --version)) names the module's C API differently from wasm2c 1.0.32, which core-binding.c is written for; core-binding.c is the one file to port" >&2
    exit 3
  fi
fi
flags=(-O1 -std=gnu11 -I"$out" -I"$runtime")
# Generated code and the runtime compile without warnings switched on: they are not this project's code.
stale "$out/core.o" "$out/core.c" && "$cc" "${flags[@]}" -w -c "$out/core.c" -o "$out/core.o"
stale "$out/wasm-rt-impl.o" "$runtime/wasm-rt-impl.c" && "$cc" "${flags[@]}" -w -c "$runtime/wasm-rt-impl.c" -o "$out/wasm-rt-impl.o"
if stale "$out/host" "$here/host.c" "$here/core-binding.c" "$here/core-binding.h" "$out/core.o" "$out/wasm-rt-impl.o"; then
  "$cc" "${flags[@]}" -Wall -Wextra "$here/host.c" "$here/core-binding.c" "$out/core.o" "$out/wasm-rt-impl.o" -lm -o "$out/host"
fi
exec "$out/host" "$@"
