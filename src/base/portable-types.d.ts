// The core's scalar types as the host sees them, for src/base/portable.ts alone (the file both compilers
// compile: AssemblyScript has these types built in). Host code uses number and boolean.
declare type u32 = number;
declare type f64 = number;
declare type bool = boolean;
