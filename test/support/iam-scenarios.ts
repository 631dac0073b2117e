/**
 * The IAM suites' scenarios, shared by the fast check (test/integration/iam.test.ts) and the long
 * mutation suite (test/integration/iam-mutations.test.ts, `npm run test:iam-mutations`).
 *
 * - A scenario per function with a table grant (in its card) walks every path of it that touches the table
 *   (success, idempotent replay, a failure that releases its key, every sort order) and says, step
 *   by step, what its full grant must make it answer.
 * - `elementsOf()` lists every element of a function's DynamoDB statements (an action, a leading-key
 *   pattern, an index ARN) with the policy that lacks it.
 * - `recordScenario()` runs a scenario once under the template policy and keeps every request
 *   context the IAM proxy judged; `offlineRefusals()` judges those contexts again, without DynamoDB
 *   and without the handlers, under a policy lacking one element (the proxy's own evaluator and
 *   statement resolution, `resolvedStatements()` + `decide()`).
 *
 * Why judging recorded requests stands in for a re-run: up to the first request a mutated policy
 * refuses, a re-run sends the same requests and gets the same answers, so it reaches that request
 * and is refused too; if the mutated policy refuses none of them, the re-run is the recorded run.
 * The long suite re-runs every mutation and checks that it agrees, request for request.
 *
 * The scenarios are in the cards (test/cards/<function>.ts, slot `iam`), one per function: a new
 * operation, scheduled or pipeline function has none until its card is written (test/unit/cards.test.ts
 * and the suites refuse it), and its statements are then mutated like the others'.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { decide, type RequestContext } from '#scripts/local/iam/evaluate.ts';
import type { RawStatement, StackPolicies } from '#scripts/local/iam/policy.ts';
import { resolvedStatements, type Verdict } from '#scripts/local/iam/proxy.ts';
import { forgetAllListMarkers } from '#shared/data/list-markers.ts';
import { indexNames } from '#shared/data/table.ts';
import { operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';
import { cardOf } from '#test/cards/index.ts';
import { LOCAL_REGION, stackPolicies } from './dynamodb.ts';
import {
  endpointsBackToSeed,
  type FunctionName,
  nextRun,
  oauth,
  type Scenario,
  type Step,
  step,
} from './iam-kit.ts';
import { issueTokens, registerClient as registerOAuthClient } from './oauth.ts';
import { createWorld, UNREACHABLE_QUOTAS, underPolicies, type World } from './world.ts';

export type { FunctionName, Scenario, Step } from './iam-kit.ts';
export { oauth } from './iam-kit.ts';

/** A function's scenario, from its card (test/cards/<function>.ts). */
const scenarioOf = async (name: FunctionName): Promise<Scenario> => (await cardOf(name)).iam;

/** One element of one DynamoDB statement of one function's policy, and the policy without it. */
export interface Element {
  operation: FunctionName;
  label: string;
  without: StackPolicies;
}

export const asList = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);
export const LEADING_KEYS = ['ForAllValues:StringLike', 'dynamodb:LeadingKeys'] as const;
const STREAM_ACTIONS = [
  'dynamodb:DescribeStream',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:ListStreams',
];

/** The resource's own words: an index name for an index ARN, else `the table`. */
function describeResource(resource: unknown): string {
  const text = JSON.stringify(resource);
  const index = Object.values(indexNames).find((name) => new RegExp(`/index/${name}"`).test(text));
  return index === undefined ? 'the table' : `index ${index}`;
}

/**
 * Every element whose removal must break the operation: each action, and each action for each of its
 * leading keys and each of its resources. CDK merges statements that differ only in their actions, so
 * an action is taken out of a shared statement into one of its own before its key or resource goes:
 * `ConditionCheckItem for ORG#*` is tested even when it shares a statement with `BatchGetItem`.
 */
