/** The infra tests' shared synth (test/support/synth.ts), read from a test file. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { inject } from 'vitest';
import { RESULT_FILE, type SharedStageModel, type StageName, type SynthResult } from './synth.ts';

export type { SharedStageModel, StageName };

/** The synth may bundle for a while on a loaded machine; past this it has hung. */
const SYNTH_DEADLINE_MS = 600_000;
let stages: Record<StageName, SharedStageModel> | undefined;

/**
 * The shared synth's stages, once its child has ended (test/support/synth.ts starts it and returns).
 * Waits on the result file with a deadline, blocking this worker: nothing else runs in it meanwhile,
 * and the callers (a file's top level, the guard) stay synchronous. Undefined outside the infra and
 * bundles projects.
 */
export function sharedStages(): Record<StageName, SharedStageModel> | undefined {
  if (stages) return stages;
  const dir = inject('sharedStagesDir');
  if (!dir) return undefined;
  const file = join(dir, RESULT_FILE);
  const deadline = Date.now() + SYNTH_DEADLINE_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(file)) {
    if (Date.now() > deadline)
      throw new Error(`the shared synth wrote no ${file} in ${SYNTH_DEADLINE_MS} ms`);
    Atomics.wait(pause, 0, 0, 200);
  }
  const result = JSON.parse(readFileSync(file, 'utf8')) as SynthResult;
  if (!result.ok) throw new Error(result.error);
  stages = result.stages;
  return stages;
}

/** In a test file: the shared stage, its template parsed (once per file) for `aws-cdk-lib/assertions`. */
export function sharedStage(name: StageName) {
  const model = sharedStages()?.[name];
  if (!model) throw new Error('no shared synth: add test/support/synth.ts to the vitest globalSetup');
  const json = JSON.parse(readFileSync(model.templatePath, 'utf8'));
  return { model, json, template: Template.fromJSON(json) };
}

/** The nested alarm stack's template of a shared stage (prod has one). */
export function sharedNestedTemplate(model: SharedStageModel, name: 'alarms'): Template {
  const path = model.nestedTemplatePaths[name];
  if (!path) throw new Error(`${model.stackName} has no ${name} stack`);
  return Template.fromJSON(JSON.parse(readFileSync(path, 'utf8')));
}
