// The trace: every runtime call, OS step, DDI call (with its arguments),
// interrupt and GPU step, in order, with its virtual time. It is the
// project's main output, as readable text and as JSON. Arguments are
// normalised when recorded (bigint → decimal string), so the same seed and
// inputs give a byte-identical trace.
//
// Memory is bounded: the trace keeps the last `capacity` events in a ring
// (machine option limits.traceEvents) and counts the older ones it dropped
// (`dropped`; the summary reports them). A listener (`onEvent`) sees every
// event as it is recorded, so a long run can stream all of them to a file
// (`wddm-fence run --trace-events`) while memory holds only the ring.
//
//   ring (capacity 5), 7 events recorded:   [e5 e6 e2 e3 e4]
//                                                   ▲ head: the oldest kept
//   events → [e2 e3 e4 e5 e6]   recorded 7, dropped 2 (e0, e1)

export type TraceKind =
  | 'machine' // machine and adapter lifecycle
  | 'runtime' // D3DKMT calls a process makes
  | 'umd'     // user-mode driver work the OS does not see (ring writes)
  | 'os'      // Dxgkrnl / VidSch / VidMm steps
  | 'ddi'     // OS → driver calls, with their DXGKARG_* arguments
  | 'cb'      // driver → OS callbacks
  | 'gpu'     // engine steps
  | 'cmp'     // context management processor decisions
  | 'interrupt'
  | 'cpu'     // simulated CPU threads
  | 'fault'   // bug checks, contract violations, device removal
  | 'explain';// narrative lines (scenario tables)

export type TraceValue = string | number | boolean | null | TraceValue[];
export interface TraceEvent {
  seq: number;
  timeNs: number;
  kind: TraceKind;
  /** Who acted: "app", "os", "gpu0", "gpu0/engine0", "cpu:waiter"… */
  actor: string;
  name: string;
  args: Record<string, TraceValue>;
}

function normalise(value: unknown): TraceValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' || typeof value === 'string' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(normalise);
  return String(value);
}

const HEX_KEYS = /^(h[A-Z]|.*(Va|Address|Phys|Handle|Handles)$|pSignaledNativeFenceArray$|NativeFenceArray$|ObjectHandleArray$)/;

/** Events a trace keeps by default (machine option limits.traceEvents). */
export const DEFAULT_TRACE_CAPACITY = 1 << 18;
/** The most a trace may keep (limits.traceEvents). */
export const MAX_TRACE_CAPACITY = 1 << 24;

export class Trace {
  enabled = true;
  /** Events kept: once full, each new event replaces the oldest. */
  readonly capacity: number;
  private readonly ring: TraceEvent[] = [];
  /** Index in `ring` of the oldest kept event (0 until the ring has wrapped). */
  private head = 0;
  private count = 0;
  /** `events` in order, built once per change after the ring wrapped. */
  private ordered: TraceEvent[] | undefined;
  private listeners: ((e: TraceEvent) => void)[] = [];

  constructor(private clock: () => number, capacity = DEFAULT_TRACE_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_TRACE_CAPACITY) {
      throw new RangeError(`trace capacity is ${capacity}; expected an integer from 1 to ${MAX_TRACE_CAPACITY}`);
    }
    this.capacity = capacity;
  }

  /** The kept events, oldest first (the last `capacity` recorded). */
  get events(): TraceEvent[] {
    if (this.head === 0) return this.ring;
    return (this.ordered ??= this.ring.slice(this.head).concat(this.ring.slice(0, this.head)));
  }
  /** Events recorded since the machine was made (kept or dropped). */
  get recorded(): number { return this.count; }
  /** The oldest events the ring let go (recorded − kept). */
  get dropped(): number { return this.count - this.ring.length; }

  record(kind: TraceKind, actor: string, name: string, args: Record<string, unknown> = {}): TraceEvent | undefined {
    if (!this.enabled && kind !== 'fault') return undefined;
    const normal: Record<string, TraceValue> = {};
    for (const key of Object.keys(args)) if (args[key] !== undefined) normal[key] = normalise(args[key]);
    const event: TraceEvent = { seq: this.count++, timeNs: this.clock(), kind, actor, name, args: normal };
    if (this.ring.length < this.capacity) this.ring.push(event);
    else {
      this.ring[this.head] = event;
      this.head = this.head + 1 === this.capacity ? 0 : this.head + 1;
      // head back at 0 means the ring is in order again: `events` is the ring itself
      this.ordered = undefined;
    }
    for (const listener of this.listeners) listener(event);
    return event;
  }

  onEvent(listener: (e: TraceEvent) => void): () => void {
    this.listeners.push(listener);
    return () => { this.listeners = this.listeners.filter((l) => l !== listener); };
  }

  /** Events matching a kind and/or a name (substring) — handy in tests. */
  find(filter: { kind?: TraceKind; name?: string | RegExp; actor?: string }): TraceEvent[] {
    return this.events.filter((e) =>
      (!filter.kind || e.kind === filter.kind) &&
      (!filter.actor || e.actor === filter.actor) &&
      (!filter.name || (typeof filter.name === 'string' ? e.name === filter.name : filter.name.test(e.name))));
  }

  static formatArg(key: string, value: TraceValue): string {
    if (typeof value === 'number' && HEX_KEYS.test(key) && Number.isInteger(value)) return `0x${value.toString(16)}`;
    if (Array.isArray(value)) return `[${value.map((v) => Trace.formatArg(key, v)).join(',')}]`;
    if (typeof value === 'string' && HEX_KEYS.test(key) && /^\d+$/.test(value)) return `0x${BigInt(value).toString(16)}`;
    return typeof value === 'string' && /\s/.test(value) ? JSON.stringify(value) : String(value);
  }

  static formatEvent(e: TraceEvent): string {
    const time = (e.timeNs / 1000).toFixed(3).padStart(12);
    const args = Object.keys(e.args).map((k) => `${k}=${Trace.formatArg(k, e.args[k])}`).join(' ');
    return `${time}us  ${e.kind.padEnd(9)} ${e.actor.padEnd(14)} ${e.name}${args ? ' ' + args : ''}`;
  }

  text(filter?: (e: TraceEvent) => boolean): string {
    const lines = ['     time        kind      actor          event'];
    for (const e of this.events) if (!filter || filter(e)) lines.push(Trace.formatEvent(e));
    return lines.join('\n') + '\n';
  }

  json(): TraceEvent[] { return this.events; }
}
