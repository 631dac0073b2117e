/**
 * The project's own cdk CLI (node_modules/aws-cdk, the pinned version), run on this Node from the
 * repository root so it reads cdk.json, output captured so callers print only what matters.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function cliEntry(): string {
  const manifest = createRequire(join(ROOT, 'package.json')).resolve('aws-cdk/package.json');
  const { bin } = createRequire(import.meta.url)(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin.cdk ?? 'bin/cdk');
}

export interface CliRun {
  command: string;
  output: string;
  seconds: number;
}

/**
 * Runs `cdk <args>`; resolves with its interleaved stdout and stderr, rejects with them on a
 * non-zero exit. `echo` streams the output too.
 */
export function cdk(args: string[], env: NodeJS.ProcessEnv, echo = false): Promise<CliRun> {
  const command = `cdk ${args.join(' ')}`;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry(), ...args], {
      cwd: ROOT,
      env: { ...env, CDK_DISABLE_VERSION_CHECK: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (echo) process.stdout.write(chunk);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const run = { command, output, seconds: (performance.now() - started) / 1000 };
      if (code === 0) resolve(run);
      else reject(Object.assign(new Error(`${command} exited with ${signal ?? code}`), { run }));
    });
  });
}
