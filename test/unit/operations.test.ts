/**
 * The route table (`shared/generated/operations.ts`, re-exported by `shared/operations.ts`) is
 * derived: every operation of the OpenAPI document, with its method, path, function and scopes,
 * and the table grants its service declares. These checks keep it so: the table on disk is what the
 * document and the declarations give, every operation has a function folder and an access
 * declaration, and a change to the document leaves the generated files stale (so `npm run build`,
 * which runs `generate --check`, fails until they are regenerated).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { accessDeclarations, routeTable, routeTableFiles } from '#scripts/generate.ts';
import { operations as documented, loadOpenApi, routeOperations } from '#scripts/openapi.ts';
import { oneStatement } from '#shared/data/grants.ts';
import { documentFunctions, routeNotFound } from '#shared/document-functions.ts';
import * as security from '#shared/generated/security.ts';
import { operations, pipelineFunctions, scheduledFunctions } from '#shared/operations.ts';

const FUNCTIONS = new URL('../../functions/', import.meta.url);

describe('the route table and the OpenAPI document', () => {
  it('name the same operations, with the same method and path', () => {
    const inDocument = documented()
      .map(({ method, path, operation }) => `${operation.operationId} ${method.toUpperCase()} ${path}`)
      .sort();
    const inTable = operations.map((op) => `${op.operationId} ${op.method} ${op.path}`).sort();
    expect(inTable).toEqual(inDocument);
  });

  it('is what the document and the access declarations give (nothing written by hand)', async () => {
    const derived = routeTable(routeOperations(), await accessDeclarations());
    expect(operations.map(({ access, ...route }) => ({ ...route, table: access }))).toEqual(derived);
  });

  it("takes each operation's scopes from its security requirements, for the table and the handler", () => {
    const document = loadOpenApi();
    for (const op of operations) {
      const operation = document.paths[op.path]?.[op.method.toLowerCase()];
      const requirements = (operation?.security ?? []) as Record<string, string[]>[];
      const scopes = [...new Set(requirements.flatMap((requirement) => Object.values(requirement).flat()))];
      expect(op.scopes, op.operationId).toEqual(scopes);
      expect((security as Record<string, unknown>)[`${op.operationId}Security`], op.operationId).toEqual({
        credential: op.credential,
        scopes,
      });
    }
  });

  it('gives each operation its own function folder, a unique name and a handler that reads its security', () => {
    expect(new Set(operations.map((op) => op.name)).size).toBe(operations.length);
    for (const op of operations) {
      expect(op.entry).toBe(`functions/${op.name}/handler.ts`);
      const handler = new URL(`${op.name}/handler.ts`, FUNCTIONS);
      expect(existsSync(handler), op.entry).toBe(true);
      const source = readFileSync(handler, 'utf8');
      expect(source, op.entry).toContain(`...${op.operationId}Security`);
      expect(source, `${op.entry} restates its scopes`).not.toMatch(/\bscopes:\s*\[/);
    }
  });

  it('leaves no function folder outside the table', () => {
    const known = new Set<string>([
      ...operations.map((op) => op.name),
      ...scheduledFunctions.map((fn) => fn.name),
      ...pipelineFunctions.map((fn) => fn.name),
      ...documentFunctions.map((fn) => fn.name),
      routeNotFound.name,
    ]);
    const folders = readdirSync(FUNCTIONS, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => !known.has(folder))).toEqual([]);
  });
});

describe('access declarations', () => {
  it('exist once for every operation and every function behind no route, and for nothing else', async () => {
    const declarations = await accessDeclarations();
    expect(Object.keys(declarations.operations).sort()).toEqual(
      operations.map((op) => op.operationId).sort(),
    );
    expect(Object.keys(declarations.functions).sort()).toEqual(
      [...scheduledFunctions, ...pipelineFunctions].map((fn) => fn.name).sort(),
    );
    for (const op of operations) expect(op.access.length, op.operationId).toBeGreaterThan(0);
  });

  it('an operation without one stops the generator', async () => {
    const declarations = await accessDeclarations();
    const { createCustomer: _, ...operationsWithout } = declarations.operations;
    expect(() => routeTable(routeOperations(), { ...declarations, operations: operationsWithout })).toThrow(
      /No access declared .*createCustomer/,
    );
  });

  it('oneStatement joins partitions of alike grants and refuses to join different actions', () => {
    expect(
      oneStatement(
        [{ actions: ['dynamodb:GetItem'], leadingKeys: ['token'] }],
        [{ actions: ['dynamodb:GetItem'], leadingKeys: ['customer', 'token'] }],
      ),
    ).toEqual({ actions: ['dynamodb:GetItem'], leadingKeys: ['token', 'customer'] });
    expect(() =>
      oneStatement(
        [{ actions: ['dynamodb:GetItem'], leadingKeys: ['token'] }],
        [{ actions: ['dynamodb:BatchGetItem'], leadingKeys: ['customer'] }],
      ),
    ).toThrow(/differs/);
  });
});

describe('generate --check', () => {
  const onDisk = (path: string): string => readFileSync(path, 'utf8');

  it('finds the generated route table current', async () => {
    for (const file of (await routeTableFiles()).files)
      expect(onDisk(file.path), file.path).toBe(file.contents);
  });

  it('finds it stale when the document changes a scope, a path or a function name', async () => {
    const changes: [string, (document: ReturnType<typeof loadOpenApi>) => void][] = [
      [
        'a scope',
        (document) => {
          const operation = document.paths['/v1/customers/']?.post as unknown as { security: unknown };
          operation.security = [{ pat: ['customers:admin'] }];
        },
      ],
      [
        'a path',
        (document) => {
          const paths = document.paths;
          paths['/v1/clients/'] = paths['/v1/customers/'] as (typeof paths)[string];
          delete paths['/v1/customers/'];
        },
      ],
      [
        'a function name',
        (document) => {
          (document.paths['/v1/customers/']?.post as Record<string, unknown>)['x-function'] = 'add-customer';
        },
      ],
    ];
    for (const [what, change] of changes) {
      const document = structuredClone(loadOpenApi());
      change(document);
      const stale = (await routeTableFiles(document)).files.filter(
        (file) => onDisk(file.path) !== file.contents,
      );
      expect(stale.length, what).toBeGreaterThan(0);
    }
  });
});

describe('the benchmarks measure every operation', () => {
  it('the DynamoDB-work section has a case for each (it refuses to load otherwise)', async () => {
    await expect(import('#test/bench/dynamo-work.ts')).resolves.toHaveProperty('dynamoWork');
  });
});
