/**
 * The long IAM suite (`npm run test:iam-mutations`): the ground truth for the fast tier's offline
 * check (iam.test.ts).
 *
 * For every element of every function's DynamoDB statements (an action, a leading-key pattern, an
 * index ARN), the function's whole scenario runs again, handlers and DynamoDB Local included, under
 * the policy without that element: some step must answer otherwise than under the full grant, with
 * the refusal seen by the IAM proxy, for that function only.
 *
 * And the offline method is proven here: each re-run must agree with what the offline judge
 * (`refusedWithout`, the proxy's evaluator over the requests recorded in one clean run) predicted:
 * a refusal offline if and only if one in the re-run, and the re-run's first refused request
 * (action on resource) among those the offline judge refused.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stackPolicies } from '../support/dynamodb.ts';
import {
  brokenSteps,
  cleanRun,
  createIamWorld,
  describeContext,
  elementsOf,
  names,
  refusedWithout,
  runUnder,
  type ScenarioRun,
} from '../support/iam-scenarios.ts';
import type { World } from '../support/world.ts';

/**
 * One world (a fresh table from the seed's snapshot, its OAuth tokens) per function: its clean run
 * and every re-run of its mutations share that table, and nothing else writes to it. On one table
 * shared by all 665 runs, every run left its items behind and the scenarios that read much of the
 * table grew with it: the relay's and the cap counters' Scans, the subscription clock renewing every
 * subscription that earlier runs made due (1,388 s in CI; see the commit).
 */
describe.each(names)('%s', (name) => {
  let world: World;
  /** Its clean run under its template policy: what the offline judge judges. */
  let clean: ScenarioRun | undefined;
  beforeAll(async () => {
    world = await createIamWorld(`iam-mutations-${name}`);
  });
  afterAll(() => world?.drop());

  it('runs clean under its template policy (the recording the offline judge reads)', async () => {
    clean = await cleanRun(world, stackPolicies(), name);
  });

  const cases = elementsOf(stackPolicies(), name).map((element) => [element.label, element] as const);
  it.each(cases)('without %s: its re-run fails, as the offline judge said', async (_, element) => {
    if (!clean) throw new Error(`${element.operation}: its scenario did not run clean (above)`);
    const predicted = refusedWithout(clean, element).map(describeContext);
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    let run: ScenarioRun;
    try {
      run = await runUnder(world, element.without, element.operation);
    } finally {
      log.mockRestore();
    }
    expect(
      brokenSteps(run.steps).length,
      'some step of the scenario must notice the missing grant',
    ).toBeGreaterThan(0);
    expect(run.denials.length).toBeGreaterThan(0);
    expect(
      new Set(run.denials.map((denial) => denial.functionName)),
      JSON.stringify(run.denials.map(({ functionName, context }) => ({ functionName, ...context }))),
    ).toEqual(new Set([element.operation]));

    // The offline judge agrees: it refused a recorded request, and the re-run's first refusal is one of those.
    expect(predicted.length > 0, 'the offline judge refuses a recorded request too').toBe(
      run.denials.length > 0,
    );
    expect(predicted).toContain(describeContext((run.denials[0] as ScenarioRun['denials'][number]).context));
  });
});
