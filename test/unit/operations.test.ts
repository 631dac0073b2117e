/**
 * The route table (`shared/operations.ts`) and the OpenAPI document describe the same operations:
 * every documented operation has a function, with the documented method and path, and no function
 * serves an undocumented one. The suites that cover "every operation" iterate over one of the two,
 * so a new operation missing from either is caught here rather than skipped there.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { operations as documented } from '#scripts/openapi.ts';
import { operations } from '#shared/operations.ts';

describe('the route table and the OpenAPI document', () => {
  it('name the same operations, with the same method and path', () => {
    const inDocument = documented()
      .map(({ method, path, operation }) => `${operation.operationId} ${method.toUpperCase()} ${path}`)
      .sort();
    const inTable = operations.map((op) => `${op.operationId} ${op.method} ${op.path}`).sort();
    expect(inTable).toEqual(inDocument);
  });

  it('give each operation its own function folder and a unique name', () => {
    expect(new Set(operations.map((op) => op.name)).size).toBe(operations.length);
    for (const op of operations) {
      expect(op.entry).toBe(`functions/${op.name}/handler.ts`);
      expect(existsSync(new URL(`../../${op.entry}`, import.meta.url)), op.entry).toBe(true);
    }
  });
});

describe('the benchmarks measure every operation', () => {
  it('the DynamoDB-work section has a case for each (it refuses to load otherwise)', async () => {
    await expect(import('#test/bench/dynamo-work.ts')).resolves.toHaveProperty('dynamoWork');
  });
});
