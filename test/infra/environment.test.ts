/**
 * One template for every account and region: `infra/app.ts` is run as the cdk CLI runs it (the
 * context the CLI derives from cdk.json, an output directory, and the account and region it always
 * resolves, here a deliberately unusual pair), and what it writes names neither, in the template or
 * the asset manifest. `-c pinEnvironment=true` is the opt-in that does name them, which also proves
 * the patterns below find a region or an account when there is one.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIN_ENVIRONMENT_CONTEXT, stageEnvironment } from '../../infra/stack.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const cdkJson = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8'));

/**
 * The context the cdk CLI adds from cdk.json's settings (`contextFromSettings` in aws-cdk): path and
 * asset metadata, and version reporting, whose CDKMetadata resource lists every region in a
 * condition of an environment-agnostic stack (hence `versionReporting: false` in cdk.json).
 */
const cliContext = {
  ...((cdkJson.pathMetadata ?? true) && { 'aws:cdk:enable-path-metadata': true }),
  ...((cdkJson.assetMetadata ?? true) && { 'aws:cdk:enable-asset-metadata': true }),
  ...((cdkJson.versionReporting ?? true)
    ? { 'aws:cdk:version-reporting': true }
    : { 'aws:cdk:disable-version-reporting': true }),
};

/** What the CLI would resolve for a deployer whose profile names this account and region. */
const DEPLOYER = { account: '111122223333', region: 'eu-west-3' };
/** Any region name (`us-east-1`, `ap-southeast-2`, `us-gov-west-1`), and any bare 12-digit account id. */
const REGION_LITERAL = /\b[a-z]{2}(?:-[a-z]+)+-\d+\b/g;
const ACCOUNT_LITERAL = /(?<![\w-])\d{12}(?![\w-])/g;

const workDir = mkdtempSync(join(tmpdir(), 'commerce-environment-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/**
 * A deadline for a hung synth (one takes about 15 s of a core; a loaded machine stretches that
 * several times), not a measure of it.
 */
const SYNTH_DEADLINE_MS = 300_000;

/** Runs the app as `cdk synth -c …` does and returns the texts of what it wrote for the stack. */
async function synthWithCli(context: Record<string, string>) {
  const outdir = mkdtempSync(join(workDir, 'cdk.out-'));
  const { CDK_DEFAULT_ACCOUNT: _, CDK_DEFAULT_REGION: __, ...inherited } = process.env;
  await run(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: root,
    // No deadline of its own: the hook's or the test's (SYNTH_DEADLINE_MS) bounds a hang. Its own 90 s
    // killed the synth at a load average of 20-25 on 2 cores, and the prod block's tests were skipped.
    env: {
      ...inherited,
      CDK_OUTDIR: outdir,
      CDK_CONTEXT_JSON: JSON.stringify({
        ...cdkJson.context,
        ...cliContext,
        // Bundling only changes asset hashes, not where the assets live.
        'aws:cdk:bundling-stacks': [],
        ...context,
      }),
      CDK_DEFAULT_ACCOUNT: DEPLOYER.account,
      CDK_DEFAULT_REGION: DEPLOYER.region,
    },
  });
  const stack = `CommerceApi-${context.stage ?? 'prod'}`;
  return {
    template: readFileSync(join(outdir, `${stack}.template.json`), 'utf8'),
    assets: readFileSync(join(outdir, `${stack}.assets.json`), 'utf8'),
  };
}

const literalsIn = (text: string) => [
  ...new Set([...text.matchAll(REGION_LITERAL), ...text.matchAll(ACCOUNT_LITERAL)].map(([m]) => m)),
];

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;
const propertiesOf = (template: string, type: string) =>
  Object.values(JSON.parse(template).Resources as Resources)
    .filter((resource) => resource.Type === type)
    .map((resource) => resource.Properties);

describe.each([
  ['prod', {}],
  ['a preview stage', { stage: 'pr-123', branch: 'feature/region' }],
] as const)('%s, synthesised as the CLI does for a deployer with an account and a region', (_, context) => {
  let synthesised: Awaited<ReturnType<typeof synthWithCli>>;
  beforeAll(async () => {
    synthesised = await synthWithCli(context);
  }, SYNTH_DEADLINE_MS);

  it('names no region and no account in the template or the asset manifest', () => {
    expect(literalsIn(synthesised.template)).toEqual([]);
    expect(literalsIn(synthesised.assets)).toEqual([]);
  });

  it("takes them from CloudFormation's pseudo parameters where it needs them", () => {
    const functions = propertiesOf(synthesised.template, 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      expect((fn.Code as { S3Bucket: unknown }).S3Bucket).toEqual({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's Fn::Sub syntax, not JavaScript's.
        'Fn::Sub': 'cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}',
      });
    }
    const permissions = propertiesOf(synthesised.template, 'AWS::Lambda::Permission');
    expect(permissions.length).toBeGreaterThan(0);
    for (const permission of permissions) {
      // The schedule's rule is named by its own ARN (Fn::GetAtt): nothing to spell out.
      if ((permission.SourceArn as { 'Fn::GetAtt'?: unknown })['Fn::GetAtt']) continue;
      const sourceArn = JSON.stringify(permission.SourceArn);
      expect(sourceArn).toContain('{"Ref":"AWS::Region"}');
      expect(sourceArn).toContain('{"Ref":"AWS::AccountId"}');
    }
  });
});

describe(`-c ${PIN_ENVIRONMENT_CONTEXT}=true, the opt-in`, () => {
  it(
    "pins the CLI's account and region into the template, where the patterns find them",
    async () => {
      const { template } = await synthWithCli({ [PIN_ENVIRONMENT_CONTEXT]: 'true' });
      expect(literalsIn(template).sort()).toEqual([DEPLOYER.account, DEPLOYER.region].sort());
    },
    SYNTH_DEADLINE_MS,
  );

  it('refuses to pin half an environment, and pins nothing unless asked', () => {
    const credentials = { CDK_DEFAULT_ACCOUNT: DEPLOYER.account, CDK_DEFAULT_REGION: DEPLOYER.region };
    const pinned = new App({ context: { [PIN_ENVIRONMENT_CONTEXT]: 'true' } });
    expect(() => stageEnvironment(pinned, { CDK_DEFAULT_REGION: DEPLOYER.region })).toThrow(
      /pinEnvironment=true needs the account and region/,
    );
    expect(stageEnvironment(pinned, credentials)).toEqual(DEPLOYER);
    expect(stageEnvironment(new App(), credentials)).toBeUndefined();
  });
});
