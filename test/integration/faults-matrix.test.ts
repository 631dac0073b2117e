/**
 * Fault injection at the DynamoDB client, the whole matrix (`npm run test:faults`): every kind of
 * fault (test/support/faults.ts) at every DynamoDB call of every operation, once (then healed) or
 * for good, with the production clients' retries and their real back-off (patient request
 * timeouts, as the fast tier). The fast tier
 * (test/integration/faults.test.ts) sends one kind per class everywhere and every kind at one
 * operation, without the back-off wait; what must hold is the same (test/support/fault-operations.ts).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ops, runCases, useFaultWorld } from '../support/fault-operations.ts';
import { FAULT_KINDS, faultCases } from '../support/faults.ts';
import { createWorld, type World } from '../support/world.ts';

let world: World;
beforeAll(async () => {
  world = await createWorld('faults-matrix');
  await useFaultWorld(world);
});
afterAll(() => world?.drop());

/** The back-off delays overlap; DynamoDB Local is not swamped. */
const CONCURRENCY = 16;

describe('fault injection at the DynamoDB client, every kind everywhere', () => {
  let errors: ReturnType<typeof vi.spyOn>;
  beforeAll(() => {
    // 503s are logged for operators; keep the test output readable.
    errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  });
  afterAll(() => errors.mockRestore());

  it('every kind of fault at every call of every operation, healed or persistent', async () => {
    const all = faultCases(ops, FAULT_KINDS);
    const failures = await runCases(all, {
      retryDelay: 'production',
      // A real 2 s timeout of a loaded machine's DynamoDB Local took attempts the cases count on (3 of
      // 1,464 cases, in one run); the production timeouts: the never-answers test of the fast tier.
      requestTimeouts: 'patient',
      concurrency: CONCURRENCY,
    });
    expect(failures, `${failures.length} of ${all.length} cases failed`).toEqual([]);
    expect(all.length).toBeGreaterThanOrEqual(100);
  }, 600_000);
});
