// Finding the non-zero words of linear memory fast, for the state key
// (src/explore/state.ts): linear memory is mostly zeros (437 of 32,768 covered
// words on a 2-engine machine mid-search), so the key's cost in memory is the
// scan for the few that are not, once per key.
//
//   scan(fromByte, toByte)   an address `at` in [fromByte, toByte] with every
//                            word in [fromByte, at) zero, and a non-zero word
//                            in the 64 bytes from `at` unless at = toByte: the
//                            start of the first 64-byte step that holds one
//
// It is a WebAssembly function over the machine's own memory (imported: a view,
// no copy), reading 64 bytes a step as four 128-bit loads OR'ed together
// (v128.any_true), about 4x the speed of the same test in JavaScript on 32-bit
// words. The module is written out here byte by byte (23 instructions; the
// text form is beside each line). Where WebAssembly SIMD is missing (an old
// browser) the same contract is met in JavaScript, eight words a step.
//
// The caller reads from `at` word by word and asks again past a run of 16
// zeros: it meets exactly the non-zero words, in order, whichever scan runs.

/** (fromByte, toByte): multiples of 4, toByte at most the memory's size; see the header. */
export type NextNonZero = (fromByte: number, toByte: number) => number;

/** The scan over `memory` (see the header): WebAssembly SIMD when it runs here, else JavaScript. */
export function zeroScan(memory: WebAssembly.Memory): NextNonZero {
  const shared = typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;
  const bytes = moduleBytes(shared);
  if (WebAssembly.validate(bytes)) {
    try {
      return new WebAssembly.Instance(new WebAssembly.Module(bytes), { m: { memory } }).exports.scan as NextNonZero;
    } catch { /* a host that refuses to compile here: the JavaScript scan below */ }
  }
  const words = new Int32Array(memory.buffer);
  return (fromByte, toByte) => {
    let i = fromByte >>> 2;
    const end = toByte >>> 2;
    for (; i + 8 <= end; i += 8) if ((words[i] | words[i + 1] | words[i + 2] | words[i + 3] | words[i + 4] | words[i + 5] | words[i + 6] | words[i + 7]) !== 0) return i << 2;
    for (; i < end; i++) if (words[i] !== 0) return i << 2;
    return toByte;
  };
}

/** The module: one function `scan`, over an imported memory "m"."memory" (shared when the machine's is). */
function moduleBytes(shared: boolean): Uint8Array<ArrayBuffer> {
  const body = [
    0x00, //                                            no locals: 0 = at, 1 = end
    0x02, 0x40, //                                      block (the 64-byte steps)
    0x03, 0x40, //                                        loop
    0x20, 0x00, 0x41, 0xc0, 0x00, 0x6a, //                  at + 64
    0x20, 0x01, 0x4b, 0x0d, 0x01, //                        > end: br_if out of the block
    0x20, 0x00, 0xfd, 0x00, 0x00, 0x00, //                  v128.load at
    0x20, 0x00, 0xfd, 0x00, 0x00, 0x10, //                  v128.load at + 16
    0xfd, 0x50, //                                          v128.or
    0x20, 0x00, 0xfd, 0x00, 0x00, 0x20, //                  v128.load at + 32
    0x20, 0x00, 0xfd, 0x00, 0x00, 0x30, //                  v128.load at + 48
    0xfd, 0x50, 0xfd, 0x50, //                              v128.or, v128.or
    0xfd, 0x53, //                                          v128.any_true
    0x04, 0x40, 0x20, 0x00, 0x0f, 0x0b, //                  if: return at
    0x20, 0x00, 0x41, 0xc0, 0x00, 0x6a, 0x21, 0x00, //      at += 64
    0x0c, 0x00, //                                          br to the loop
    0x0b, 0x0b, //                                        end, end
    0x02, 0x40, 0x03, 0x40, //                          block, loop (the last words, one at a time)
    0x20, 0x00, 0x20, 0x01, 0x4f, 0x0d, 0x01, //          at >= end: br_if out
    0x20, 0x00, 0x28, 0x02, 0x00, //                      i32.load at
    0x04, 0x40, 0x20, 0x00, 0x0f, 0x0b, //                if: return at
    0x20, 0x00, 0x41, 0x04, 0x6a, 0x21, 0x00, //          at += 4
    0x0c, 0x00, 0x0b, 0x0b, //                            br to the loop; end, end
    0x20, 0x01, //                                      end
    0x0b, //                                            end of the function
  ];
  const section = (id: number, content: number[]): number[] => [id, ...leb(content.length), ...content];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, //  \0asm, version 1
    ...section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]), // type 0: (i32, i32) -> i32
    // import "m" "memory": a memory of at least 0 pages; shared ones have a maximum (flags 3: at most 65,536 pages)
    ...section(2, [0x01, 0x01, 0x6d, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, ...(shared ? [0x03, 0x00, 0x80, 0x80, 0x04] : [0x00, 0x00])]),
    ...section(3, [0x01, 0x00]), //                     function 0 has type 0
    ...section(7, [0x01, 0x04, 0x73, 0x63, 0x61, 0x6e, 0x00, 0x00]), // export "scan" = function 0
    ...section(10, [0x01, ...leb(body.length), ...body]), // its code
  ]);
}

/** An unsigned LEB128 number. */
function leb(n: number): number[] {
  const out: number[] = [];
  do { let byte = n & 0x7f; n >>>= 7; if (n !== 0) byte |= 0x80; out.push(byte); } while (n !== 0);
  return out;
}
