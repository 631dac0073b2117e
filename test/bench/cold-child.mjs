// One cold start, in a fresh Node process: import the bundle the way the Lambda runtime does
// (`import()` of index.mjs), then, when given an event, invoke the handler once. Plain JavaScript
// so that nothing but Node itself runs before the measurement. Prints one JSON line.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, eventFile] = process.argv.slice(2);
const event = eventFile ? JSON.parse(readFileSync(eventFile, 'utf8')) : undefined;
const context = {
  awsRequestId: 'cold-start',
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
  getRemainingTimeInMillis: () => 10_000,
  callbackWaitsForEmptyEventLoop: true,
};

const bootMs = performance.now();
const module = await import(pathToFileURL(bundle).href);
const importedMs = performance.now();
let status;
if (event) status = (await module.handler(event, context)).statusCode;
const invokedMs = performance.now();
process.stdout.write(
  `${JSON.stringify({ bootMs, importMs: importedMs - bootMs, invokeMs: invokedMs - importedMs, status })}\n`,
);
