/**
 * cdk-nag's AwsSolutions pack over the prod and a preview stack, as `cdk synth`
 * runs it (infra/app.ts registers it as a validation plugin): no finding is left,
 * and every acknowledgment (cdk-nag 3: `Validations.of(construct).acknowledge`)
 * names a finding that really occurs on that construct and says why it is accepted.
 */
import { readFileSync } from 'node:fs';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { createStageStack } from '../../infra/stack.ts';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

function synth(stage: string, context: Record<string, string> = {}) {
  const app = new App({
    // Rules read resource properties only: the bundled code is not needed.
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], stage, ...context },
  });
  const stack = createStageStack(app);
  return { app, stack };
}

interface Finding {
  rule: string;
  path: string;
}

const findingsOf = (pack: AwsSolutionsChecks, scope: App): Finding[] =>
  pack.validateScope(scope).violations.flatMap((violation) =>
    violation.violatingResources.map((resource) => ({
      rule: violation.ruleName,
      path: resource.constructPath ?? '',
    })),
  );

/** The pack with acknowledgments ignored: every finding the stack would have without them. */
function unacknowledgedPack(): AwsSolutionsChecks {
  const pack = new AwsSolutionsChecks();
  // `isAcknowledged` is private API of cdk-nag's NagPack; the own property shadows it.
  Object.assign(pack, { isAcknowledged: () => false });
  return pack;
}

function acknowledgmentsOf(scope: App) {
  return scope.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          rule: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

describe.each([
  ['prod', 'prod'],
  ['preview', 'pr-42'],
] as const)('%s stack', (_, stage) => {
  it('passes the AwsSolutions pack: synth with the plugin, as infra/app.ts runs it, does not fail', () => {
    const { app } = synth(stage);
    const pack = new AwsSolutionsChecks(app);
    Validations.of(app).addPlugins(pack);
    expect(() => app.synth()).not.toThrow();
    expect(findingsOf(new AwsSolutionsChecks(), app)).toEqual([]);
  });

  it('acknowledges only findings that occur, each with a written reason', () => {
    const { app } = synth(stage);
    app.synth();
    const findings = findingsOf(unacknowledgedPack(), app);
    const acknowledgments = acknowledgmentsOf(app);
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
  const acknowledged = (stage: string) => {
    const { app } = synth(stage);
    app.synth();
    return acknowledgmentsOf(app)
      .map(({ path, rule }) => `${rule} ${path}`)
      .sort();
  };

  // Every function of the stack, whatever their number: each carries the runtime acknowledgment.
  const functionsRuntime = (stage: string) =>
    Object.values(synth(stage).stack.lambdaFunctions())
      .flatMap((fn) => [
        `AwsSolutions-L1 ${fn.function.node.path}`,
        // X-Ray's two actions take no resource-level permission.
        `AwsSolutions-IAM5[Resource::*] ${fn.role.node.path}`,
      ])
      .sort();

  // The relay's failure queue is a dead-letter queue by its mapping; the relay's ListStreams takes no resource.
  const webhookPipeline = (stage: string) => [
    `AwsSolutions-SQS3 CommerceApi-${stage}/Webhooks/RelayFailures`,
    `AwsSolutions-IAM5[Resource::*] CommerceApi-${stage}/WebhookRelay/Role`,
  ];

  it('prod: the API without an API Gateway authorizer, the pinned nodejs22.x runtime, the key set rotated by version', () => {
    expect(acknowledged('prod')).toEqual(
      [
        'AwsSolutions-APIG4 CommerceApi-prod/HttpApi',
        'AwsSolutions-SMG4 CommerceApi-prod/WebhookKeySet',
        ...webhookPipeline('prod'),
        ...functionsRuntime('prod'),
      ].sort(),
    );
  });

  it('preview: those, and no point-in-time recovery on its throwaway table', () => {
    expect(acknowledged('pr-42')).toEqual(
      [
        'AwsSolutions-APIG4 CommerceApi-pr-42/HttpApi',
        'AwsSolutions-DDB3 CommerceApi-pr-42/Table',
        'AwsSolutions-SMG4 CommerceApi-pr-42/WebhookKeySet',
        ...webhookPipeline('pr-42'),
        ...functionsRuntime('pr-42'),
      ].sort(),
    );
  });

  it('fixed rather than acknowledged: API access logging, no managed policies, no wildcard but X-Ray', () => {
    const { app } = synth('prod');
    app.synth();
    const findings = findingsOf(unacknowledgedPack(), app).map((finding) => finding.rule);
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
    // Except the relay's dynamodb:ListStreams, which takes no resource-level permission.
    const relayRole = 'CommerceApi-pr-1/WebhookRelay/Role';
    expect(
      findingsOf(unacknowledgedPack(), untraced)
        .filter((f) => f.rule.startsWith('AwsSolutions-IAM5'))
        .map((f) => f.path),
    ).toEqual([`${relayRole}/DefaultPolicy/Resource`]);
    expect(
      acknowledgmentsOf(untraced)
        .filter((a) => a.rule.startsWith('AwsSolutions-IAM5'))
        .map((a) => a.path),
    ).toEqual([relayRole]);
  });
});
