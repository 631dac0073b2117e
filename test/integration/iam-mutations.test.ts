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
  type FunctionName,
  names,
  refusedWithout,
  runUnder,
  type ScenarioRun,
} from '../support/iam-scenarios.ts';
import type { World } from '../support/world.ts';

let shared: World;
beforeAll(async () => {
  shared = await createIamWorld('iam-mutations');
});
afterAll(() => shared?.drop());

/** Each function's clean run under its template policy: what the offline judge judges. */
const recorded = new Map<FunctionName, ScenarioRun>();

describe('each function runs clean under its template policy (the recording the offline judge reads)', () => {
  it.each(names)('%s', async (name) => {
    recorded.set(name, await cleanRun(shared, stackPolicies(), name));
  });
});

describe('without any one element of its DynamoDB statements, its re-run fails, as the offline judge said', () => {
  const cases = names.flatMap((name) =>
    elementsOf(stackPolicies(), name).map((element) => [`${name}: ${element.label}`, element] as const),
  );

  it.each(cases)('%s', async (_, element) => {
    const clean = recorded.get(element.operation);
    if (!clean) throw new Error(`${element.operation}: its scenario did not run clean (above)`);
    const predicted = refusedWithout(clean, element).map(describeContext);
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    let run: ScenarioRun;
    try {
      run = await runUnder(shared, element.without, element.operation);
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
