import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { PACKAGE_ROOT } from '../lib/paths.ts';
import { isAlive } from '../lib/process-alive.ts';
import { RemotePglite } from './pglite-remote.ts';
import * as schema from './schema/index.ts';

export type Schema = typeof schema;
/** The one database type every repo takes; both drivers produce it. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = PgTransaction<PgQueryResultHKT, Schema>;
/** A repo function accepts either, so it can run inside a caller's transaction. */
export type Executor = Db | Tx;

export interface Database {
  db: Db;
  /**
   * For writes whose loss in a crash may only ever favour the user (credit holds and their settlement), and an
   * agent chat's conversation writes (migration 0030): on PostgreSQL its commits do not wait for the WAL flush,
   * which takes a disk sync off the hot path, and reach the disk within the WAL writer's delay; a crash of the
   * service loses nothing committed, only one of the database's machine may. Visible to every session once
   * committed, as any commit. On PGlite it is `db`: its commits are synchronous (it has no WAL writer, so an
   * asynchronous commit would reach the disk only with the next synchronous one).
   */
  asyncCommitDb: Db;
  driver: 'pglite' | 'pg';
  /** Applies pending migrations; safe when several instances start at once (advisory lock on pg). */
  migrate(): Promise<void>;
  ping(): Promise<void>;
  /** Pool figures for /metrics. */
  poolStats(): { total: number; idle: number; waiting: number };
  /**
   * Calls `onPayload` with every `pg_notify(channel, payload)` committed by any process on this database
   * (on PostgreSQL one held connection per database handle listens, and listens again after it drops, for as long
   * as the handle is open: see `notificationListener`); answers the function that stops listening.
   */
  listen(channel: string, onPayload: (payload: string) => void, watch?: ListenWatch): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Told once when the listening connection drops and once when it listens again (PostgreSQL; PGlite never drops). */
export interface ListenWatch {
  onLost?(err: Error | undefined): void;
  onRestored?(): void;
}

interface ListenHandler extends ListenWatch {
  onPayload(payload: string): void;
}

export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'src', 'db', 'migrations');
const MIGRATION_LOCK_KEY = 727_274_001; // arbitrary, constant: one migration at a time per database

export interface DatabaseOptions {
  databaseUrl?: string | undefined;
  dataDir: string;
  poolMax?: number;
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolMax ?? 10);
  return openPglite(join(resolve(opts.dataDir), 'pgdata'));
}

/** A second process opened the embedded database's directory: two PGlite instances on one directory corrupt it. */
export class DataDirInUseError extends Error {}

/**
 * PGlite serves one process and, unlike a PostgreSQL server, does not refuse a second one on the same files.
 * A pid file beside `pgdata` does: it names the holder, and one left by a process that died is taken over.
 * Answers the release function.
 */
function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'switchboard.pid');
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new DataDirInUseError(
        `The data directory ${dataDir} is in use by process ${holder}. The embedded database serves one process at ` +
          `a time: stop that process first (or share a PostgreSQL database through DATABASE_URL). If no such ` +
          `process runs, delete ${file}.`,
      );
    }
    writeFileSync(file, String(process.pid));
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {}
  };
}

/*
 * Each driver is imported when its database is opened: the embedded default never loads `pg`, a PostgreSQL
 * deployment never loads PGlite (start-up time and resident memory). `pglite-remote.ts` is imported as any
 * module: it loads no PGlite itself (its thread does), only `node:worker_threads`.
 */

async function openPglite(dir: string): Promise<Database> {
  mkdirSync(dirname(dir), { recursive: true });
  const unlock = lockDataDir(dirname(dir));
  // The thread is started before anything is awaited: PGlite starts on it (about half a second) while this
  // thread loads drizzle's modules and the caller goes on with its own start-up (main validates the catalog).
  // PostgreSQL's 128 MB default of shared buffers is resident memory here (WASM); one process needs far less,
  // and the OS page cache still holds the files (docs/benchmarks.md, "Figures behind the code").
  const opening = RemotePglite.open(dir, ['-c', 'shared_buffers=16MB']);
  let client: RemotePglite;
  let drizzlePglite: typeof import('drizzle-orm/pglite').drizzle;
  let migratePglite: typeof import('drizzle-orm/pglite/migrator').migrate;
  try {
    [client, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
      opening,
      import('drizzle-orm/pglite'),
      import('drizzle-orm/pglite/migrator'),
    ]);
  } catch (err) {
    await opening.then((opened) => opened.close()).catch(() => {});
    unlock();
    throw err;
  }
  // drizzle's PGlite driver uses `query` and `transaction`, which RemotePglite offers with PGlite's behaviour.
  const asPglite = client as unknown as PGlite;
  const db = drizzlePglite({ client: asPglite, schema }) as unknown as Db;
  return {
    db,
    asyncCommitDb: db,
    driver: 'pglite',
    async migrate() {
      await client.exec('CREATE EXTENSION IF NOT EXISTS pg_trgm');
      await migratePglite(drizzlePglite({ client: asPglite, schema }), { migrationsFolder: MIGRATIONS_DIR });
    },
    async ping() {
      await client.query('SELECT 1');
    },
    poolStats: () => ({ total: 1, idle: 1, waiting: 0 }),
    listen: (channel, onPayload) => client.listen(channel, onPayload),
    async close() {
      try {
        await client.close();
      } finally {
        unlock();
      }
    },
  };
}

