import { Worker } from 'node:worker_threads';
import { sourceFile } from '../lib/paths.ts';

/**
 * The embedded database on a thread of its own (`pglite-worker.mjs`), spoken to by messages: in the service's
 * thread every PGlite statement held the event loop, stalling every request in flight (docs/benchmarks.md,
 * "Start-up and the embedded database"). It offers what drizzle's PGlite driver and `client.ts` use, with PGlite's
 * behaviour (one statement and one transaction at a time, PostgreSQL's error fields, no keeping the process
 * alive when idle); unlike PGlite, the types of `TEXT_TYPES` always come back as text, as drizzle reads them.
 */

export interface RemoteResults {
  rows: unknown[];
  fields: Array<{ name: string; dataTypeID: number }>;
  affectedRows?: number;
}

interface QueryOptions {
  rowMode?: 'array' | 'object';
  parsers?: Record<number, (value: string, typeId: number) => unknown>;
}

/**
 * The types drizzle's PGlite driver keeps as text (drizzle-orm/pglite/session.js gives every statement
 * `(value) => value` parsers for them): date, timestamp, timestamptz, interval, their arrays, and numeric[].
 * The thread's PGlite leaves them as text from the start, for every statement: a statement naming parsers
 * makes PGlite copy its whole table of parsers (over 300, one per type and array type) to merge them in, at
 * every one of drizzle's statements (docs/benchmarks.md, "Start-up and the embedded database").
 */
const TEXT_TYPES: ReadonlySet<number> = new Set([1082, 1114, 1184, 1186, 1182, 1115, 1185, 1187, 1231]);

/**
 * How often the embedded database's thread looks for tables whose planner statistics are stale, when statements
 * have run since it last looked: the look reads each table's size (7.5 ms with the service's 48 tables, measured
 * with `--liftoff-only` on a data directory), so not much more often. A table growing from empty is analyzed again
 * within this long of each tenth it adds.
 */
export const STATISTICS_MS = 10_000;

/** A transaction's statements, as PGlite's `transaction` callback receives them. */
export interface RemoteTransaction {
  query<T = unknown>(sql: string, params?: unknown[], options?: QueryOptions): Promise<RemoteResults & { rows: T[] }>;
  exec(sql: string): Promise<RemoteResults[]>;
}

type Reply = { id: number; value?: unknown; error?: Record<string, unknown> & { message: string } };
type Pending = { resolve(value: unknown): void; reject(err: unknown): void };

