/**
 * Setup file of the infra and bundles projects: a test file that synthesises one of the shared stages
 * again (test/support/synth.ts), or bundles any stack, fails. A file may synthesise other context
 * (a stage selected by `-c`, tracing off, …); it reads prod and the preview stage from the shared synth.
 */
import { Stack, Stage } from 'aws-cdk-lib';
import { afterAll, expect } from 'vitest';
import { sharedStages } from './stages.ts';

/** Context keys that change only metadata or the code assets, not what a stage declares. */
const SETTINGS = /^aws:cdk:(enable-path-metadata|enable-asset-metadata|bundling-stacks)$/;

const declared = (context: Record<string, unknown>) =>
  JSON.stringify(
    Object.entries(context)
      .filter(([key]) => !SETTINGS.test(key))
      .sort(([a], [b]) => a.localeCompare(b)),
  );

const shared = Object.values(sharedStages() ?? {}).map((stage) => ({
  stackName: stage.stackName,
  context: declared(stage.context),
}));

const offences: string[] = [];
const original = Stage.prototype.synth;
Stage.prototype.synth = function synth(this: Stage, ...args: Parameters<Stage['synth']>) {
  const stacks = this.node.findAll().filter((construct): construct is Stack => Stack.isStack(construct));
  for (const stack of stacks.filter((stack) => stack.bundlingRequired)) {
    offences.push(`${stack.stackName} bundled in a test file (the shared synth bundles prod once)`);
  }
  const context = declared(this.node.getAllContext());
  for (const stage of shared) {
    if (stage.context === context) offences.push(`${stage.stackName} synthesised again (it is shared)`);
  }
  return original.apply(this, args);
};

afterAll(() => {
  Stage.prototype.synth = original;
  expect(offences, 'read prod and the preview stage with sharedStage() (test/support/stages.ts)').toEqual([]);
});
