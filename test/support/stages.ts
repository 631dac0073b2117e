/** The infra tests' shared synth (test/support/synth.ts), read from a test file. */
import { readFileSync } from 'node:fs';
import { Template } from 'aws-cdk-lib/assertions';
import { inject } from 'vitest';
import type { SharedStageModel, StageName } from './synth.ts';

export type { SharedStageModel, StageName };

/** In a test file: the shared stage, its template parsed (once per file) for `aws-cdk-lib/assertions`. */
export function sharedStage(name: StageName) {
  const model = inject('sharedStages')[name];
  const json = JSON.parse(readFileSync(model.templatePath, 'utf8'));
  return { model, json, template: Template.fromJSON(json) };
}

/** The nested alarm stack's template of a shared stage (prod has one). */
export function sharedNestedTemplate(model: SharedStageModel, name: 'alarms'): Template {
  const path = model.nestedTemplatePaths[name];
  if (!path) throw new Error(`${model.stackName} has no ${name} stack`);
  return Template.fromJSON(JSON.parse(readFileSync(path, 'utf8')));
}
