/**
 * What `npm start` shows a person: one short line per request (time, method, path, status, ms,
 * operation) and one per webhook delivery attempt, coloured when stdout is a terminal, as `sam local`
 * and serverless-offline do. `LOG_FORMAT=json` shows instead the lines the deployed functions write,
 * the JSON/EMF lines CloudWatch reads. The functions' own output is not changed: this only renders it
 * (`setLineSink`, shared/observability/telemetry.ts).
 */
import { type LineSink, type LogLine, setLineSink } from '#shared/observability/telemetry.ts';

export type LogFormat = 'pretty' | 'json';

export function logFormatFromEnv(value = process.env.LOG_FORMAT): LogFormat {
  if (value === undefined || value === '' || value === 'pretty') return 'pretty';
  if (value === 'json') return 'json';
  throw new Error(`LOG_FORMAT must be pretty or json, got ${value}`);
}

/** What the local API server knows of a request once it has answered it. */
export interface RequestSummary {
  at: Date;
  method: string;
  path: string;
  status: number;
  ms: number;
  /** The function that answered (its name), or `apigw` when the gateway answered by itself. */
  operation: string;
}

const ESC = '\u001b[';
const paint = (color: boolean, code: string, text: string) =>
  color ? `${ESC}${code}m${text}${ESC}0m` : text;
const dim = (color: boolean, text: string) => paint(color, '2', text);

function statusColour(status: number): string {
  if (status >= 500) return '31';
  if (status >= 400) return '33';
  if (status >= 300) return '36';
  return '32';
}

const two = (n: number) => String(n).padStart(2, '0');
/** Local wall-clock time, `HH:MM:SS.mmm`. */
export const clock = (at: Date) =>
  `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;

export function formatRequest(request: RequestSummary, color: boolean): string {
  return [
    dim(color, clock(request.at)),
    paint(color, '1', request.method.padEnd(6)),
    request.path,
    paint(color, statusColour(request.status), String(request.status)),
    dim(color, `${request.ms.toFixed(1)} ms`),
    paint(color, '36', request.operation),
  ].join(' ');
}

const OUTCOME_COLOUR: Record<string, string> = { delivered: '32', retry: '33', failed: '31' };

/**
 * A function's line as a person reads it, or undefined for lines the terminal does not show: request
 * lines (the server's own line says it), the relay's, and the metrics-only documents.
 */
export function formatLogLine(line: LogLine, color: boolean, at = new Date()): string | undefined {
  const message = typeof line.message === 'string' ? line.message : undefined;
  const time = dim(color, clock(typeof line.timestamp === 'string' ? new Date(line.timestamp) : at));
  if (message === 'webhook delivery attempt') {
    const outcome = String(line.outcome);
    const answer = line.http_code ?? line.error ?? 'no answer';
    return [
      time,
      paint(color, '1', 'WEBHOOK'),
      String(line.type),
      `→ endpoint ${String(line.endpoint_id)}`,
      `attempt ${String(line.attempt)}`,
      paint(color, OUTCOME_COLOUR[outcome] ?? '0', `${String(answer)} ${outcome}`),
      dim(color, `${Number(line.duration_ms ?? 0).toFixed(1)} ms`),
      ...(line.endpoint_disabled
        ? [paint(color, '31', `endpoint disabled: ${String(line.endpoint_disabled)}`)]
        : []),
    ].join(' ');
  }
  if (message === undefined || message === 'request' || message.startsWith('webhook event '))
    return undefined;
  const { level, message: _message, timestamp: _timestamp, stack, ...fields } = line;
  const rest = Object.entries(fields)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const head = level === 'error' ? paint(color, '31', `error: ${message}`) : message;
  return [time, head, rest, typeof stack === 'string' ? `\n${stack}` : ''].filter(Boolean).join(' ');
}

export interface Terminal {
  /** The API server's line per request; undefined in `json` format (only the functions' lines show). */
  logRequest?: (request: RequestSummary) => void;
  /** Puts back the functions' JSON lines. */
  restore(): void;
}

export interface TerminalOptions {
  format: LogFormat;
  /** Colours (ANSI); default: when stdout is a terminal and NO_COLOR is unset. */
  color?: boolean;
  /** Only errors are shown. */
  quiet?: boolean;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

/** Renders the functions' lines (and the server's) on this process's terminal, as `format` says. */
export function openTerminal(options: TerminalOptions): Terminal {
  if (options.format === 'json') return { restore: () => undefined };
  const color = options.color ?? (process.stdout.isTTY === true && !process.env.NO_COLOR);
  const out = options.out ?? ((text: string) => process.stdout.write(`${text}\n`));
  const err = options.err ?? ((text: string) => process.stderr.write(`${text}\n`));
  const sink: LineSink = (line, stream) => {
    if (options.quiet && stream !== 'stderr') return;
    const text = formatLogLine(line, color);
    if (text !== undefined) (stream === 'stderr' ? err : out)(text);
  };
  setLineSink(sink);
  return {
    ...(options.quiet ? {} : { logRequest: (request: RequestSummary) => out(formatRequest(request, color)) }),
    restore: () => setLineSink(undefined),
  };
}
