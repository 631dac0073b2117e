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
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    deliveryQueue: string;
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
    /** Where the shared synth writes its stages (test/support/stages.ts reads them). */
    sharedStagesDir: string;
  }
}

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Written by this setup when the synth child has ended: the stages, or why there are none. */
export const RESULT_FILE = 'result.json';
export type SynthResult =
  | { ok: true; stages: Record<StageName, SharedStageModel> }
  | { ok: false; error: string };

/**
 * Starts the synth in a child process and returns at once: the other projects' setups (DynamoDB
 * Local, the seed) and their tests run while it bundles, on the other core. The infra files wait for
 * `result.json` (test/support/stages.ts), which this process writes when the child ends.
 */
export default function setup({ provide }: Pick<TestProject, 'provide'>): () => Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'commerce-infra-synth-'));
  const read = (stage: StageName) =>
    JSON.parse(readFileSync(join(dir, `${stage}.model.json`), 'utf8')) as SharedStageModel;
  const done = promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'test/support/synth-stages.ts', dir],
    {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    },
  ).then(
    ({ stderr }): SynthResult => {
      // esbuild's report per bundle goes to stdout; the timings are the last lines of stderr.
      for (const line of stderr.split('\n').filter((l) => l.startsWith('shared synth:'))) console.log(line);
      return { ok: true, stages: { prod: read('prod'), preview: read('preview') } };
    },
    (error: { stderr?: string; message: string }): SynthResult => ({
      ok: false,
      error: `the infra tests' shared synth failed:\n${error.stderr ?? error.message}`,
    }),
  );
  const written = done.then((result) => writeFileSync(join(dir, RESULT_FILE), JSON.stringify(result)));
  provide('sharedStagesDir', dir);
  return async () => {
    await written;
    rmSync(dir, { recursive: true, force: true });
  };
}
