/**
 * `npm run lint:cfn`: cfn-lint (installed on our machines) on the template of every kind of stage
 * the CDK app makes, prod and a preview, as `cdk synth` writes them. W3005 (a `DependsOn` that a
 * `GetAtt` already implies) is CDK's known noise and is ignored; any other finding fails.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
/** One stage of each kind: their templates differ (retention, PITR, alarms). */
const STAGES = ['prod', 'lint-preview'];
const IGNORED = ['W3005'];

async function lint(stage: string, outdir: string): Promise<string | undefined> {
  await run(
    join(ROOT, 'node_modules', '.bin', 'cdk'),
    ['synth', '--quiet', '-c', `stage=${stage}`, '-o', outdir],
    {
      cwd: ROOT,
      env: { ...process.env, CDK_DISABLE_VERSION_CHECK: '1' },
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const templates = readdirSync(outdir).filter((file) => file.endsWith('.template.json'));
  if (templates.length === 0) return `${stage}: cdk synth wrote no template`;
  try {
    await run('cfn-lint', [
      '--ignore-checks',
      ...IGNORED,
      '--',
      ...templates.map((file) => join(outdir, file)),
    ]);
    console.log(`✔ ${stage}: ${templates.join(', ')}: no findings (ignoring ${IGNORED.join(', ')})`);
    return undefined;
  } catch (error) {
    const { stdout, stderr, code } = error as { stdout?: string; stderr?: string; code?: unknown };
    if (code === 'ENOENT') return 'cfn-lint is not installed (pip install cfn-lint)';
    return `${stage}: cfn-lint found:\n${stdout ?? ''}${stderr ?? ''}`;
  }
}

const work = mkdtempSync(join(tmpdir(), 'commerce-cfn-lint-'));
try {
  const failures: string[] = [];
  for (const stage of STAGES) {
    const failure = await lint(stage, join(work, stage));
    if (failure) failures.push(failure);
  }
  if (failures.length > 0) {
    console.error(failures.join('\n'));
    process.exitCode = 1;
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
