/**
 * The infra tests' one synth per stage (run by test/support/synth.ts, in a child process so the
 * bundling does not block vitest's own process): prod as `npm run synth` gives it (cdk.json's context,
 * the CLI's asset and path metadata, every function bundled by esbuild) and a preview stage
 * (unbundled: nothing reads its code), each into its own cloud assembly under the directory given.
 *
 * Beside each assembly, `<stage>.model.json`: what the tests would otherwise read from the construct
 * tree (logical ids of the constructs they name, tokens resolved, the nested monitoring template's
 * file) and cdk-nag's AwsSolutions findings and acknowledgments on that same tree.
 *
 *   node --import tsx test/support/synth-stages.ts <dir>
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { ApiFunction } from '../../infra/function.ts';
import { createStageStack } from '../../infra/stack.ts';
import { tableDefinition } from '../../shared/data/table.ts';
import { acknowledgmentsOf, findingsOf, unacknowledgedPack } from './nag.ts';
import type { SharedStageModel, StageName } from './synth.ts';

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8'));

/** The context of each shared stage: what `cdk synth [-c stage=pr-42] -c branch=feature/test` passes. */
export const sharedStageContexts: Record<StageName, Record<string, unknown>> = {
  prod: {
    ...cdkJson.context,
    // The CLI's defaults (contextFromSettings in aws-cdk): SAM finds the code through asset metadata.
    'aws:cdk:enable-path-metadata': true,
    'aws:cdk:enable-asset-metadata': true,
    branch: 'feature/test',
  },
  preview: {
    ...cdkJson.context,
    'aws:cdk:enable-path-metadata': true,
    'aws:cdk:enable-asset-metadata': true,
    // Rules and template assertions read properties only: prod's bundles prove esbuild works.
    'aws:cdk:bundling-stacks': [],
    stage: 'pr-42',
    branch: 'feature/test',
  },
};

const idOf = (stack: Stack, construct: IConstruct) =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

function synthStage(name: StageName, dir: string): SharedStageModel {
  const outdir = join(dir, name);
  const app = new App({ outdir, context: sharedStageContexts[name] });
  const stack = createStageStack(app);
  const assembly = app.synth();
  const fnIds = (fn: ApiFunction) => ({
    function: idOf(stack, fn.function),
    role: idOf(stack, fn.role),
    logGroup: idOf(stack, fn.logGroup),
    functionPath: fn.function.node.path,
    rolePath: fn.role.node.path,
  });
  const monitoring = stack.monitoring;
  const tableArn = stack.table.tableArn;
  return {
    stage: stack.stage,
    stackName: stack.stackName,
    outdir,
    templatePath: join(outdir, assembly.getStackByName(stack.stackName).templateFile),
    nestedTemplatePaths: monitoring ? { alarms: join(outdir, monitoring.alarmStack.templateFile) } : {},
    context: sharedStageContexts[name],
    functions: Object.fromEntries(Object.entries(stack.lambdaFunctions()).map(([n, fn]) => [n, fnIds(fn)])),
    httpFunctions: Object.keys(stack.httpFunctions()),
    scheduledFunctions: Object.keys(stack.scheduled),
    ids: {
      table: idOf(stack, stack.table),
      api: idOf(stack, stack.api),
      accessLogs: idOf(stack, stack.accessLogs),
      webhookKeySet: idOf(stack, stack.webhookKeySet),
      deadLetterQueue: idOf(stack, stack.webhooks.deadLetterQueue),
      deliveryQueue: idOf(stack, stack.webhooks.queue),
      relayFailures: idOf(stack, stack.webhooks.relayFailures),
      ...(monitoring && { alarmTopic: idOf(stack, monitoring.alarmTopic) }),
    },
    resolved: {
      tableArn: stack.resolve(tableArn),
      indexArns: Object.fromEntries(
        tableDefinition.indexes.map((index) => [
          index.name,
          stack.resolve(`${tableArn}/index/${index.name}`),
        ]),
      ),
      webhookKeySetArnPattern: stack.resolve(stack.webhookKeySetRef.arnPattern),
    },
    nag: {
      // What the AwsSolutions pack, registered as app.ts registers it, reports at synth.
      findings: findingsOf(new AwsSolutionsChecks(), app),
      unacknowledged: findingsOf(unacknowledgedPack(), app),
      acknowledgments: acknowledgmentsOf(app),
    },
  };
}

const dir = process.argv[2];
if (!dir) throw new Error('usage: synth-stages.ts <dir>');
for (const name of ['prod', 'preview'] as const) {
  const started = Date.now();
  writeFileSync(join(dir, `${name}.model.json`), JSON.stringify(synthStage(name, dir)));
  console.error(`shared synth: ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
