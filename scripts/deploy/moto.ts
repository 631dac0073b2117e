/**
 * moto's server (`moto_server`, preinstalled on the project's machines) on a free loopback port,
 * its output kept in a log file: the only place moto says which resource types its CloudFormation
 * does not model. `stop()` ends the process group it was started in and waits for it.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { freePort } from '../local/dynamodb-local.ts';

/** moto's default account; set explicitly so the bootstrap target is never a guess. */
export const MOTO_ACCOUNT = '123456789012';

export interface Moto {
  endpoint: string;
  port: number;
  version: string;
  /** Everything moto printed so far. */
  log(): string;
  stop(): Promise<void>;
}

function motoVersion(): string {
  try {
    return execFileSync('python3', ['-c', 'import moto; print(moto.__version__)'], {
      encoding: 'utf8',
    }).trim();
  } catch {
    return 'unknown';
  }
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

export async function startMoto(logFile: string, timeoutMs = 30_000): Promise<Moto> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const out = openSync(logFile, 'a');
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], {
    // Its own process group, so stop() reaches anything the pyenv shim or moto starts, and only that.
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, MOTO_ACCOUNT_ID: MOTO_ACCOUNT },
  });
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`moto_server could not start: ${error.message}`)));
    child.once('exit', (code) =>
      reject(new Error(`moto_server exited with ${code}:\n${readFileSync(logFile, 'utf8')}`)),
    );
  });
  failed.catch(() => {});

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const done = exited(child);
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-(child.pid as number), name);
      } catch {
        // Already gone.
      }
    };
    signal('SIGTERM');
    const killed = setTimeout(() => signal('SIGKILL'), 5000);
    await done;
    clearTimeout(killed);
  };

  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const ready = fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) }).then(
        (response) => response.ok,
        () => false,
      );
      if (await Promise.race([ready, failed])) break;
      if (Date.now() > deadline)
        throw new Error(`moto_server did not answer on ${endpoint} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, port, version: motoVersion(), log: () => readFileSync(logFile, 'utf8'), stop };
}