export function elementsOf(policies: StackPolicies, operation: FunctionName): Element[] {
  const statements = policies.functions[operation]?.statements ?? [];
  const elements: Element[] = [];
  const replacing = (index: number, replacement: RawStatement[]): StackPolicies => {
    const copy = structuredClone(policies);
    (copy.functions[operation] as { statements: RawStatement[] }).statements.splice(index, 1, ...replacement);
    return copy;
  };
  for (const [index, statement] of statements.entries()) {
    const actions = asList(statement.Action ?? []);
    if (statement.Effect !== 'Allow' || !actions.every((action) => action.startsWith('dynamodb:'))) continue;
    // The relay's stream reads are made by its event source mapping (AWS's poller, under the
    // function's role), never by its code: no scenario can show them, so none is mutated here
    // (test/infra/webhooks.test.ts pins them to the table's stream).
    if (actions.every((action) => STREAM_ACTIONS.includes(action))) continue;
    const resources = asList(statement.Resource);
    const keys = asList(statement.Condition?.[LEADING_KEYS[0]]?.[LEADING_KEYS[1]] ?? []);
    const on = [...new Set(resources.map(describeResource))].join(', ');
    for (const action of actions) {
      const others: RawStatement[] =
        actions.length > 1 ? [{ ...statement, Action: actions.filter((a) => a !== action) }] : [];
      const alone = (change: Partial<RawStatement>): RawStatement[] => [
        ...others,
        { ...structuredClone(statement), Action: action, ...change },
      ];
      elements.push({
        operation,
        label: `${action} (${keys.join(' ')} on ${on})`,
        without: replacing(index, others),
      });
      if (keys.length > 1) {
        for (const key of keys) {
          const condition = {
            ...statement.Condition,
            [LEADING_KEYS[0]]: { [LEADING_KEYS[1]]: keys.filter((k) => k !== key) },
          };
          elements.push({
            operation,
            label: `${action} for ${key} (on ${on})`,
            without: replacing(index, alone({ Condition: condition })),
          });
        }
      }
      if (resources.length > 1) {
        for (const [position, resource] of resources.entries()) {
          elements.push({
            operation,
            label: `${action} on ${describeResource(resource)}`,
            without: replacing(index, alone({ Resource: resources.filter((_, i) => i !== position) })),
          });
        }
      }
    }
  }
  return elements;
}

/** Every function with a table grant: the operations', the scheduled ones and the webhook pipeline's (keyed by name alike). */
export const functionsWithGrants = [...operations, ...scheduledFunctions, ...pipelineFunctions];
export const names = functionsWithGrants.map((fn) => fn.name);

/** Whether an operation is granted the OAuth authentication batch (token + client liveness). */
const takesOAuthTokens = (name: FunctionName): boolean =>
  (operations.find((operation) => operation.name === name)?.access ?? []).some(
    (grant: { actions: readonly string[]; leadingKeys: readonly string[] }) =>
      grant.actions.includes('dynamodb:BatchGetItem') && grant.leadingKeys.includes('oauthClientLive'),
  );

/** The operation called with the deleted client's access token: the batch read, then the 401. */
async function oauthStep(world: World, name: FunctionName): Promise<Step[]> {
  if (!takesOAuthTokens(name)) return [];
  const operation = operations.find((candidate) => candidate.name === name);
  if (!operation) return [];
  const path = operation.path.replace(/\{\w+\}/g, randomUUID());
  const reply = await world.call(operation.method, path, { token: oauth.deletedClientToken });
  return [step("a deleted client's OAuth access token", reply, 401)];
}

/** A scenario and, for the operations that take them, the OAuth access token step. */
export const runScenario = async (name: FunctionName, world: World): Promise<Step[]> => {
  nextRun();
  await endpointsBackToSeed(world);
  const scenario = await scenarioOf(name);
  return [...(await scenario(world)), ...(await oauthStep(world, name))];
};

/** The steps that did not answer what the full grant must make them answer. */
export const brokenSteps = (steps: Step[]): Step[] => steps.filter((s) => s.got !== s.expected);

