import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { ALL_SCOPES, isScope, SCOPES, type Scope } from './access/scopes.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { Actor, PublicContext, ServiceContext } from './context.ts';
import { generateKeySpec, parseKeys } from './lib/crypto.ts';
import { AppError, NotFoundError, ValidationError } from './lib/errors.ts';
import type { Logger } from './lib/logger.ts';

/**
 * `switchboard <command>`: operator tasks that call the same service functions as the API, so a rule holds
 * whichever way an action comes in. A command is one entry of COMMANDS: its options (help is generated from
 * them), whether it needs the database, and `run`. Modules that open the database load only when a command
 * needs them, so `--help` and `keys generate` start quickly.
 *
 * Exit codes: 0 done, 1 the action failed (e.g. the e-mail is taken), 2 a usage fault (unknown command or
 * option, a missing or invalid value, a bad setting).
 */

interface OptionSpec {
  type: 'string' | 'boolean';
  required?: boolean;
  help: string;
}

type Values = Record<string, string | boolean | undefined>;

interface Command {
  summary: string;
  usage: string;
  options: Record<string, OptionSpec>;
  /** Required arguments after the command's words (`jobs retry ID`), in order. */
  positionals?: Array<{ name: string; help: string }>;
  /** Opens the database (applying pending migrations) before `run`, and closes it after. */
  database: boolean;
  run(args: Values, env: CliEnv, positionals: string[]): Promise<void>;
}

interface CliEnv {
  /** Set for commands with `database: true`. */
  ctx: PublicContext;
  config: Config;
  /** The command's result, on stdout (a PAT alone on its line, so `$(switchboard token create ...)` works). */
  out(line: string): void;
  /** Notes for the operator, on stderr. */
  note(line: string): void;
}

/** A fault of the invocation: exit code 2 and the command's help. */
class UsageError extends Error {}

