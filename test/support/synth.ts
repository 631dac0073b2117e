/**
 * One synth per stage per test run, shared by every infra test file (vitest `globalSetup` of the infra
 * and bundles projects): test/support/synth-stages.ts synthesises prod (bundled, as `npm run synth`)
 * and a preview stage into a temporary directory, and the files read the templates, the bundles and
 * the model of each (`sharedStage`) instead of synthesising and bundling again.
 *
 * Why not reuse `cdk.out` from `npm run synth`: whether it is fresh would have to be judged from every
 * input of the synth (infra/, functions/, shared/, cdk.json, the installed aws-cdk-lib and esbuild, the
 * CLI's context), and a stale one passes tests on code that is not there. One synth per run is cheap
 * enough once it is shared.
 *
 * test/support/synth-guard.ts (a setup file of the same projects) fails a file that synthesises a
 * shared stage again, or bundles at all.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import type { Finding } from './nag.ts';

export type StageName = 'prod' | 'preview';

interface FunctionIds {
  function: string;
  role: string;
  logGroup: string;
  functionPath: string;
  rolePath: string;
}

/** What the tests read from the construct tree, computed on the shared one (JSON: it crosses processes). */
export interface SharedStageModel {
  stage: string;
  stackName: string;
  /** The cloud assembly: template, asset directories (`aws:asset:path` is relative to it). */
  outdir: string;
  templatePath: string;
  nestedTemplatePaths: { alarms?: string };
  /** The app's context, for the guard: a file must not synthesise this again. */
  context: Record<string, unknown>;
  /** Logical ids and construct paths of every function of the stack, by function name. */
  functions: Record<string, FunctionIds>;
  httpFunctions: string[];
  scheduledFunctions: string[];
  ids: {
    table: string;
    api: string;
    accessLogs: string;
    webhookKeySet: string;
    deadLetterQueue: string;
    relayFailures: string;
    alarmTopic?: string;
  };
  /** Tokens as the stack resolves them into the template. */
  resolved: {
    tableArn: unknown;
    indexArns: Record<string, unknown>;
    webhookKeySetArnPattern: unknown;
  };
  /** cdk-nag's AwsSolutions pack on the same tree. */
  nag: {
    findings: Finding[];
    unacknowledged: Finding[];
    acknowledgments: { path: string; rule: string; reason: string }[];
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    sharedStages: Record<StageName, SharedStageModel>;
  }
}

const root = fileURLToPath(new URL('../..', import.meta.url));

export default async function setup({ provide }: Pick<TestProject, 'provide'>): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'commerce-infra-synth-'));
  try {
    const { stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/support/synth-stages.ts', dir],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    // esbuild's report per bundle goes to stdout; the timings are the last lines of stderr.
    for (const line of stderr.split('\n').filter((l) => l.startsWith('shared synth:'))) console.log(line);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const { stderr } = error as { stderr?: string };
    throw new Error(`the infra tests' shared synth failed:\n${stderr ?? (error as Error).message}`);
  }
  const read = (stage: StageName) =>
    JSON.parse(readFileSync(join(dir, `${stage}.model.json`), 'utf8')) as SharedStageModel;
  provide('sharedStages', { prod: read('prod'), preview: read('preview') });
  return () => rmSync(dir, { recursive: true, force: true });
}
