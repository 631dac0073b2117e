/**
 * Which operations take `Idempotency-Key`, said once: every POST of the OpenAPI document either
 * honours the key (its handler installs the idempotency middleware, and the document declares the
 * header) or is listed in docs/conventions.md as not taking it. The operations come from the
 * document and the route table, never from a list written here, so a new POST is checked as soon
 * as it exists.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { operations as documented, loadOpenApi, type OperationObject } from '#scripts/openapi.ts';
import type { Dependencies } from '#shared/runtime.ts';

/** Scopes passed to the idempotency middleware factory, in call order. */
const installed: string[] = vi.hoisted(() => []);

vi.mock('#shared/http/idempotency.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('#shared/http/idempotency.ts')>();
  return {
    ...original,
    idempotency: (deps: Dependencies, scope: string) => {
      installed.push(scope);
      return original.idempotency(deps, scope);
    },
  };
});

const { operations: routeTable } = await import('#shared/operations.ts');

const declaresKey = (operation: OperationObject): boolean => {
  const shared = (loadOpenApi().components.parameters ?? {}) as Record<string, { name: string; in: string }>;
  return (operation.parameters ?? []).some((parameter) => {
    const resolved =
      '$ref' in parameter
        ? shared[parameter.$ref.split('/').at(-1) as string]
        : (parameter as { name: string; in: string });
    return resolved?.in === 'header' && resolved.name.toLowerCase() === 'idempotency-key';
  });
};

/** The `POST <path>` routes docs/conventions.md lists as taking no key. */
function documentedWithoutKey(): string[] {
  const page = readFileSync(new URL('../../docs/conventions.md', import.meta.url), 'utf8');
  const section = page.split('\n## Idempotency keys\n')[1]?.split('\n## ')[0] ?? '';
  const [, list = ''] = section.split('These POSTs take no `Idempotency-Key`');
  const items = list.split('\n\n').slice(1, 2).join('');
  return [...items.matchAll(/^- .*?\(`POST (\/\S+)`\)/gm)].map((match) => match[1] as string).sort();
}

const posts = documented().filter(({ method }) => method === 'post');
const honoured = new Map<string, boolean>();

beforeAll(async () => {
  vi.stubEnv('TABLE_NAME', 'unit-test-table');
  const deps = { table: { name: 'unit-test-table' } } as unknown as Dependencies;
  for (const { operation } of posts) {
    const route = routeTable.find((entry) => entry.operationId === operation.operationId);
    if (!route) throw new Error(`no function for ${operation.operationId}`);
    const module = (await import(`../../${route.entry}`)) as {
      createHandler: (deps: Dependencies) => unknown;
    };
    const before = installed.length;
    module.createHandler(deps);
    honoured.set(operation.operationId, installed.length > before);
  }
  vi.unstubAllEnvs();
}, 120_000);

describe('Idempotency-Key', () => {
  it('is read from the document: there are POST operations, and the route table has a function for each', () => {
    expect(posts.length).toBe(routeTable.filter((entry) => entry.method === 'POST').length);
    expect(posts.length).toBeGreaterThan(0);
    expect(honoured.size).toBe(posts.length);
  });

  it('a POST honours it exactly when the OpenAPI document declares the header', () => {
    const mismatched = posts
      .filter(({ operation }) => honoured.get(operation.operationId) !== declaresKey(operation))
      .map(
        ({ path, operation }) =>
          `${operation.operationId} (POST ${path}): handler ${honoured.get(operation.operationId) ? 'honours' : 'ignores'} it, document ${declaresKey(operation) ? 'declares' : 'omits'} it`,
      );
    expect(mismatched).toEqual([]);
  });

  it('every POST that does not honour it is listed in docs/conventions.md, and only those', () => {
    const without = posts
      .filter(({ operation }) => !honoured.get(operation.operationId))
      .map(({ path }) => path)
      .sort();
    expect(documentedWithoutKey()).toEqual(without);
  });

  it('no operation other than a POST declares it', () => {
    const others = documented()
      .filter(({ method, operation }) => method !== 'post' && declaresKey(operation))
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(others).toEqual([]);
  });
});
