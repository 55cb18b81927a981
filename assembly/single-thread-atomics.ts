// The `atomic` built-ins for the single-thread core build (build/core-nothreads.wasm).
//
// Runtimes without the WebAssembly threads feature (Debian's wasm2c 1.0.32,
// for one) cannot load a module that imports a shared memory or uses a
// single atomic instruction. The nothreads target (asconfig.json) compiles
// the very same sources with threads off and this file added, and
// `--use atomic=singleThreadAtomic` makes every `atomic.*` call in the core
// resolve to the namespace below: the core's code is not touched.
//
// With one thread and an unshared memory, nothing can run between a load and
// a store, so each read-modify-write below is as indivisible as the atomic
// instruction it stands for. Only the blocking wait cannot be kept:
//
//   atomic.wait    word ≠ expected → 1 (not-equal), as the instruction answers;
//                  word = expected → 2 (timed out) at once: no other thread
//                  exists to change it, so a wait of any finite length ends
//                  exactly so (without the sleep). An unlimited wait (timeout
//                  < 0) could never end: it aborts with a message instead.
//   atomic.notify  0 (there is nobody to wake), as on an unshared memory.
//
// The typed forms (i32.atomic.*, i64.atomic.*) are not aliased: the core does
// not use them, and if it ever does, the nothreads build stops with AS103
// (feature 'threads' is not enabled) rather than compile something wrong.
//
// What the single-thread build gives up is listed in docs/ABI.md.

@inline function plainLoad<T>(address: usize): T { return load<T>(address); }
@inline function plainStore<T>(address: usize, value: T): void { store<T>(address, value); }

@global namespace singleThreadAtomic {
  @inline export function load<T>(address: usize, immOffset: usize = 0): T {
    return plainLoad<T>(address + immOffset);
  }
  @inline export function store<T>(address: usize, value: T, immOffset: usize = 0): void {
    plainStore<T>(address + immOffset, value);
  }
  @inline export function add<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, old + value); return old;
  }
  @inline export function sub<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, old - value); return old;
  }
  @inline export function and<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, old & value); return old;
  }
  @inline export function or<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, old | value); return old;
  }
  @inline export function xor<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, old ^ value); return old;
  }
  @inline export function xchg<T>(address: usize, value: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset); plainStore<T>(address + immOffset, value); return old;
  }
  @inline export function cmpxchg<T>(address: usize, expected: T, replacement: T, immOffset: usize = 0): T {
    const old = plainLoad<T>(address + immOffset);
    if (old == expected) plainStore<T>(address + immOffset, replacement);
    return old;
  }
  /** 1 not-equal, 2 timed out (see the file comment); an unlimited wait aborts. */
  @inline export function wait<T>(address: usize, expected: T, timeoutNs: i64): i32 {
    if (plainLoad<T>(address) != expected) return 1;
    if (timeoutNs < 0) abort('single-thread core: an unlimited wait on a word no other thread can change would never end');
    return 2;
  }
  @inline export function notify(address: usize, count: i32): i32 { return 0; }
  @inline export function fence(): void {}
}