async function openPostgres(url: string, max: number): Promise<Database> {
  const [{ default: pg }, { drizzle: drizzlePg }, { migrate: migratePg }] = await Promise.all([
    import('pg'),
    import('drizzle-orm/node-postgres'),
    import('drizzle-orm/node-postgres/migrator'),
  ]);
  const pool = new pg.Pool({ connectionString: url, max });
  // A client's error (server restart, a killed session) must not crash the process: idle ones through the pool,
  // checked-out ones through their own listener; the failing query still rejects and the next one reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzlePg({ client: pool, schema }) as unknown as Db;
  const asyncPool = new pg.Pool({
    connectionString: url,
    max: Math.max(2, Math.ceil(max / 2)),
    options: '-c synchronous_commit=off',
  });
  asyncPool.on('error', () => {});
  asyncPool.on('connect', (client) => client.on('error', () => {}));
  const listener = notificationListener(() => new pg.Client({ connectionString: url }));
  return {
    db,
    asyncCommitDb: drizzlePg({ client: asyncPool, schema }) as unknown as Db,
    driver: 'pg',
    async migrate() {
      const conn = await pool.connect();
      try {
        await conn.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        try {
          await conn.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
          await migratePg(drizzlePg({ client: conn, schema }), { migrationsFolder: MIGRATIONS_DIR });
        } finally {
          await conn.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
        }
      } finally {
        conn.release();
      }
    },
    async ping() {
      await db.execute(sql`SELECT 1`);
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    listen: (channel, onPayload, watch) => listener.add(channel, { ...watch, onPayload }),
    close: async () => {
      await listener.close();
      await Promise.all([pool.end(), asyncPool.end()]);
    },
  };
}

interface ListenClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', cb: (n: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', cb: (err: Error) => void): unknown;
  on(event: 'end', cb: () => void): unknown;
}

/** Waits between attempts to listen again: doubling from the first to the cap, each drawn in its upper half. */
export const LISTEN_RETRY_MS = { first: 250, cap: 10_000 };

/**
 * LISTEN on PostgreSQL: one connection, made on the first `add`, shared by every channel and handler. When it
 * drops, it is made again for as long as the process lives (backoff with jitter, LISTEN_RETRY_MS) and listens to
 * the same channels; each handler hears `onLost` once when it dropped and `onRestored` once when it is back (not
 * once per attempt). Notifications sent while it was down are lost: on `onRestored` subscribers read what they
 * missed from the database (events carry ids).
 */
function notificationListener(makeClient: () => ListenClient) {
  const handlers = new Map<string, Set<ListenHandler>>();
  let client: ListenClient | undefined;
  let connecting: Promise<ListenClient> | undefined;
  let retry: NodeJS.Timeout | undefined;
  /** Set while the connection is lost and being made again. */
  let down = false;
  let closed = false;
  const quote = (channel: string) => `"${channel.replace(/"/g, '""')}"`;
  const everyHandler = () => [...handlers.values()].flatMap((set) => [...set]);
  const connect = (): Promise<ListenClient> => {
    connecting ??= (async () => {
      const c = makeClient();
      c.on('notification', (n) => {
        for (const h of handlers.get(n.channel) ?? []) h.onPayload(n.payload ?? '');
      });
      let failed = false;
      const lost = (err?: Error) => {
        if (failed) return;
        failed = true;
        void c.end().catch(() => {});
        if (client !== c) return; // an attempt that failed: its caller retries
        client = undefined;
        connecting = undefined;
        if (closed || handlers.size === 0) return;
        down = true;
        for (const h of everyHandler()) h.onLost?.(err);
        reconnect(0);
      };
      c.on('error', lost);
      c.on('end', () => lost());
      try {
        await c.connect();
        for (const channel of handlers.keys()) await c.query(`LISTEN ${quote(channel)}`);
      } catch (err) {
        failed = true;
        await c.end().catch(() => {});
        throw err;
      }
      if (failed) throw new Error('The notification connection dropped while it was being made');
      if (closed) {
        // Closed while this was being made: a connection left open would keep the process alive.
        await c.end().catch(() => {});
        throw new Error('The database was closed');
      }
      client = c;
      return c;
    })().catch((err: unknown) => {
      connecting = undefined;
      throw err;
    });
    return connecting;
  };
  const reconnect = (attempt: number) => {
    const ceiling = Math.min(LISTEN_RETRY_MS.cap, LISTEN_RETRY_MS.first * 2 ** Math.min(attempt, 16));
    retry = setTimeout(
      () => {
        retry = undefined;
        if (closed) return;
        if (handlers.size === 0) {
          down = false; // nobody listens: the next `add` connects afresh
          return;
        }
        connect().then(
          () => {
            down = false;
            for (const h of everyHandler()) h.onRestored?.();
          },
          () => {
            if (!closed) reconnect(attempt + 1);
          },
        );
      },
      ceiling / 2 + Math.random() * (ceiling / 2),
    );
    retry.unref();
  };
  return {
    async add(channel: string, handler: ListenHandler): Promise<() => Promise<void>> {
      const set = handlers.get(channel) ?? new Set();
      const first = set.size === 0;
      set.add(handler);
      handlers.set(channel, set);
      const remove = async () => {
        set.delete(handler);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          await client?.query(`UNLISTEN ${quote(channel)}`).catch(() => {});
        }
      };
      // While it is down the handler waits for the reconnection, which listens to its channel and restores it.
      if (!down) {
        try {
          const c = await connect();
          if (first) await c.query(`LISTEN ${quote(channel)}`);
        } catch (err) {
          await remove();
          throw err;
        }
      }
      return remove;
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retry);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
