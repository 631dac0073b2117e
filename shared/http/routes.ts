/**
 * The routes the HTTP API declares, and how API Gateway picks one for a request.
 *
 * HTTP APIs refuse route paths that end in `/` and, as public reports say, do not send `/a/` to
 * the `/a` route. Every operation therefore gets two routes: its path without the trailing slash,
 * and a greedy twin `<path>/{proxy+}` that catches the other spelling. The twin would also catch
 * real extra segments (`/a/b`), which the function refuses with the contract's 404 (see
 * `shared/http/api.ts`), so both spellings answer alike whichever way API Gateway treats the slash.
 * Everything else reaches the `$default` route, whose function answers 404 or 405.
 *
 * The CDK stack declares exactly `routeKeysOf` for each operation; the local server selects among
 * the same routes with `selectRoute`, the way API Gateway documents it. Pure data and functions.
 */

export const GREEDY_PARAMETER = 'proxy';
export const DEFAULT_ROUTE_KEY = '$default';

export interface Route<Target> {
  /** `METHOD /path`, as API Gateway writes route keys. */
  routeKey: string;
  method: string;
  path: string;
  target: Target;
}

/** `/v1/subscriptions/` → `/v1/subscriptions`: the spelling a route path may have. */
export const routePath = (path: string): string => (path.length > 1 ? path.replace(/\/+$/, '') : path);

/** The two route keys of an operation: its path, and the greedy twin that catches the trailing slash. */
export function routeKeysOf(operation: { method: string; path: string }): string[] {
  const path = routePath(operation.path);
  return [`${operation.method} ${path}`, `${operation.method} ${path}/{${GREEDY_PARAMETER}+}`];
}

export function routesOf<Target extends { method: string; path: string }>(
  targets: readonly Target[],
): Route<Target>[] {
  return targets.flatMap((target) =>
    routeKeysOf(target).map((routeKey) => {
      const space = routeKey.indexOf(' ');
      return { routeKey, method: routeKey.slice(0, space), path: routeKey.slice(space + 1), target };
    }),
  );
}

function decodeSegment(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

interface PathMatch {
  parameters: Record<string, string>;
  greedy: boolean;
  /** Segments the template matched before any greedy variable: more is more specific. */
  segments: number;
  /** Literal segments the template matched: more is more specific. */
  literals: number;
}

/**
 * `{name}` matches one non-empty segment; a final `{name+}` matches the rest of the path, which may
 * be empty (the trailing slash) or several segments.
 */
export function matchPath(template: string, path: string): PathMatch | undefined {
  const want = template.split('/');
  const got = path.split('/');
  const parameters: Record<string, string> = {};
  let literals = 0;
  for (let i = 0; i < want.length; i++) {
    const pattern = want[i] as string;
    const greedy = /^\{([^{}+]+)\+\}$/.exec(pattern)?.[1];
    if (greedy !== undefined && i === want.length - 1) {
      if (got.length < want.length) return undefined;
      parameters[greedy] = decodeSegment(got.slice(i).join('/'));
      return { parameters, greedy: true, segments: i, literals };
    }
    const segment = got[i];
    if (segment === undefined) return undefined;
    const name = /^\{([^{}+]+)\}$/.exec(pattern)?.[1];
    if (name !== undefined) {
      if (segment === '') return undefined;
      parameters[name] = decodeSegment(segment);
    } else if (pattern !== segment) {
      return undefined;
    } else {
      literals++;
    }
  }
  return got.length === want.length
    ? { parameters, greedy: false, segments: want.length, literals }
    : undefined;
}

export interface Selected<Target> {
  route: Route<Target>;
  pathParameters: Record<string, string>;
}

/**
 * API Gateway's order: a full match of method and path first (literal segments before path
 * variables), then a match through a greedy path variable, the most specific first (the longest
 * prefix before the greedy variable, then the most literal segments), then nothing (the caller
 * falls back to `$default`). A method-specific route beats `ANY`.
 *
 * Among as many literal segments, the route whose first variable comes later wins (a literal before a
 * variable, left to right).
 *
 * `/wallets/<id>/` matches both `/wallets/{proxy+}` (List Wallets' twin) and `/wallets/{id}/{proxy+}`
 * (Get Wallet's): the longer prefix is the more specific. docs/deploying.md's first-deployment checklist
 * has a `curl` that confirms API Gateway agrees.
 */
export function selectRoute<Target>(
  routes: readonly Route<Target>[],
  method: string,
  path: string,
): Selected<Target> | undefined {
  let best: { selected: Selected<Target>; rank: number[] } | undefined;
  for (const route of routes) {
    if (route.method !== method.toUpperCase() && route.method !== 'ANY') continue;
    const match = matchPath(route.path, path);
    if (!match) continue;
    // Equally many literals: the one whose first path variable comes later (a literal where the
    // other has a variable, read left to right) is the more specific: `/v1/customers/external/state`
    // is Get Customer by external id `state`, not the state of a customer `external`.
    const firstVariable = route.path.split('/').findIndex((segment) => segment.startsWith('{'));
    const rank = [
      match.greedy ? 1 : 0,
      -match.segments,
      -match.literals,
      firstVariable < 0 ? -Infinity : -firstVariable,
      route.method === 'ANY' ? 1 : 0,
    ];
    if (!best || compareRanks(rank, best.rank) < 0) {
      best = { selected: { route, pathParameters: match.parameters }, rank };
    }
  }
  return best?.selected;
}

const compareRanks = (a: number[], b: number[]): number => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
};

