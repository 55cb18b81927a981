#!/usr/bin/env bash
# Builds the C drivers of this folder into WebAssembly driver modules, with Debian's clang and lld:
#
#   bash examples/drivers/c/build.sh            → reference.wasm, template.wasm and broken/*.wasm, each beside its .c
#   bash examples/drivers/c/build.sh FILE.c …   → FILE.wasm beside each FILE.c (linked with wddm_fence_runtime.c)
#
# Objects go to examples/drivers/c/build/. The .wasm files are build outputs (.gitignore): the tests run this
# script when clang is present.
#
# Each driver is a position-independent wasm32 module (-fPIC, wasm-ld --experimental-pic -pie) that imports
# the machine's shared memory: the loader places its globals, stack and pool in the region the machine's
# memory plan reserves for it (wddm_fence_driver.h, docs/MEMORY.md). clang 14 makes position-independent
# wasm only for the emscripten triple; nothing of emscripten is used (no libc: -nostdlib, -ffreestanding).
#
# Needs: clang and wasm-ld (apt-get install -y clang lld; CLANG=… WASM_LD=… name others). Without them it
# says what is missing and exits 77.
# It rebuilds only what is older than its sources.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/build"

find_tool() { # the first of the names that exists
  local name
  for name in "$@"; do command -v "$name" >/dev/null 2>&1 && { command -v "$name"; return 0; }; done
  return 1
}
# CLANG / WASM_LD name the tools to use; otherwise Debian's names, unversioned or versioned.
if [ -n "${CLANG:-}" ]; then clang="$(find_tool "$CLANG" || true)"; else clang="$(find_tool clang clang-16 clang-15 clang-14 || true)"; fi
if [ -n "${WASM_LD:-}" ]; then wasm_ld="$(find_tool "$WASM_LD" || true)"; else wasm_ld="$(find_tool wasm-ld wasm-ld-16 wasm-ld-15 wasm-ld-14 || true)"; fi
missing=()
[ -n "$clang" ] || missing+=("clang${CLANG:+ ($CLANG)} (Debian package clang)")
[ -n "$wasm_ld" ] || missing+=("wasm-ld${WASM_LD:+ ($WASM_LD)} (Debian package lld)")
if [ ${#missing[@]} -eq 0 ] && ! "$clang" --print-targets 2>/dev/null | grep -q 'wasm32'; then
  missing+=("a clang with the WebAssembly target ($clang has none)")
fi
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "c-drivers: cannot build the C drivers; missing:"
    printf '  - %s\n' "${missing[@]}"
    echo "c-drivers: install them with: apt-get install -y clang lld"
  } >&2
  exit 77
fi

cflags=(--target=wasm32-unknown-emscripten -fPIC -O2 -std=c11 -ffreestanding -nostdlib -nostdinc
  -isystem "$("$clang" -print-resource-dir)/include" -I"$here"
  -matomics -mbulk-memory -mno-simd128 -fno-builtin -Wall -Wextra -Werror -Wno-unused-parameter)
ldflags=(--experimental-pic -pie --import-memory --shared-memory --max-memory=2147483648 --no-entry
  --no-export-dynamic)

stale() { # a target is stale when it is missing or older than any of the files after it
  local target="$1"; shift
  [ -e "$target" ] || return 0
  local source
  for source in "$@"; do [ "$source" -nt "$target" ] && return 0; done
  return 1
}

mkdir -p "$out"
runtime_o="$out/wddm_fence_runtime.o"
if stale "$runtime_o" "$here/wddm_fence_runtime.c" "$here/wddm_fence_driver.h"; then
  "$clang" "${cflags[@]}" -c "$here/wddm_fence_runtime.c" -o "$runtime_o"
fi

# One driver: FILE.c → FILE.wasm, linked with wddm_fence_runtime.c. A file whose first lines say
#   "wddm-fence: link with reference.c"              is linked with the reference driver, whose extension points
#                                                   (weak functions) it replaces: examples/drivers/c/broken/;
#   "wddm-fence: link with reference.c as a library" is linked with reference.c built with -DWDDM_REFERENCE_LIBRARY:
#                                                   its DDIs are functions (Reference<DDI>) the file's exports call
#                                                   (template.c).
compile() { # source, object, extra flags…
  local source="$1" object="$2"; shift 2
  if stale "$object" "$source" "$here/wddm_fence_driver.h"; then "$clang" "${cflags[@]}" "$@" -c "$source" -o "$object"; fi
}
build_driver() { # file.c
  local file="$1" wasm="${1%.c}.wasm" name
  name="$(basename "${file%.c}")"
  local objects=("$out/$name.o")
  compile "$file" "$out/$name.o"
  if head -n 5 "$file" | grep -q 'wddm-fence: link with reference.c as a library'; then
    compile "$here/reference.c" "$out/reference-library.o" -DWDDM_REFERENCE_LIBRARY
    objects+=("$out/reference-library.o")
  elif head -n 5 "$file" | grep -q 'wddm-fence: link with reference.c'; then
    compile "$here/reference.c" "$out/reference.o"
    objects+=("$out/reference.o")
  fi
  if stale "$wasm" "${objects[@]}" "$runtime_o"; then
    "$wasm_ld" "${ldflags[@]}" "${objects[@]}" "$runtime_o" -o "$wasm"
    echo "c-drivers: built $wasm" >&2
  fi
}
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }

if [ $# -gt 0 ]; then
  for file in "$@"; do
    [ -f "$file" ] || { echo "c-drivers: no file $file" >&2; exit 2; }
    build_driver "$(absolute "$file")"
  done
  exit 0
fi
for file in "$here/reference.c" "$here/template.c" "$here"/broken/*.c; do build_driver "$file"; done