const str = (v: string | boolean | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/** A comma-separated option as a list (`--status dead,queued`). */
const list = (v: string | boolean | undefined): string[] =>
  (str(v) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** The option that carries an API field: `expires_in` and `body.expires_in` are `--expires-in`. */
const flagOf = (field: string): string => `--${field.replace(/^body\./, '').replaceAll('_', '-')}`;

/** Validates CLI input with the API's own schema, so both accept exactly the same values. */
function parseWith<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new UsageError(parsed.error.issues.map((i) => `${flagOf(String(i.path[0] ?? ''))}: ${i.message}`).join('\n'));
}

const COMMANDS: Record<string, Command> = {
  migrate: {
    summary: 'Apply pending database migrations (the server also does this at every start)',
    usage: 'switchboard migrate',
    options: {},
    database: true,
    async run(_args, { ctx, config, out }) {
      const where = ctx.deps.database.driver === 'pg' ? 'PostgreSQL' : `PGlite under ${config.dataDir}`;
      out(`Migrations applied (${where}).`);
    },
  },
  'account create': {
    summary: 'Create an account with its starting credits (works even when SIGNUP_ENABLED=false)',
    usage: 'switchboard account create --email EMAIL --password PASSWORD [--name NAME]',
    options: {
      email: { type: 'string', required: true, help: 'e-mail address (unique, whatever its case)' },
      password: { type: 'string', required: true, help: 'at least 8 characters' },
      name: { type: 'string', help: 'display name (default: the part of the e-mail before @)' },
    },
    database: true,
    async run(args, { ctx, out }) {
      const { Signup } = await import('./modules/auth/index.ts');
      const { hashPassword } = await import('./modules/auth/index.ts');
      const { createAccount } = await import('./modules/accounts/index.ts');
      const email = str(args.email) ?? '';
      const input = parseWith(Signup, {
        email,
        password: str(args.password),
        name: str(args.name) ?? email.split('@')[0],
      });
      const { id } = await createAccount(ctx, {
        email: input.email,
        name: input.name,
        passwordHash: await hashPassword(ctx.deps.config, input.password),
      });
      out(`Created account ${id} <${input.email}> with ${ctx.deps.config.initialCredits} credits.`);
    },
  },
  'token create': {
    summary: 'Create a personal access token for an account and print it',
    usage: 'switchboard token create --email EMAIL --scopes SCOPE[,SCOPE...] [--expires-in SECONDS] [--name NAME]',
    options: {
      email: { type: 'string', required: true, help: 'the account' },
      scopes: { type: 'string', required: true, help: `comma-separated, from: ${ALL_SCOPES.join(', ')}` },
      'expires-in': {
        type: 'string',
        help: 'lifetime in seconds (default PAT_DEFAULT_EXPIRES_IN, at most PAT_MAX_EXPIRES_IN)',
      },
      name: { type: 'string', help: 'a label for the token (default "cli")' },
    },
    database: true,
    async run(args, { ctx, out, note }) {
      const { CreatePat } = await import('./modules/auth/index.ts');
      const { createPat } = await import('./modules/auth/index.ts');
      const { accountIdByEmail } = await import('./modules/accounts/index.ts');
      const expiresIn = str(args['expires-in']);
      const scopes = (str(args.scopes) ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = scopes.filter((s) => !isScope(s));
      if (unknown.length) throw new UsageError(`--scopes: unknown scope ${unknown.join(', ')}`);
      const input = parseWith(CreatePat, {
        name: str(args.name) ?? 'cli',
        scopes,
        ...(expiresIn === undefined ? {} : { expires_in: /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn }),
      });
      const email = str(args.email) ?? '';
      const accountId = await accountIdByEmail(ctx, email);
      if (!accountId) throw new UsageError(`No account with e-mail ${email}`);
      const created = await createPat(cliContext(ctx, accountId), input);
      note(`Created token ${created.id} (${created.scopes.join(', ')}), expires ${created.expires_at}.`);
      out(created.personal_access_token);
    },
  },
  'credits add': {
    summary: 'Add credits to an account, exactly once per idempotency key',
    usage: 'switchboard credits add --email EMAIL --amount CREDITS --idempotency-key KEY [--description TEXT]',
    options: {
      email: { type: 'string', required: true, help: 'the account' },
      amount: { type: 'string', required: true, help: 'credits to add (1 credit = 0.0001 USD)' },
      'idempotency-key': { type: 'string', required: true, help: 'a repeated key adds nothing the second time' },
      description: { type: 'string', help: 'shown in the credit history (default "Top-up")' },
    },
    database: true,
    async run(args, { ctx, out }) {
      const { addCredits } = await import('./modules/credits/index.ts');
      const { accountIdByEmail } = await import('./modules/accounts/index.ts');
      const amount = Number(args.amount);
      if (!Number.isSafeInteger(amount) || amount <= 0) throw new UsageError('--amount must be a positive integer');
      const description = str(args.description);
      const email = str(args.email) ?? '';
      const accountId = await accountIdByEmail(ctx, email);
      if (!accountId) throw new NotFoundError(`No account with e-mail ${email}`);
      const { transaction, duplicate } = await addCredits(ctx, {
        accountId,
        amount,
        idempotencyKey: str(args['idempotency-key']) ?? '',
        ...(description === undefined ? {} : { description }),
      });
      out(
        duplicate
          ? `Already applied (key seen before): transaction ${transaction.id}, +${transaction.amount} credits; nothing added.`
          : `Added ${transaction.amount} credits: balance ${transaction.balanceAfter} (transaction ${transaction.id}).`,
      );
    },
  },
  'keys generate': {
    summary: 'Print a fresh value for ENCRYPTION_KEYS (to rotate, put it first and keep the old keys after it)',
    usage: 'switchboard keys generate [--id KEY_ID]',
    options: { id: { type: 'string', help: 'key id, letters, digits, _ and - (default: derived from the time)' } },
    database: false,
    async run(args, { out }) {
      const spec = generateKeySpec(str(args.id));
      try {
        parseKeys(spec);
      } catch (err) {
        throw new UsageError(`--id: ${(err as Error).message.replace(/^ENCRYPTION_KEYS: /, '')}`);
      }
      out(spec);
    },
  },
  'keys rotate': {
    summary: 'Add a new OAuth signing key; the old one keeps verifying until the tokens it signed expire',
    usage: 'switchboard keys rotate',
    options: {},
    database: true,
    async run(_args, { ctx, out }) {
      const { keysRotate } = await import('./access/oauth/cli-commands.ts');
      for (const line of await keysRotate(ctx)) out(line);
    },
  },
  'jobs list': {
    summary: 'List background jobs, newest first (every account; payloads are not shown)',
    usage: 'switchboard jobs list [--status STATUS[,STATUS...]] [--type TYPE[,TYPE...]] [--limit N] [--json]',
    options: {
      status: { type: 'string', help: 'queued, running, succeeded or dead, comma-separated' },
      type: { type: 'string', help: 'job types, comma-separated (e.g. connections.refresh-expiring)' },
      limit: { type: 'string', help: 'at most this many, 1-1000 (default 50)' },
      json: { type: 'boolean', help: 'one JSON object per line instead of a table' },
    },
    database: true,
    async run(args, { ctx, out, note }) {
      const { JOB_STATUSES } = await import('./db/schema/jobs.ts');
      const { listJobs } = await import('./jobs/queue.ts');
      const statuses = list(args.status);
      const bad = statuses.filter((s) => !(JOB_STATUSES as readonly string[]).includes(s));
      if (bad.length) throw new UsageError(`--status: unknown status ${bad.join(', ')} (${JOB_STATUSES.join(', ')})`);
      const limitText = str(args.limit) ?? '50';
      const limit = /^\d+$/.test(limitText) ? Number(limitText) : Number.NaN;
      if (!(limit >= 1 && limit <= 1000)) throw new UsageError('--limit must be an integer from 1 to 1000');
      const jobs = await listJobs(ctx.db, {
        statuses: statuses as Array<(typeof JOB_STATUSES)[number]>,
        types: list(args.type),
        limit,
      });
      if (args.json === true) {
        for (const job of jobs) out(JSON.stringify(job));
        return;
      }
      if (jobs.length === 0) {
        note('No jobs match.');
        return;
      }
      const rows = jobs.map((j) => [
        j.id,
        j.type,
        j.status,
        `${j.attempts}/${j.maxAttempts}`,
        j.status === 'queued' || j.status === 'running' ? j.runAt : (j.finishedAt ?? j.updatedAt),
        (j.lastError ?? '').replace(/\s+/g, ' ').slice(0, 100),
      ]);
      const header = ['ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'RUN AT / FINISHED', 'LAST ERROR'];
      const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
      for (const r of [header, ...rows])
        out(
          r
            .map((c, i) => c.padEnd(widths[i] ?? 0))
            .join('  ')
            .trimEnd(),
        );
    },
  },
  'jobs retry': {
    summary: 'Queue a dead job again, due now, with a fresh set of attempts',
    usage: 'switchboard jobs retry ID',
    options: {},
    positionals: [{ name: 'ID', help: 'the job (job_...), as `jobs list --status dead` shows it' }],
    database: true,
    async run(_args, { ctx, out }, [id = '']) {
      const { JOB_CATALOG } = await import('./composition.ts');
      const { retryJob } = await import('./jobs/queue.ts');
      const job = await retryJob(ctx.db, JOB_CATALOG, id);
      out(`Queued ${job.type} job ${job.id} again; a running instance picks it up within JOBS_POLL_INTERVAL_MS.`);
    },
  },
  'client allow-whitelabel': {
    summary: 'Let an account give its OAuth clients the whitelabel-customer role (or withdraw it with --revoke)',
    usage: 'switchboard client allow-whitelabel --email EMAIL [--revoke]',
    options: {
      email: { type: 'string', required: true, help: 'the account' },
      revoke: { type: 'boolean', help: 'withdraw the permission; its clients lose the role at once' },
    },
    database: true,
    async run(args, { ctx, out }) {
      const { clientAllowWhitelabel } = await import('./access/oauth/cli-commands.ts');
      out(await clientAllowWhitelabel(ctx, String(args.email), args.revoke !== true));
    },
  },
};

/** The CLI acts as the account itself, with every first-party scope (like a session). */
function cliContext(ctx: PublicContext, accountId: string): ServiceContext {
  const scopes = new Set<Scope>(Object.keys(SCOPES) as Scope[]);
  const actor: Actor = {
    kind: 'cli',
    accountId,
    tokenId: 'cli',
    scopes,
    providerPermissions: {},
    defaultProviderPermission: 'read-write',
    creditBalance: 0,
  };
  return { ...ctx, accountId, actor, scopes };
}

function help(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    'Usage: switchboard <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `switchboard <command> --help` for its options. Settings (DATA_DIR, DATABASE_URL, ENCRYPTION_KEYS ...)',
    'come from the environment, as for the server; see docs/configuration.md.',
  ].join('\n');
}

function commandHelp(name: string, c: Command): string {
  const args = (c.positionals ?? []).map((p) => `  ${p.name}\n      ${p.help}`);
  const opts = Object.entries(c.options).map(
    ([o, spec]) =>
      `  --${o}${spec.type === 'string' ? ' VALUE' : ''}${spec.required ? ' (required)' : ''}\n      ${spec.help}`,
  );
  return [
    `switchboard ${name}: ${c.summary}.`,
    '',
    `Usage: ${c.usage}`,
    ...(args.length ? ['', 'Arguments:', ...args] : []),
    ...(opts.length ? ['', 'Options:', ...opts] : []),
  ].join('\n');
}

function usageReminder(name: string, c: Command): string {
  return `Usage: ${c.usage}\n(\`switchboard ${name} --help\` describes the options)`;
}

/** The command named by the leading words of argv (`token create ...`), and the arguments after it. */
function findCommand(argv: string[]): { name: string; command: Command; rest: string[] } | undefined {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-') || words.length === 2) break;
    words.push(a);
  }
  for (let n = words.length; n > 0; n--) {
    const name = words.slice(0, n).join(' ');
    const command = COMMANDS[name];
    if (command) return { name, command, rest: argv.slice(n) };
  }
  return undefined;
}

/** The commands' names (`token create`) and long options, for the documentation check (test/docs). */
export function cliCommands(): Array<{ name: string; options: string[] }> {
  return Object.entries(COMMANDS).map(([name, c]) => ({ name, options: Object.keys(c.options) }));
}

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const stdio: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
};

