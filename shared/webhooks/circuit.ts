/**
 * A circuit breaker per webhook endpoint, kept in the deliverer's memory (per container on AWS, per
 * process under `npm start`): an endpoint that keeps failing stops costing the deliverer its time.
 *
 * - **Closed** (the normal state): every attempt goes out. An attempt that got no answer (timeout,
 *   refused or reset connection, DNS) or a 5xx counts one failure; any other answer (2xx, 3xx, 4xx:
 *   the receiver is there and answers) clears the count.
 * - **Open**: after `threshold` failures in a row, for `openMs`: no attempt goes out; the deliverer
 *   puts the message back until the circuit's end without a network attempt (`shared/webhooks/deliver.ts`).
 * - **Half-open**: once that time is over, the first message is sent as a probe while the others are
 *   put back; a probe answered well closes the circuit, a failed one opens it again for twice as long
 *   (up to `maxOpenMs`).
 *
 * Each container learns on its own (no shared state, no extra reads or writes): with the deliverer's
 * 20 concurrent executions at most, a dead endpoint costs about one batch of attempts per container
 * (`threshold` failures, or the ten of a batch sent together) to open every container's circuit,
 * then one probe per container per open period.
 */

export interface CircuitOptions {
  /** Failures in a row that open the circuit. */
  threshold?: number;
  /** How long the circuit first stays open. */
  openMs?: number;
  /** The longest it stays open (a failed probe doubles the time, up to this). */
  maxOpenMs?: number;
  /** Endpoints remembered at most (the oldest is forgotten first: a closed circuit). */
  maxEndpoints?: number;
  now?: () => number;
}

export const CIRCUIT_THRESHOLD = 5;
export const CIRCUIT_OPEN_MS = 30_000;
export const CIRCUIT_MAX_OPEN_MS = 5 * 60_000;
const MAX_ENDPOINTS = 10_000;
/** How long the others wait while a probe is out (about one attempt's deadline). */
const PROBE_WAIT_MS = 10_000;
/** A probe out this long was lost (its handling crashed): the next message probes. */
const PROBE_LOST_MS = 60_000;

/** Whether an attempt may go out now: `send` (`probe`: the half-open circuit's one), or `wait` that long. */
export type Admission = { send: true; probe: boolean } | { send: false; waitMs: number };

interface State {
  /** Failures in a row. */
  failures: number;
  /** While open: when it becomes half-open (epoch ms); 0 while closed. */
  openUntil: number;
  /** The open period's length, doubled by each failed probe. */
  openMs: number;
  /** When the half-open circuit's probe went out (epoch ms); 0: none out. */
  probing: number;
}

export class CircuitBreaker {
  private readonly states = new Map<string, State>();
  private readonly threshold: number;
  private readonly openMs: number;
  private readonly maxOpenMs: number;
  private readonly maxEndpoints: number;
  private readonly now: () => number;

  constructor(options: CircuitOptions = {}) {
    this.threshold = options.threshold ?? CIRCUIT_THRESHOLD;
    this.openMs = options.openMs ?? CIRCUIT_OPEN_MS;
    this.maxOpenMs = options.maxOpenMs ?? CIRCUIT_MAX_OPEN_MS;
    this.maxEndpoints = options.maxEndpoints ?? MAX_ENDPOINTS;
    this.now = options.now ?? Date.now;
  }

  /** Whether an attempt to this endpoint may go out now. */
  admit(endpointId: string): Admission {
    const state = this.states.get(endpointId);
    if (!state || state.openUntil === 0) return { send: true, probe: false };
    const now = this.now();
    if (now < state.openUntil) return { send: false, waitMs: state.openUntil - now };
    // Half-open: one probe at a time; the others wait about as long as a probe can take. A probe
    // never recorded (its handling crashed) stops counting after PROBE_LOST_MS.
    if (state.probing !== 0 && now - state.probing < PROBE_LOST_MS) {
      return { send: false, waitMs: PROBE_WAIT_MS };
    }
    state.probing = now;
    return { send: true, probe: true };
  }

  /** What an attempt that went out got: `failed` is no answer or a 5xx. */
  record(endpointId: string, failed: boolean, probe: boolean): void {
    if (!failed) {
      this.states.delete(endpointId);
      return;
    }
    const state = this.states.get(endpointId) ?? this.remember(endpointId);
    state.failures += 1;
    if (probe) {
      state.probing = 0;
      state.openMs = Math.min(state.openMs * 2, this.maxOpenMs);
      state.openUntil = this.now() + state.openMs;
    } else if (state.openUntil === 0 && state.failures >= this.threshold) {
      state.openUntil = this.now() + state.openMs;
    }
  }

  /** The circuit's state, for logs and tests. */
  state(endpointId: string): 'closed' | 'open' | 'half-open' {
    const state = this.states.get(endpointId);
    if (!state || state.openUntil === 0) return 'closed';
    return this.now() < state.openUntil ? 'open' : 'half-open';
  }

  private remember(endpointId: string): State {
    if (this.states.size >= this.maxEndpoints) {
      const oldest = this.states.keys().next().value;
      if (oldest !== undefined) this.states.delete(oldest);
    }
    const state: State = { failures: 0, openUntil: 0, openMs: this.openMs, probing: 0 };
    this.states.set(endpointId, state);
    return state;
  }
}

/**
 * How long a message the circuit kept back waits before it comes back, in seconds: until the
 * circuit's end, plus up to half of it at random, so that the messages held back together do not
 * all come back at once. At most `CIRCUIT_MAX_WAIT_SECONDS`.
 */
export const circuitWaitSeconds = (waitMs: number, random: () => number = Math.random): number =>
  Math.ceil((waitMs / 1000) * (1 + random() / 2));
export const CIRCUIT_MAX_WAIT_SECONDS = circuitWaitSeconds(CIRCUIT_MAX_OPEN_MS, () => 1);

/** Whether an attempt's outcome counts against its endpoint's circuit: no answer, or a 5xx. */
export const circuitFailure = (attempt: { status: number | null; cause: string | null }): boolean =>
  attempt.status === null ? attempt.cause !== null : attempt.status >= 500;
