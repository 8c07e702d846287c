import { transform } from 'esbuild';
import { JSON_MAX_DEPTH, nestedDeeperThan } from '../lib/json.ts';
import { PythonPool } from './python-pool.ts';
import { QuickJsPool } from './quickjs-pool.ts';
import { Slots } from './slots.ts';
import {
  SANDBOX_DEFAULT_TIMEOUT_MS,
  SANDBOX_ERROR_MESSAGE_LIMIT,
  SANDBOX_ERROR_NAME_LIMIT,
  SANDBOX_LANGUAGES,
  SANDBOX_MAX_TIMEOUT_MS,
  type SandboxRequest,
  type SandboxResult,
} from './types.ts';

export interface SandboxOptions {
  /** QuickJS worker threads: JavaScript/TypeScript runs at once (`SANDBOX_WORKERS`). */
  workers: number;
  /** Memory of one QuickJS run, bytes (`SANDBOX_MEMORY_MB`). */
  memoryBytes: number;
  /** Python processes: Python runs at once (`SANDBOX_PYTHON_PROCESSES`). */
  pythonProcesses: number;
  /** Resident memory past which a Python process is killed, bytes (`SANDBOX_PYTHON_MEMORY_MB`). */
  pythonMemoryBytes: number;
  /** Runs that may wait for a free worker, per language family (`SANDBOX_QUEUE_MAX`). */
  queueMax: number;
  /** The longest a run waits for a free worker before a 429 (`SANDBOX_QUEUE_TIMEOUT_MS`). */
  queueTimeoutMs: number;
  /** `host:port` pairs the code's fetch may reach even on private addresses (SSRF_ALLOW_HOSTS). */
  allowHosts: readonly string[];
}

export const DEFAULT_SANDBOX_OPTIONS: SandboxOptions = {
  workers: 2,
  memoryBytes: 128 * 1024 * 1024,
  pythonProcesses: 2,
  pythonMemoryBytes: 512 * 1024 * 1024,
  queueMax: 32,
  queueTimeoutMs: 60_000,
  allowHosts: [],
};

/** The limit a run gets: the default when none is asked, never above the maximum, never below 1 ms. */
export function effectiveTimeout(timeoutMs: number | undefined): number {
  const asked = timeoutMs ?? SANDBOX_DEFAULT_TIMEOUT_MS;
  return Math.max(1, Math.min(SANDBOX_MAX_TIMEOUT_MS, Math.floor(asked)));
}

const failed = (name: string, message: string): SandboxResult => ({
  stdout: '',
  stderr: '',
  result: null,
  error: { name, message },
  durationMs: 0,
});

/**
 * What every run hands back, whatever the language and however it ended, bounded once here: an error's name
 * and message cut (the code chooses both), and a result nested deeper than JSON_MAX_DEPTH refused, since every
 * later step (secret scrubbing, storing it in jsonb, the response) walks it recursively.
 */
function bounded(run: SandboxResult): SandboxResult {
  let out = run;
  if (nestedDeeperThan(out.result)) {
    out = {
      ...out,
      result: null,
      error: {
        name: 'ResultTooDeepError',
        message: `The returned value nests arrays and objects more than ${JSON_MAX_DEPTH} levels deep`,
      },
    };
  }
  const error = out.error;
  if (error && (error.name.length > SANDBOX_ERROR_NAME_LIMIT || error.message.length > SANDBOX_ERROR_MESSAGE_LIMIT)) {
    out = {
      ...out,
      error: {
        name: error.name.slice(0, SANDBOX_ERROR_NAME_LIMIT),
        message: error.message.slice(0, SANDBOX_ERROR_MESSAGE_LIMIT),
      },
    };
  }
  return out;
}

/**
 * JavaScript or TypeScript code as one expression evaluating to `async function (args, secrets)`. TypeScript
 * loses its types through esbuild (no type check: a tool runs as its author wrote it). Answers the syntax error
 * instead when the code does not parse.
 */
