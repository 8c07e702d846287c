// The embedded database's thread (see pglite-remote.ts): PGlite opened on `workerData.dir`, serving the
// messages of the service's thread in order. Plain JavaScript, as Node starts it without the service's loaders.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

const port = parentPort;
if (!port) throw new Error('pglite-worker.mjs runs as a worker thread');

/** Leaves a value as PostgreSQL sent it (text): the caller's own parser for that type runs on its thread. */
const asText = (value) => value;
/**
 * The parsers that keep the given type ids as text, one object per set of ids (callers use a few). Only for
 * types beyond `workerData.textTypes`, which PGlite leaves as text for every statement (set at open).
 */
const textParsers = new Map();
function parsersFor(ids) {
  if (!ids?.length) return undefined;
  const key = ids.join(',');
  let parsers = textParsers.get(key);
  if (!parsers) {
    parsers = Object.fromEntries(ids.map((id) => [id, asText]));
    textParsers.set(key, parsers);
  }
  return parsers;
}

/**
 * An error as plain data: its message and every own field of a primitive value (PostgreSQL's `code`,
 * `constraint`, `detail` and the like). Structured clone would keep the message alone.
 */
function errorOf(err) {
  if (!(err instanceof Error)) return { message: String(err) };
  const out = { message: err.message };
  for (const [key, value] of Object.entries(err)) {
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) out[key] = value;
  }
  return out;
}

const reply = (id, value) => port.postMessage({ id, value });
const fail = (id, err) => port.postMessage({ id, error: errorOf(err) });

/**
 * Open transactions by the id the service's thread gave them: `started` resolves to PGlite's transaction once
 * it has begun (its statements may arrive before that: they wait for it, in order), `end(commit)` ends it,
 * `done` resolves once PGlite has committed or rolled back, to the error that stopped it if any.
 */
const transactions = new Map();
const ROLLBACK = Symbol('rollback');

/** Where a statement runs: in its transaction, or on the database (after any open transaction, PGlite's rule). */
function target(tx) {
  if (tx === undefined) return pg;
  const open = transactions.get(tx);
  if (!open) throw new Error('The transaction has ended');
  return open.started;
}

const plain = (r) => ({ rows: r.rows, fields: r.fields, affectedRows: r.affectedRows });

/** Runs `work` on the statement's target and answers message `m` with what it resolves to, or its error. */
function run(m, work) {
  let on;
  try {
    on = target(m.tx);
  } catch (err) {
    return fail(m.id, err);
  }
  Promise.resolve(on)
    .then(work)
    .then(
      (value) => reply(m.id, value),
      (err) => fail(m.id, err),
    );
}

/** Begins transaction `m.tx` (no answer: a refused begin fails the transaction's statements and its end). */
function begin(m) {
  let begun;
  let refused;
  let end;
  const open = {
    started: new Promise((resolve, reject) => {
      begun = resolve;
      refused = reject;
    }),
    ended: new Promise((resolve) => {
      end = resolve;
    }),
  };
  open.end = end;
  open.started.catch(() => {}); // told through the statements that wait for it
  let inside = false;
  open.done = pg
    .transaction(async (tx) => {
      inside = true;
      begun(tx);
      if (!(await open.ended)) throw ROLLBACK;
    })
    .then(
      () => undefined,
      (err) => {
        // A failure to begin (the database closed) comes before the callback ran.
        if (!inside) refused(err);
        return err === ROLLBACK ? undefined : err;
      },
    );
  transactions.set(m.tx, open);
}

const listeners = new Map();

const pg = await PGlite.create(workerData.dir, {
  extensions: { pg_trgm },
  startParams: [...PGlite.defaultStartParams, ...workerData.startParams],
}).catch((err) => {
  // The service's thread ends this one when it reads this.
  port.postMessage({ ready: false, error: errorOf(err) });
  return undefined;
});
if (pg) {
  // After start-up, which installs the array types' parsers (timestamp[] and the like) over any given to create.
  for (const id of workerData.textTypes) pg.parsers[id] = asText;
  port.postMessage({ ready: true });
  port.on('message', serve);
  setInterval(refreshStatistics, workerData.statisticsMs).unref();
}

/**
 * The tables whose size has moved away from what their last ANALYZE recorded: never analyzed and not empty, or
 * 8 pages and a tenth more or less than `relpages`. One catalog query that reads every table's size from its files
 * (7.5 ms with the service's 48 tables).
 */
const STALE_STATISTICS = `SELECT format('%I.%I', n.nspname, c.relname) AS name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname NOT LIKE 'pg_toast%'
    AND abs(pg_relation_size(c.oid) / current_setting('block_size')::int - c.relpages) > 8 + c.relpages / 10`;

/**
 * PGlite runs no autovacuum, so nothing refreshes the planner's statistics: a statement planned while a table was
 * small keeps its plan as the table grows (a plpgsql function's plans live as long as the connection), and a
 * sequential scan that was cheapest over a few pages costs more with every row. The credit ledger showed it:
 * under steady load the group-commit batch's statement took 11, then 14, then 18 ms over six seconds while the
 * ledger grew, and 5 ms once ANALYZE had run (docs/gateway-speed.md, 30 November). So every `statisticsMs` the
 * tables whose size has moved by a tenth since their last ANALYZE are analyzed again (each ANALYZE reads a sample
 * of at most 30,000 rows; a table growing steadily is analyzed at sizes a tenth apart, so the work stays a small
 * share of its writes). It runs between statements, after any open transaction, as every statement here does, and
 * only when a statement has run since the last look.
 */
let refreshing = false;
/** A statement ran since the last look: an idle database is not looked at (its sizes have not moved). */
let served = false;
function refreshStatistics() {
  if (refreshing || !served) return;
  refreshing = true;
  served = false;
  pg.query(STALE_STATISTICS)
    .then(async ({ rows }) => {
      for (const { name } of rows) await pg.exec(`ANALYZE ${name}`);
    })
    // A table dropped between the two, or the database closing: the next round tries again.
    .catch(() => {})
    .finally(() => {
      refreshing = false;
    });
}

/** One message of the service's thread: answered, in the order PGlite runs them, with its `id`. */
function serve(m) {
  if (m.op === 'query' || m.op === 'exec') served = true;
  switch (m.op) {
    case 'query':
      return run(m, (on) => on.query(m.sql, m.params, { rowMode: m.rowMode, parsers: parsersFor(m.text) }).then(plain));
    case 'exec':
      return run(m, (on) => on.exec(m.sql).then((results) => results.map(plain)));
    case 'begin':
      return begin(m);
    case 'end': {
      const open = transactions.get(m.tx);
      if (!open) return fail(m.id, new Error('The transaction has ended'));
      transactions.delete(m.tx);
      open.end(m.commit);
      open.done.then((err) => (err ? fail(m.id, err) : reply(m.id, null)));
      return;
    }
    case 'listen':
      pg.listen(m.channel, (payload) => port.postMessage({ listener: m.listener, payload })).then(
        (stop) => {
          listeners.set(m.listener, stop);
          reply(m.id, null);
        },
        (err) => fail(m.id, err),
      );
      return;
    case 'unlisten': {
      const stop = listeners.get(m.listener);
      listeners.delete(m.listener);
      Promise.resolve(stop?.()).then(
        () => reply(m.id, null),
        (err) => fail(m.id, err),
      );
      return;
    }
    case 'close':
      pg.close().then(
        () => {
          reply(m.id, null);
          port.close();
        },
        (err) => fail(m.id, err),
      );
      return;
    default:
      fail(m.id, new Error(`Unknown operation ${m.op}`));
  }
}
