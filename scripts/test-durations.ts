/**
 * Writes test/support/durations.json (the file order's hints, test/support/sequencer.ts) from a
 * vitest JSON report of the fast tier:
 *
 *   npx vitest run --project unit --project integration --project e2e --project infra \
 *     --reporter=json --outputFile=.local/fast.json && npm run test:durations -- .local/fast.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DURATIONS_FILE } from '../test/support/sequencer.ts';

const report = process.argv[2];
if (!report) throw new Error('usage: npm run test:durations -- <vitest JSON report>');
const root = fileURLToPath(new URL('..', import.meta.url));
const { testResults } = JSON.parse(readFileSync(report, 'utf8')) as {
  testResults: { name: string; startTime: number; endTime: number }[];
};
const projectOf = (path: string) => path.split('/')[1] ?? 'unknown';
const durations = Object.fromEntries(
  testResults
    .map((file) => {
      const path = relative(root, file.name);
      return [`${projectOf(path)}:${path}`, Math.round((file.endTime - file.startTime) / 100) / 10] as const;
    })
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(DURATIONS_FILE, `${JSON.stringify(durations, null, 2)}\n`);
console.log(`${Object.keys(durations).length} files' durations written to ${fileURLToPath(DURATIONS_FILE)}`);
