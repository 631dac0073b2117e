/**
 * The circuit per webhook endpoint (shared/webhooks/circuit.ts), on an injected clock; and the
 * in-process queue handing out messages as a fair queue does (shared/queue/local.ts). The pipeline
 * runs both in test/integration/webhook-isolation.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { LocalQueue } from '#shared/queue/local.ts';
import {
  CIRCUIT_MAX_OPEN_MS,
  CIRCUIT_MAX_WAIT_SECONDS,
  CIRCUIT_OPEN_MS,
  CIRCUIT_THRESHOLD,
  CircuitBreaker,
  circuitFailure,
  circuitWaitSeconds,
} from '#shared/webhooks/circuit.ts';

const clocked = () => {
  const clock = { now: 1_000_000 };
  return { clock, circuit: new CircuitBreaker({ now: () => clock.now }) };
};

describe('CircuitBreaker', () => {
  it(`stays closed below ${CIRCUIT_THRESHOLD} failures in a row; an answer clears the count`, () => {
    const { circuit } = clocked();
    for (let i = 1; i < CIRCUIT_THRESHOLD; i++) circuit.record('e', true, false);
    expect(circuit.admit('e')).toEqual({ send: true, probe: false });
    circuit.record('e', false, false);
    for (let i = 1; i < CIRCUIT_THRESHOLD; i++) circuit.record('e', true, false);
    expect(circuit.state('e')).toBe('closed');
  });

  it('opens at the threshold for CIRCUIT_OPEN_MS, for that endpoint only; then one probe at a time', () => {
    const { clock, circuit } = clocked();
    for (let i = 0; i < CIRCUIT_THRESHOLD; i++) circuit.record('e', true, false);
    expect(circuit.state('e')).toBe('open');
    expect(circuit.admit('e')).toEqual({ send: false, waitMs: CIRCUIT_OPEN_MS });
    expect(circuit.admit('other')).toEqual({ send: true, probe: false });
    clock.now += CIRCUIT_OPEN_MS - 1;
    expect(circuit.admit('e')).toEqual({ send: false, waitMs: 1 });
    clock.now += 1;
    expect(circuit.state('e')).toBe('half-open');
    expect(circuit.admit('e')).toEqual({ send: true, probe: true });
    const second = circuit.admit('e');
    expect(second.send).toBe(false);
    // A probe answered closes it.
    circuit.record('e', false, true);
    expect(circuit.state('e')).toBe('closed');
    expect(circuit.admit('e')).toEqual({ send: true, probe: false });
  });

  it('a failed probe opens it again for twice as long, up to CIRCUIT_MAX_OPEN_MS; a lost probe is replaced', () => {
    const { clock, circuit } = clocked();
    for (let i = 0; i < CIRCUIT_THRESHOLD; i++) circuit.record('e', true, false);
    let open = CIRCUIT_OPEN_MS;
    for (let round = 0; round < 8; round++) {
      clock.now += open;
      expect(circuit.admit('e')).toEqual({ send: true, probe: true });
      circuit.record('e', true, true);
      open = Math.min(open * 2, CIRCUIT_MAX_OPEN_MS);
      expect(circuit.admit('e')).toEqual({ send: false, waitMs: open });
    }
    expect(open).toBe(CIRCUIT_MAX_OPEN_MS);
    clock.now += open;
    expect(circuit.admit('e')).toMatchObject({ send: true, probe: true });
    // Its handling crashed: no outcome. A minute later the next message probes.
    expect(circuit.admit('e').send).toBe(false);
    clock.now += 60_000;
    expect(circuit.admit('e')).toEqual({ send: true, probe: true });
  });

  it('forgets the oldest endpoint past maxEndpoints (its circuit closes)', () => {
    const circuit = new CircuitBreaker({ threshold: 1, maxEndpoints: 2 });
    for (const id of ['a', 'b', 'c']) circuit.record(id, true, false);
    expect(['a', 'b', 'c'].map((id) => circuit.state(id))).toEqual(['closed', 'open', 'open']);
  });

  it('counts no answer and 5xx as failures, not other answers nor our own refusals', () => {
    expect(circuitFailure({ status: null, cause: 'timeout after 5000 ms' })).toBe(true);
    expect(circuitFailure({ status: null, cause: 'ECONNREFUSED' })).toBe(true);
    expect(circuitFailure({ status: 503, cause: null })).toBe(true);
    expect(circuitFailure({ status: 500, cause: null })).toBe(true);
    expect(circuitFailure({ status: 429, cause: null })).toBe(false);
    expect(circuitFailure({ status: 410, cause: null })).toBe(false);
    expect(circuitFailure({ status: 200, cause: null })).toBe(false);
    // `address refused`, `invalid URL`: no network fault.
    expect(circuitFailure({ status: null, cause: null })).toBe(false);
  });

  it('a held-back message waits until the end of the open period, plus up to half of it', () => {
    expect(circuitWaitSeconds(30_000, () => 0)).toBe(30);
    expect(circuitWaitSeconds(30_000, () => 1)).toBe(45);
    expect(circuitWaitSeconds(1, () => 0)).toBe(1);
    expect(CIRCUIT_MAX_WAIT_SECONDS).toBe(450);
  });
});

describe('the in-process queue as a fair queue', () => {
  it("hands out the tenant with the fewest messages in flight first: one tenant's backlog does not hold back another's", async () => {
    const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
    await queue.sendBatch(Array.from({ length: 30 }, (_, i) => ({ body: `a${i}`, groupId: 'org_a' })));
    const first = await queue.receive({ max: 10 });
    expect(first.map((m) => m.body)).toEqual(Array.from({ length: 10 }, (_, i) => `a${i}`));
    // Ten of A's in flight (a slow batch): B's, sent after thirty of A's, come next.
    await queue.sendBatch(['b0', 'b1'].map((body) => ({ body, groupId: 'org_b' })));
    const second = await queue.receive({ max: 3 });
    expect(second.map((m) => m.body)).toEqual(['b0', 'b1', 'a10']);
  });

  it('alternates between tenants with equal messages in flight, oldest first within each', async () => {
    const queue = new LocalQueue({ visibilityTimeoutSeconds: 30 });
    await queue.sendBatch(['a0', 'a1', 'a2'].map((body) => ({ body, groupId: 'org_a' })));
    await queue.sendBatch(['b0', 'b1'].map((body) => ({ body, groupId: 'org_b' })));
    const got = await queue.receive({ max: 10 });
    expect(got.map((m) => m.body)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2']);
  });
});