/** Methods whose route takes this exact path (either spelling), ignoring greedy twins: for 405 and `Allow`. */
export function methodsForPath(targets: readonly { method: string; path: string }[], path: string): string[] {
  const methods = new Set<string>();
  for (const target of targets) {
    const template = routePath(target.path);
    if (matchPath(template, path) || matchPath(template, routePath(path))) methods.add(target.method);
  }
  return [...methods].sort();
}

/** `GET /v1/customers/{id}/{proxy+}` → `/v1/customers/{id}`: the template a route key serves. */
export function templateOfRouteKey(routeKey: string): string {
  const path = routeKey.slice(routeKey.indexOf(' ') + 1);
  return path.endsWith(`/{${GREEDY_PARAMETER}+}`) ? path.slice(0, -`/{${GREEDY_PARAMETER}+}`.length) : path;
}

/**
 * Path variables that another route names literally at the same place, after the same segments:
 * beside `/v1/customers/external/{external_id}`, the `id` of `/v1/customers/{id}` is never
 * `external`. API Gateway sends `/v1/customers/external/` (an external id left empty) and
 * `/v1/customers/external` to the `{id}` route; its function answers them as the other family's
 * unknown resource instead of reading `external` as an id. By template: variable → literals.
 */
export function shadowedVariables(paths: readonly string[]): Map<string, Record<string, string[]>> {
  const templates = [...new Set(paths.map(routePath))];
  const shadowed = new Map<string, Record<string, string[]>>();
  for (const template of templates) {
    const segments = template.split('/');
    for (const other of templates) {
      const others = other.split('/');
      const at = segments.findIndex((segment, i) => segment !== others[i]);
      const variable = /^\{([^{}+]+)\}$/.exec(segments[at] ?? '')?.[1];
      const literal = others[at];
      if (variable === undefined || literal === undefined || /^\{.*\}$/.test(literal)) continue;
      const found = shadowed.get(template) ?? {};
      // Several templates may name the same literal there (`/v1/customers/external/{external_id}` and its `/state`).
      if (found[variable]?.includes(literal)) continue;
      found[variable] = [...(found[variable] ?? []), literal];
      shadowed.set(template, found);
    }
  }
  return shadowed;
}
