/**
 * The order files start in (vitest `sequence.sequencer`). Two workers take files from one list, so
 * the order decides how long the run's tail is and whether a worker waits.
 *
 * - Projects: integration, e2e, infra, then unit. Vitest's default runs projects by name (e2e,
 *   infra, integration, unit): the infra files then start a minute in and wait for the shared synth
 *   (test/support/synth.ts), both workers idle, while the integration files could run. Unit's
 *   files, the shortest, fill the tail.
 * - Within a project: longest first (the classic longest-processing-time rule, so that no long file
 *   starts last and leaves one worker running alone). A file's time is vitest's own result cache when
 *   this checkout has one; on a fresh clone, `test/support/durations.json`, written from a JSON report
 *   by `npm run test:durations`; a file in neither is taken as its size suggests. These are hints:
 *   a missing or stale entry costs time, never a test.
 */
import { readFileSync, statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const PROJECT_ORDER = ['integration', 'e2e', 'infra', 'unit'];

/** Seconds per file of a recorded fast-tier run, keyed `<project>:<path>`. */
export const DURATIONS_FILE = new URL('./durations.json', import.meta.url);

function recorded(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

/** About what a test file of this size has taken when nothing better is known (the median file). */
const BYTES_PER_SECOND = 4_000;

export default class DurationSequencer extends BaseSequencer {
  private readonly hints = recorded();

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const rank = (spec: TestSpecification) => {
      const at = PROJECT_ORDER.indexOf(spec.project.name);
      return at === -1 ? PROJECT_ORDER.length : at;
    };
    const seconds = new Map<TestSpecification, number>();
    for (const spec of files) {
      const key = `${spec.project.name}:${relative(root, spec.moduleId)}`;
      const cached = this.ctx.cache.getFileTestResults(key)?.duration;
      seconds.set(
        spec,
        cached !== undefined
          ? cached / 1000
          : (this.hints[key] ?? statSync(spec.moduleId).size / BYTES_PER_SECOND),
      );
    }
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        rank(a) - rank(b) ||
        (seconds.get(b) ?? 0) - (seconds.get(a) ?? 0),
    );
  }
}
