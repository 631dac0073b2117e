/**
 * cdk-nag's AwsSolutions pack over the prod and a preview stack, as `cdk synth`
 * runs it (infra/app.ts registers it as a validation plugin): no finding is left,
 * and every acknowledgment (cdk-nag 3: `Validations.of(construct).acknowledge`)
 * names a finding that really occurs on that construct and says why it is accepted.
 */
import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { createStageStack } from '../../infra/stack.ts';
import { acknowledgmentsOf, findingsOf, unacknowledgedPack } from '../support/nag.ts';
import { type StageName, sharedStage } from '../support/stages.ts';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

/**
 * Prod and pr-42 are the shared synth's (test/support/synth.ts), whose setup ran the pack over the
 * very tree it synthesised; only a stage with other context (tracing off, below) is built here.
 */
const nagOf = (stage: StageName) => sharedStage(stage).model.nag;

function synth(stage: string, context: Record<string, string> = {}) {
  const app = new App({
    // Rules read resource properties only: the bundled code is not needed.
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], stage, ...context },
  });
  const stack = createStageStack(app);
  return { app, stack };
}

describe.each(['prod', 'preview'] as const)('%s stack', (stage) => {
  it('passes the AwsSolutions pack, which infra/app.ts runs as a validation plugin on every synth', () => {
    expect(nagOf(stage).findings).toEqual([]);
  });

  it('acknowledges only findings that occur, each with a written reason', () => {
    const findings = nagOf(stage).unacknowledged;
    const acknowledgments = nagOf(stage).acknowledgments;
    expect(acknowledgments.length).toBeGreaterThan(0);
    for (const { path, rule, reason } of acknowledgments) {
      expect(
        findings.some((finding) => finding.rule === rule && finding.path.startsWith(`${path}/`)),
        `${rule} acknowledged on ${path} but not raised there`,
      ).toBe(true);
      expect(reason.length, `${rule} on ${path} needs a reason`).toBeGreaterThan(60);
    }
  });
});

describe('what is acknowledged, and where', () => {
  const acknowledged = (stage: StageName) =>
    nagOf(stage)
      .acknowledgments.map(({ path, rule }) => `${rule} ${path}`)
      .sort();

  // Every function of the stack, whatever their number: each carries the runtime acknowledgment.
  const functionsRuntime = (stage: StageName) =>
    Object.values(sharedStage(stage).model.functions)
      .flatMap((fn) => [
        `AwsSolutions-L1 ${fn.functionPath}`,
        // X-Ray's two actions take no resource-level permission.
        `AwsSolutions-IAM5[Resource::*] ${fn.rolePath}`,
      ])
      .sort();

  // The relay's failure queue is a dead-letter queue by its mapping; the relay's ListStreams takes no resource.
  // So is the meter aggregator's ListStreams.
  const webhookPipeline = (stage: string) => [
    `AwsSolutions-SQS3 CommerceApi-${stage}/Webhooks/RelayFailures`,
    `AwsSolutions-IAM5[Resource::*] CommerceApi-${stage}/WebhookRelay/Role`,
    `AwsSolutions-IAM5[Resource::*] CommerceApi-${stage}/MeterAggregator/Role`,
  ];

  it('prod: the API without an API Gateway authorizer, the pinned nodejs22.x runtime, the key set rotated by version', () => {
    expect(acknowledged('prod')).toEqual(
      [
        'AwsSolutions-APIG4 CommerceApi-prod/HttpApi',
        // The front door's distribution (infra/front-door.ts): no geo restriction, API Gateway's
        // access log instead of CloudFront's, the default certificate's TLS policy without an alias.
        'AwsSolutions-CFR1 CommerceApi-prod/FrontDoor/Distribution',
        'AwsSolutions-CFR3 CommerceApi-prod/FrontDoor/Distribution',
        'AwsSolutions-CFR4 CommerceApi-prod/FrontDoor/Distribution',
        'AwsSolutions-SMG4 CommerceApi-prod/WebhookKeySet',
        ...webhookPipeline('prod'),
        ...functionsRuntime('prod'),
      ].sort(),
    );
  });

  it('preview: those, and no point-in-time recovery on its throwaway table', () => {
    expect(acknowledged('preview')).toEqual(
      [
        'AwsSolutions-APIG4 CommerceApi-pr-42/HttpApi',
        'AwsSolutions-DDB3 CommerceApi-pr-42/DataTable',
        'AwsSolutions-SMG4 CommerceApi-pr-42/WebhookKeySet',
        ...webhookPipeline('pr-42'),
        ...functionsRuntime('preview'),
      ].sort(),
    );
  });

  it('fixed rather than acknowledged: API access logging, no managed policies, no wildcard but X-Ray', () => {
    const findings = nagOf('prod').unacknowledged.map((finding) => finding.rule);
    expect(findings).not.toContain('AwsSolutions-APIG1');
    expect(findings).not.toContain('AwsSolutions-IAM4');
    expect(
      findings
        .filter((rule) => rule.startsWith('AwsSolutions-IAM5'))
        .every((rule) => rule === 'AwsSolutions-IAM5[Resource::*]'),
    ).toBe(true);
    // With tracing off for a stage, no wildcard at all, and nothing acknowledged for one.
    const untraced = synth('pr-1', { 'tracing:pr-1': 'false' }).app;
    untraced.synth();
    // Except the stream consumers' dynamodb:ListStreams, which takes no resource-level permission.
    const streamRoles = ['CommerceApi-pr-1/MeterAggregator/Role', 'CommerceApi-pr-1/WebhookRelay/Role'];
    expect(
      findingsOf(unacknowledgedPack(), untraced)
        .filter((f) => f.rule.startsWith('AwsSolutions-IAM5'))
        .map((f) => f.path)
        .sort(),
    ).toEqual(streamRoles.map((role) => `${role}/Resource`));
    expect(
      acknowledgmentsOf(untraced)
        .filter((a) => a.rule.startsWith('AwsSolutions-IAM5'))
        .map((a) => a.path)
        .sort(),
    ).toEqual(streamRoles);
  });
});