export class RemotePglite implements RemoteTransaction {
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextListener = 1;
  private nextTransaction = 1;
  private readonly listeners = new Map<number, (payload: string) => void>();
  /** Why the thread can serve no more (it closed or died); every call after that is refused with it. */
  private stopped: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: Reply | { listener: number; payload: string }) => {
      if ('listener' in m) {
        this.listeners.get(m.listener)?.(m.payload);
        return;
      }
      const call = this.pending.get(m.id);
      if (!call) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.error) call.reject(databaseError(m.error));
      else call.resolve(m.value);
    });
    const stop = (err: Error) => {
      this.stopped ??= err;
      for (const call of this.pending.values()) call.reject(this.stopped);
      this.pending.clear();
    };
    worker.on('error', (err) => stop(new Error(`The embedded database stopped: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => stop(new Error(`The embedded database stopped (its thread exited with ${code})`)));
  }

  /**
   * Opens the database in `dir` on a new thread; PGlite's own start-up error if it cannot. Every `statisticsMs`
   * (default STATISTICS_MS) the thread analyzes the tables whose size has moved by a tenth since they were last
   * analyzed, the share of autovacuum's work PGlite needs most (pglite-worker.mjs).
   */
  static async open(dir: string, startParams: string[], statisticsMs = STATISTICS_MS): Promise<RemotePglite> {
    const worker = new Worker(sourceFile('db', 'pglite-worker.mjs'), {
      workerData: { dir, startParams, textTypes: [...TEXT_TYPES], statisticsMs },
    });
    let onMessage: (m: { ready: boolean; error?: Reply['error'] }) => void = () => {};
    let onError: (err: Error) => void = () => {};
    let onExit: (code: number) => void = () => {};
    const ready = await new Promise<{ ready: boolean; error?: Reply['error'] }>((resolve, reject) => {
      onMessage = resolve;
      onError = reject;
      onExit = (code) => reject(new Error(`The embedded database's thread exited with ${code}`));
      worker.once('message', onMessage).once('error', onError).once('exit', onExit);
    }).finally(() => worker.off('message', onMessage).off('error', onError).off('exit', onExit));
    if (!ready.ready) {
      await worker.terminate();
      throw databaseError(ready.error ?? { message: 'The embedded database did not start' });
    }
    worker.unref();
    return new RemotePglite(worker);
  }

  private call<T>(message: Record<string, unknown>): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      try {
        this.worker.postMessage({ ...message, id });
      } catch (err) {
        // A parameter structured clone cannot copy (a function): refused here, nothing was sent.
        this.pending.delete(id);
        if (this.pending.size === 0) this.worker.unref();
        reject(err);
      }
    });
  }

  query<T = unknown>(
    sql: string,
    params: unknown[] = [],
    options?: QueryOptions,
  ): Promise<RemoteResults & { rows: T[] }> {
    return this.queryIn<T>(undefined, sql, params, options);
  }

  exec(sql: string): Promise<RemoteResults[]> {
    return this.execIn(undefined, sql);
  }

  /** A statement on the database (`tx` undefined) or in the open transaction `tx`. */
  private async queryIn<T>(
    tx: number | undefined,
    sql: string,
    params: unknown[],
    options: QueryOptions | undefined,
  ): Promise<RemoteResults & { rows: T[] }> {
    const parsers = options?.parsers;
    const result = await this.call<RemoteResults & { rows: T[] }>({
      op: 'query',
      tx,
      sql,
      params,
      rowMode: options?.rowMode,
      text: parsers && otherTextTypes(parsers),
    });
    if (parsers) applyParsers(result, parsers, options?.rowMode ?? 'object');
    return result;
  }

  private execIn(tx: number | undefined, sql: string): Promise<RemoteResults[]> {
    return this.call({ op: 'exec', tx, sql });
  }

  /**
   * Runs `fn` in a transaction: committed when it returns, rolled back when it throws (its error is thrown
   * again). Statements of other callers wait for it to end, as in PGlite.
   */
  async transaction<T>(fn: (tx: RemoteTransaction) => Promise<T>): Promise<T> {
    // The begin has no answer: its statements follow it at once (one round trip between the threads fewer),
    // the thread holds them until the transaction has begun, and a refused begin fails them and the end.
    const tx = this.nextTransaction++;
    if (this.stopped) throw this.stopped;
    this.worker.postMessage({ op: 'begin', tx });
    const statements: RemoteTransaction = {
      query: <R>(sql: string, params: unknown[] = [], options?: QueryOptions) =>
        this.queryIn<R>(tx, sql, params, options),
      exec: (sql: string) => this.execIn(tx, sql),
    };
    let result: T;
    try {
      result = await fn(statements);
    } catch (err) {
      await this.call({ op: 'end', tx, commit: false }).catch(() => {});
      throw err;
    }
    await this.call({ op: 'end', tx, commit: true });
    return result;
  }

  /** Calls `onPayload` with each notification on `channel`; answers the function that stops it. */
  async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
    const listener = this.nextListener++;
    this.listeners.set(listener, onPayload);
    try {
      await this.call({ op: 'listen', channel, listener });
    } catch (err) {
      this.listeners.delete(listener);
      throw err;
    }
    return async () => {
      this.listeners.delete(listener);
      await this.call({ op: 'unlisten', listener });
    };
  }

  /** Closes the database and ends its thread. */
  async close(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.call({ op: 'close' });
    } finally {
      this.stopped ??= new Error('The embedded database is closed');
      await this.worker.terminate();
    }
  }
}

/** The thread's error as an Error of this thread, with PostgreSQL's fields (`code`, `constraint`...). */
function databaseError(fields: Record<string, unknown> & { message: string }): Error {
  return Object.assign(new Error(fields.message), fields);
}

/** The types a caller has parsers for that the thread does not already leave as text (none of drizzle's). */
function otherTextTypes(parsers: NonNullable<QueryOptions['parsers']>): number[] | undefined {
  let other: number[] | undefined;
  for (const key in parsers) {
    const id = Number(key);
    if (TEXT_TYPES.has(id)) continue;
    other ??= [];
    other.push(id);
  }
  return other;
}

function applyParsers(
  result: RemoteResults,
  parsers: NonNullable<QueryOptions['parsers']>,
  rowMode: 'array' | 'object',
): void {
  result.fields.forEach((field, i) => {
    const parse = parsers[field.dataTypeID];
    if (!parse) return;
    const key = rowMode === 'array' ? i : field.name;
    for (const row of result.rows as Array<Record<string | number, unknown>>) {
      const value = row[key];
      if (typeof value === 'string') row[key] = parse(value, field.dataTypeID);
    }
  });
}
