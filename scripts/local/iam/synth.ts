/**
 * Synthesises the stack as `cdk synth` does (cdk.json's context, default stage) but without
 * bundling, and reads every function's IAM policy from the template it produces.
 */
import { readFileSync } from 'node:fs';
import { App, type CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { type CommerceApiStack, createStageStack } from '../../../infra/stack.ts';
import { policiesFromTemplate, type StackPolicies } from './policy.ts';

const cdkJson = JSON.parse(readFileSync(new URL('../../../cdk.json', import.meta.url), 'utf8')) as {
  context: Record<string, unknown>;
};

const logicalId = (stack: CommerceApiStack, construct: IConstruct) =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The policies of a synthesised stack, keyed by function name. */
export function stackPolicies(stack: CommerceApiStack, template: object): StackPolicies {
  const functions = Object.fromEntries(
    Object.entries(stack.lambdaFunctions()).map(([name, fn]) => [
      name,
      { roleLogicalId: logicalId(stack, fn.role) },
    ]),
  );
  return policiesFromTemplate(
    template as Parameters<typeof policiesFromTemplate>[0],
    logicalId(stack, stack.table),
    functions,
  );
}

let cached: StackPolicies | undefined;

/** Synthesises the default stage once per process (a few seconds: CDK itself is the cost). */
export function synthesizePolicies(): StackPolicies {
  if (cached) return cached;
  const app = new App({ context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] } });
  const stack = createStageStack(app);
  const template = app.synth().getStackByName(stack.stackName).template;
  cached = stackPolicies(stack, template);
  return cached;
}
