// The trace: every runtime call, OS step, DDI call (with its arguments),
// interrupt and GPU step, in order, with its virtual time. It is the
// project's main output, as readable text and as JSON. Arguments are
// normalised when recorded (bigint → decimal string), so the same seed and
// inputs give a byte-identical trace.

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

export class Trace {
  readonly events: TraceEvent[] = [];
  enabled = true;
  private listeners: ((e: TraceEvent) => void)[] = [];

  constructor(private clock: () => number) {}

  record(kind: TraceKind, actor: string, name: string, args: Record<string, unknown> = {}): TraceEvent | undefined {
    if (!this.enabled && kind !== 'fault') return undefined;
    const normal: Record<string, TraceValue> = {};
    for (const key of Object.keys(args)) if (args[key] !== undefined) normal[key] = normalise(args[key]);
    const event: TraceEvent = { seq: this.events.length, timeNs: this.clock(), kind, actor, name, args: normal };
    this.events.push(event);
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
