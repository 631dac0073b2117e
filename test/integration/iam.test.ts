/**
 * The functions' IAM policies, as the synthesised template grants them, against what the code does
 * (the fast tier; the offline judge is in test/support/iam-scenarios.ts, each function's scenario in
 * its card, test/cards/<function>.ts).
 *
 * - Enough: each function's scenario, which walks every path that touches the table (success,
 *   idempotent replay, a failure that releases its key, every sort order), runs clean once under
 *   its template policy, and every DynamoDB request context the IAM proxy judged is kept.
 * - No more than needed, offline: without any one element of a DynamoDB statement (an action, a
 *   leading-key pattern, an index ARN), the proxy's own evaluator refuses at least one of those
 *   recorded requests. A grant no recorded request needs is named as unused. No handler re-runs and
 *   no DynamoDB call is made for it; the long suite (iam-mutations.test.ts) re-runs every mutation
 *   and checks that the re-run agrees with this judgement.
 * - The defect of issue 9: Create Subscription under a policy whose batch read lacks `ORG#*` (what
 *   the stack granted before) answers the bare 500, logs the missing grant, and writes nothing.
 *
 * The functions are those of `shared/operations.ts` (operations, scheduled and pipeline functions),
 * each with the scenario of its card (test/cards/<function>.ts; test/unit/cards.test.ts requires one each).
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { indexNames } from '#shared/data/table.ts';
import { internalErrorBody } from '#shared/domain/errors.ts';
import { stackPolicies } from '../support/dynamodb.ts';
import {
  asList,
  cleanRun,
  createIamWorld,
  elementsOf,
  type FunctionName,
  functionsWithGrants,
  LEADING_KEYS,
  names,
  offlineRefusals,
  refusedWithout,
  type ScenarioRun,
} from '../support/iam-scenarios.ts';
import { createWorld, type Reply, type World } from '../support/world.ts';

let shared: World;
beforeAll(async () => {
  shared = await createIamWorld();
});
afterAll(() => shared?.drop());

/** Each function's clean run under its template policy, by name. */
const recorded = new Map<FunctionName, ScenarioRun>();

describe('each function runs under the policy its template grants', () => {
  it.each(names)('%s: every step of its scenario succeeds, and the proxy refuses nothing', async (name) => {
    recorded.set(name, await cleanRun(shared, stackPolicies(), name));
  });
});

describe('and under nothing less: without any one element of its DynamoDB statements, a recorded request is refused', () => {
  it('finds elements to remove in every function that reads the table', () => {
    for (const fn of functionsWithGrants) {
      expect(elementsOf(stackPolicies(), fn.name).length, fn.name).toBeGreaterThanOrEqual(
        fn.access.reduce((n, grant) => n + grant.actions.length, 0),
      );
    }
  });

  it.each(names)('%s: no element of its grants goes unused', (name) => {
    const run = recorded.get(name);
    if (!run) throw new Error(`${name}: its scenario did not run clean under the template policy (above)`);
    // The offline judge sees what the proxy saw: under the template policy it refuses none of them.
    expect(offlineRefusals(run, stackPolicies(), name), 'refused offline under the template policy').toEqual(
      [],
    );
    const elements = elementsOf(stackPolicies(), name);
    expect(elements.length).toBeGreaterThan(0);
    const unused = elements
      .filter((element) => refusedWithout(run, element).length === 0)
      .map((element) => element.label);
    expect(unused, 'grant elements no recorded request needs').toEqual([]);
  });
});

describe('Create Subscription under the policy the stack granted before issue 9 (its batch read lacked ORG#*)', () => {
  let world: World;
  beforeAll(async () => {
    const policies = structuredClone(stackPolicies());
    const statements = policies.functions['create-subscription']?.statements ?? [];
    // Its batch of product, customer and organizations (not the OAuth authentication batch).
    const batch = statements.find(
      (s) =>
        asList(s.Action ?? []).includes('dynamodb:BatchGetItem') &&
        JSON.stringify(s.Condition).includes('PRODUCT#'),
    );
    const keys = batch?.Condition?.[LEADING_KEYS[0]]?.[LEADING_KEYS[1]];
    expect(keys).toContain('ORG#*');
    (batch?.Condition?.[LEADING_KEYS[0]] as Record<string, string[]>)[LEADING_KEYS[1]] = asList(
      keys ?? [],
    ).filter((key) => key !== 'ORG#*');
    world = await createWorld('iam-before', policies);
  });
  afterAll(() => world?.drop());

  it('answers the bare 500, logs the action and key prefixes (never a key), and writes nothing', async () => {
    const subscriptions = async () =>
      (
        await world.table.doc.send(
          new QueryCommand({
            TableName: world.table.name,
            IndexName: indexNames.gsi1,
            KeyConditionExpression: 'GSI1PK = :c AND begins_with(GSI1SK, :s)',
            ExpressionAttributeValues: { ':c': `CUSTOMER#${world.demo.customer_id}`, ':s': 'SUBSCRIPTION#' },
          }),
        )
      ).Count;
    const before = await subscriptions();
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    let reply: Reply;
    let lines: string[];
    try {
      reply = await world.call('POST', '/v1/subscriptions/', {
        token: world.demo.personal_access_token,
        body: { product_id: world.demo.free_product_id, customer_id: world.demo.customer_id },
      });
    } finally {
      // Read before restoring: restoring a spy clears what it recorded.
      lines = log.mock.calls.map((args) => String(args[0]));
      log.mockRestore();
    }
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual(internalErrorBody);

    const denied = lines.map((line) => JSON.parse(line)).find((entry) => entry.message?.includes('denied'));
    expect(denied).toEqual({
      level: 'error',
      message: 'DynamoDB denied the call: the function role lacks a grant',
      timestamp: expect.any(String),
      action: 'dynamodb:BatchGetItem',
      // LIST#: the segment registry items of the subscription lists, read in the same batch (issue 25).
      keyPrefixes: ['CUSTOMER#', 'LIST#', 'ORG#', 'PRODUCT#'],
    });
    const ids = [world.demo.customer_id, world.demo.free_product_id, world.demo.organization_id];
    for (const line of lines) for (const id of ids) expect(line).not.toContain(id);

    expect(world.iam.denials.map((d) => [d.functionName, d.context.action])).toEqual([
      ['create-subscription', 'dynamodb:BatchGetItem'],
    ]);
    expect(await subscriptions()).toBe(before);
  });
});