/** Runs one invocation and answers its exit code; never exits the process itself. */
export async function runCli(argv: string[], io: CliIo = stdio): Promise<number> {
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (argv[0] === 'help') return runCli([...argv.slice(1), '--help'], io);
  const found = findCommand(argv);
  if (!found) {
    if (argv.length === 0 || (wantsHelp && !argv.some((a) => !a.startsWith('-')))) {
      (argv.length === 0 ? io.err : io.out)(help());
      return argv.length === 0 ? 2 : 0;
    }
    const words = argv.filter((a) => !a.startsWith('-'));
    io.err(`Unknown command: ${words.slice(0, 2).join(' ') || argv.join(' ')}\n\n${help()}`);
    return 2;
  }
  const { name, command, rest } = found;
  if (wantsHelp) {
    io.out(commandHelp(name, command));
    return 0;
  }

  let values: Values;
  let positionals: string[];
  let config: Config;
  try {
    const parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(command.options).map(([k, v]) => [k, { type: v.type }])),
      strict: true,
      allowPositionals: Boolean(command.positionals),
    });
    values = parsed.values as Values;
    positionals = parsed.positionals;
    const wanted = command.positionals ?? [];
    if (positionals.length > wanted.length) throw new UsageError(`Unexpected argument: ${positionals[wanted.length]}`);
    const missing = [
      ...wanted.slice(positionals.length).map((p) => p.name),
      ...Object.entries(command.options)
        .filter(([k, v]) => v.required && values[k] === undefined)
        .map(([k]) => `--${k}`),
    ];
    if (missing.length) throw new UsageError(`Missing ${missing.join(', ')}`);
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(err.message);
    } else {
      io.err(`${err instanceof Error ? err.message : String(err)}\n${usageReminder(name, command)}`);
    }
    return 2;
  }

  let opened: { ctx: PublicContext; close(): Promise<void> } | undefined;
  const env: CliEnv = {
    get ctx(): PublicContext {
      if (!opened) throw new Error(`${name}: declare database: true to use the database`);
      return opened.ctx;
    },
    config,
    out: io.out,
    note: io.err,
  };
  try {
    if (command.database) opened = await openContext(config, io);
    await command.run(values, env, positionals);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n${usageReminder(name, command)}`);
      return 2;
    }
    if (err instanceof ValidationError) {
      io.err(err.details.length ? err.details.map((d) => `${flagOf(d.field)}: ${d.message}`).join('\n') : err.message);
      return 2;
    }
    // Loaded already when a command opened the database; imported here so `--help` need not load it.
    const { DataDirInUseError } = await import('./db/client.ts');
    if (err instanceof AppError || err instanceof DataDirInUseError) {
      io.err(err.message);
      return 1;
    }
    throw err;
  } finally {
    await opened?.close();
  }
}

/** Database, key ring and the services' dependencies, built as the server builds them; logs go to stderr. */
async function openContext(config: Config, io: CliIo): Promise<{ ctx: PublicContext; close(): Promise<void> }> {
  const { default: pino } = await import('pino');
  const { createDeps, openRuntime } = await import('./runtime.ts');
  const { newId } = await import('./lib/ids.ts');
  // The CLI's own output says what happened; the services' info lines would only repeat it.
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel }, pino.destination(2)) as Logger;
  const runtime = await openRuntime(config);
  if (runtime.generatedKeyFile) {
    io.err(
      `Generated a new encryption key in ${runtime.generatedKeyFile}. Back it up: without it stored secrets cannot be read. Set ENCRYPTION_KEYS in production.`,
    );
  }
  const deps = createDeps(config, runtime, log);
  return {
    ctx: { deps, db: deps.database.db, log, requestId: newId('request'), ip: 'cli' },
    async close() {
      await (await import('./modules/credits/index.ts')).closeCredits(deps); // drains background work too
      await deps.background.drain();
      await deps.sandbox.close();
      await runtime.database.close();
    },
  };
}

/** Entry point of `bin/switchboard.js` and of `tsx src/cli.ts`: runs, then exits with the command's code. */
export async function main(argv = process.argv.slice(2)): Promise<void> {
  let code: number;
  try {
    code = await runCli(argv);
  } catch (err) {
    process.stderr.write(`switchboard: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    code = 1;
  }
  // Exit explicitly: a client library may keep a timer or socket alive; flush stdout first.
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  process.exit(code);
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) await main();
