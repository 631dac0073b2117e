/**
 * `.ci/run` runs every long suite that vitest.config.ts declares: its lanes name them by hand, so a
 * suite added to `longSuites` and not to a lane would never run in CI.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { longSuites } from '../../vitest.config.ts';

const script = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');

/** The suites the lanes run: `npm run test:<name>` inside the quoted command lines of a `lane` call. */
function suitesInLanes(text: string): string[] {
  const joined = text.replace(/\\\n\s*/g, ' ');
  const calls = joined.split('\n').filter((line) => /^lane\s/.test(line));
  return calls.flatMap((line) => [...line.matchAll(/npm run test:([a-z-]+)/g)].map((m) => m[1] as string));
}

describe('.ci/run', () => {
  it('runs every long suite of vitest.config.ts once, in one of its lanes', () => {
    const run = suitesInLanes(script);
    expect([...run].sort()).toEqual(Object.keys(longSuites).sort());
  });

  it('runs the fast tier as the README says it: npm test', () => {
    expect(script).toMatch(/^step npm test\b/m);
  });
});