export async function compileFunction(
  language: 'javascript' | 'typescript',
  code: string,
): Promise<{ source: string } | { error: { name: string; message: string } }> {
  const params = language === 'typescript' ? '(args: any, secrets: Record<string, string>)' : '(args, secrets)';
  // A newline before the closing brace: a trailing line comment in the code must not swallow it.
  const wrapped = `(async function ${params} {\n${code}\n});`;
  try {
    const out = await transform(wrapped, { loader: language === 'typescript' ? 'ts' : 'js', target: 'es2023' });
    return { source: out.code };
  } catch (err) {
    const first = (err as { errors?: Array<{ text: string; location?: { line: number; column: number } }> })
      .errors?.[0];
    // Line numbers of the tool's own code: the wrapper adds one line above it.
    const where = first?.location ? ` (line ${first.location.line - 1}, column ${first.location.column + 1})` : '';
    return { error: { name: 'SyntaxError', message: `${first?.text ?? (err as Error).message}${where}` } };
  }
}

/**
 * The code sandbox of one process (or one test app): workers start on the first run, never at boot, and
 * `close()` stops them. `run` never throws for anything the code does (its faults are in `error`); it throws a
 * 429 when every worker is busy and the queue is full or the wait too long.
 */
export class Sandbox {
  private quickjs: QuickJsPool | undefined;
  private python: PythonPool | undefined;
  private readonly jsSlots: Slots;
  private readonly pySlots: Slots;
  private closed = false;

  constructor(readonly options: SandboxOptions = DEFAULT_SANDBOX_OPTIONS) {
    this.jsSlots = new Slots(options.workers, options.queueMax, options.queueTimeoutMs, 'JavaScript');
    this.pySlots = new Slots(options.pythonProcesses, options.queueMax, options.queueTimeoutMs, 'Python');
  }

  /** Whether any worker or process was started (tests: lazy start). */
  get started(): boolean {
    return this.quickjs !== undefined || this.python !== undefined;
  }

  /** Runs in progress and runs waiting, over both families. */
  stats(): { running: number; queued: number } {
    return {
      running: this.jsSlots.busy + this.pySlots.busy,
      queued: this.jsSlots.queued + this.pySlots.queued,
    };
  }

  async run(req: SandboxRequest): Promise<SandboxResult> {
    return (await this.runDetailed(req)).result;
  }

  /** `run`, also saying whether the code reached a sandbox at all (billing charges only runs that did). */
  async runDetailed(req: SandboxRequest): Promise<{ result: SandboxResult; ran: boolean }> {
    const { result, ran } = await this.runUnbounded(req);
    return { result: bounded(result), ran };
  }

  private async runUnbounded(req: SandboxRequest): Promise<{ result: SandboxResult; ran: boolean }> {
    if (!(SANDBOX_LANGUAGES as readonly string[]).includes(req.language)) {
      return { result: failed('LanguageError', `Unsupported language ${String(req.language)}`), ran: false };
    }
    if (this.closed) throw new Error('The sandbox is closed');
    const timeoutMs = effectiveTimeout(req.timeoutMs);
    if (req.language === 'python') {
      const release = await this.pySlots.acquire();
      try {
        this.python ??= new PythonPool({
          memoryBytes: this.options.pythonMemoryBytes,
          allowHosts: this.options.allowHosts,
        });
        return await this.python.run(req.code, req.args, req.secrets, timeoutMs);
      } finally {
        release();
      }
    }
    const compiled = await compileFunction(req.language, req.code);
    if ('error' in compiled) return { result: failed(compiled.error.name, compiled.error.message), ran: false };
    const release = await this.jsSlots.acquire();
    try {
      this.quickjs ??= new QuickJsPool({ memoryBytes: this.options.memoryBytes, allowHosts: this.options.allowHosts });
      return { result: await this.quickjs.run(compiled.source, req.args, req.secrets, timeoutMs), ran: true };
    } finally {
      release();
    }
  }

  /** Starts Python's process pool ahead of a run and waits until a process is ready (benchmarks, operators). */
  async warmPython(): Promise<void> {
    this.python ??= new PythonPool({
      memoryBytes: this.options.pythonMemoryBytes,
      allowHosts: this.options.allowHosts,
    });
    await this.python.warm();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.jsSlots.rejectWaiting(new Error('The sandbox is closing'));
    this.pySlots.rejectWaiting(new Error('The sandbox is closing'));
    await Promise.all([this.quickjs?.close(), this.python?.close()]);
  }
}
