/**
 * One template for every region: what `infra/app.ts` synthesises names no region and no account,
 * even when the CLI's environment names one (it always sets CDK_DEFAULT_REGION), unless the deployer
 * asks to pin it with `-c pinEnvironment=true`.
 */
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { createStageStack, stageEnvironment } from '../../infra/stack.ts';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));
const CLI_ENVIRONMENT = { CDK_DEFAULT_REGION: 'eu-west-3', CDK_DEFAULT_ACCOUNT: '210987654321' };

/** The template `npx cdk synth` writes, as text, with the CLI's environment variables set. */
function templateText(context: Record<string, unknown>): string {
  const app = new App({
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], stage: 'pr-7', ...context },
  });
  const stack = createStageStack(app, stageEnvironment(app, CLI_ENVIRONMENT));
  return JSON.stringify(app.synth().getStackByName(stack.stackName).template);
}

const REGION = /\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov)-[a-z]+-\d\b/g;

describe('the synthesised template', () => {
  it('names no region and no account: it deploys wherever the deployer points the CLI', () => {
    const text = templateText({});
    expect(text.match(REGION) ?? []).toEqual([]);
    expect(text).not.toContain(CLI_ENVIRONMENT.CDK_DEFAULT_ACCOUNT);
    // …because it refers to them through the pseudo parameters.
    expect(text).toContain('"Ref":"AWS::Region"');
    expect(text).toContain('"Ref":"AWS::AccountId"');
  });

  it('is pinned to the CLI account and region only on request (-c pinEnvironment=true)', () => {
    const text = templateText({ pinEnvironment: 'true' });
    expect(text.match(REGION) ?? []).toContain('eu-west-3');
    expect(text).toContain(CLI_ENVIRONMENT.CDK_DEFAULT_ACCOUNT);
  });
});