/**
 * The world every run shares: one seeded table, and the two OAuth access tokens of `oauth` (a live
 * one, and one of a client deleted since). Each run gets its own proxy and clients over it
 * (`underPolicies`).
 */
export async function createIamWorld(prefix = 'iam'): Promise<World> {
  // The functions as deployed: each counts its requests under its quota grant (limits out of reach).
  const shared = await createWorld(prefix, stackPolicies(), { quotas: UNREACHABLE_QUOTAS });
  const pat = shared.demo.personal_access_token;
  const live = await registerOAuthClient(shared.call, pat, { scope: 'openid profile' });
  oauth.organizationToken = (
    await issueTokens(shared.call, pat, live, { scope: 'openid profile' })
  ).access_token;
  const doomed = await registerOAuthClient(shared.call, pat);
  oauth.deletedClientToken = (await issueTokens(shared.call, pat, doomed)).access_token;
  const removed = await shared.call('DELETE', `/v1/oauth2/register/${doomed.client_id}`, {
    token: doomed.registration_access_token,
  });
  if (removed.status !== 204) throw new Error(`Delete Client answered ${removed.status}`);
  return shared;
}

/** One run of a function's scenario under given policies: its steps, and every verdict the proxy gave. */
export interface ScenarioRun {
  steps: Step[];
  /** Every request context judged, of every function the scenario called, in the order judged. */
  verdicts: Verdict[];
  /** The proxy's refusals (the last verdict of each refused request). */
  denials: Verdict[];
  /** The table the requests named (their resources' ARNs are this table's). */
  tableName: string;
}

/** Runs a function's scenario under `policies` (its own proxy and clients over `shared`'s table). */
export async function runUnder(
  shared: World,
  policies: StackPolicies,
  name: FunctionName,
): Promise<ScenarioRun> {
  const verdicts: Verdict[] = [];
  // Every run as a cold container: a list that knew its organization's markers from an earlier run
  // would skip their read, and a grant of that read would go unnoticed when removed.
  forgetAllListMarkers();
  const world = await underPolicies(shared, policies, { onVerdict: (verdict) => verdicts.push(verdict) });
  try {
    const steps = await runScenario(name, world);
    return { steps, verdicts, denials: [...world.iam.denials], tableName: world.table.name };
  } finally {
    await world.drop();
  }
}

/**
 * A function's clean run under its template policy, the recording both IAM suites judge: every step
 * succeeds, nothing is refused, and the scenario reached the table as this function.
 */
export async function cleanRun(
  shared: World,
  policies: StackPolicies,
  name: FunctionName,
): Promise<ScenarioRun> {
  const run = await runUnder(shared, policies, name);
  expect(brokenSteps(run.steps)).toEqual([]);
  expect(run.denials).toEqual([]);
  expect(
    run.verdicts.some((verdict) => verdict.functionName === name),
    'the scenario must reach the table as this function',
  ).toBe(true);
  return run;
}

/**
 * The recorded requests of `functionName` that `policies` refuse, judged offline by the proxy's own
 * evaluator and statement resolution. Only that function's requests: the other functions a scenario
 * calls keep their policies.
 */
export function offlineRefusals(
  recorded: ScenarioRun,
  policies: StackPolicies,
  functionName: FunctionName,
): RequestContext[] {
  const statements = resolvedStatements(policies, functionName, {
    tableName: recorded.tableName,
    region: LOCAL_REGION,
  });
  return recorded.verdicts
    .filter((verdict) => verdict.functionName === functionName)
    .map((verdict) => verdict.context)
    .filter((context) => !decide(statements, context).allowed);
}

/** The recorded requests of the element's function that its policy without the element refuses. */
export const refusedWithout = (recorded: ScenarioRun, element: Element): RequestContext[] =>
  offlineRefusals(recorded, element.without, element.operation);

/** A request context in words that do not depend on a run's fresh ids: `dynamodb:GetItem on <arn>`. */
export const describeContext = (context: RequestContext): string =>
  `${context.action} on ${context.resource}`;
