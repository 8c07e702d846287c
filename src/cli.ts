import { parseArgs } from 'node:util';
import pino from 'pino';
import { SCOPES, type Scope } from './auth/scopes.ts';
import { ConfigError, loadConfig } from './config.ts';
import type { Actor, PublicContext, ServiceContext } from './lib/context.ts';
import { generateKeySpec } from './lib/crypto.ts';
import { AppError } from './lib/errors.ts';
import { newId } from './lib/ids.ts';
import * as accountsRepo from './modules/accounts/repo.ts';
import { createAccount, createPat, hashPassword } from './modules/auth/service.ts';
import { addCredits } from './modules/credits/service.ts';
import { createDeps, openRuntime } from './runtime.ts';

/**
 * `switchboard <command>`: operator tasks that call the same services as the API. A command declares its
 * options; `--help` is generated from them.
 */
interface Command {
  summary: string;
  usage: string;
  options: Record<string, { type: 'string' | 'boolean'; required?: boolean; help: string }>;
  /** Whether it needs the database (opened and migrated before it runs). */
  database: boolean;
  run(args: Record<string, string | boolean | undefined>, env: CliEnv): Promise<void>;
}

interface CliEnv {
  ctx: PublicContext;
  out: (line: string) => void;
}

class UsageError extends Error {}

const COMMANDS: Record<string, Command> = {
  migrate: {
    summary: 'Apply pending database migrations (also done at every start)',
    usage: 'switchboard migrate',
    options: {},
    database: true,
    async run(_args, { out }) {
      out('Migrations applied.');
    },
  },
  'account create': {
    summary: 'Create an account (with its starting credits)',
    usage: 'switchboard account create --email EMAIL --password PASSWORD [--name NAME]',
    options: {
      email: { type: 'string', required: true, help: 'e-mail address (unique, any case)' },
      password: { type: 'string', required: true, help: 'at least 8 characters' },
      name: { type: 'string', help: 'display name (default: the part of the e-mail before @)' },
    },
    database: true,
    async run(args, { ctx, out }) {
      const email = String(args.email);
      const password = String(args.password);
      if (password.length < 8) throw new UsageError('--password must be at least 8 characters');
      const name = typeof args.name === 'string' ? args.name : (email.split('@')[0] ?? email);
      const { id } = await createAccount(ctx, { email, name, passwordHash: await hashPassword(password) });
      out(`Created account ${id} <${email}> with ${ctx.deps.config.initialCredits} credits.`);
    },
  },
  'token create': {
    summary: 'Create a personal access token for an account and print it',
    usage: 'switchboard token create --email EMAIL --scopes SCOPE[,SCOPE...] [--expires-in SECONDS] [--name NAME]',
    options: {
      email: { type: 'string', required: true, help: 'the account' },
      scopes: { type: 'string', required: true, help: `comma-separated: ${Object.keys(SCOPES).join(', ')}` },
      'expires-in': { type: 'string', help: 'lifetime in seconds (default PAT_DEFAULT_EXPIRES_IN)' },
      name: { type: 'string', help: 'a label for the token (default "cli")' },
    },
    database: true,
    async run(args, { ctx, out }) {
      const account = await accountsRepo.findAccountByEmail(ctx.db, String(args.email));
      if (!account) throw new UsageError(`No account with e-mail ${String(args.email)}`);
      const scopes = String(args.scopes)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = scopes.filter((s) => !Object.hasOwn(SCOPES, s));
      if (unknown.length) throw new UsageError(`Unknown scope(s): ${unknown.join(', ')}`);
      const expiresIn = args['expires-in'] === undefined ? undefined : Number(args['expires-in']);
      if (expiresIn !== undefined && (!Number.isInteger(expiresIn) || expiresIn <= 0)) {
        throw new UsageError('--expires-in must be a positive number of seconds');
      }
      const created = await createPat(cliContext(ctx, account.id), {
        name: typeof args.name === 'string' ? args.name : 'cli',
        scopes: scopes as Scope[],
        ...(expiresIn ? { expires_in: expiresIn } : {}),
      });
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
      const amount = Number(args.amount);
      if (!Number.isSafeInteger(amount) || amount <= 0) throw new UsageError('--amount must be a positive integer');
      const { transaction, duplicate } = await addCredits(ctx, {
        email: String(args.email),
        amount,
        idempotencyKey: String(args['idempotency-key']),
        ...(typeof args.description === 'string' ? { description: args.description } : {}),
      });
      out(
        duplicate
          ? `Already applied (key seen before): transaction ${transaction.id}, +${transaction.amount} credits; nothing added.`
          : `Added ${transaction.amount} credits: balance ${transaction.balanceAfter} (transaction ${transaction.id}).`,
      );
    },
  },
  'keys generate': {
    summary: 'Print a fresh value for ENCRYPTION_KEYS (put new keys first to rotate)',
    usage: 'switchboard keys generate [--id KEY_ID]',
    options: { id: { type: 'string', help: 'key id (default: derived from the date)' } },
    database: false,
    async run(args, { out }) {
      out(generateKeySpec(typeof args.id === 'string' ? args.id : undefined));
    },
  },
};

/** The CLI acts as the account itself, with every scope. */
function cliContext(ctx: PublicContext, accountId: string): ServiceContext {
  const scopes = new Set(Object.keys(SCOPES) as Scope[]);
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
    'Run `switchboard <command> --help` for its options. Settings come from the environment (see README).',
  ].join('\n');
}

function commandHelp(c: Command): string {
  const opts = Object.entries(c.options).map(
    ([o, spec]) =>
      `  --${o}${spec.type === 'string' ? ' VALUE' : ''}${spec.required ? ' (required)' : ''}\n      ${spec.help}`,
  );
  return [`${c.summary}.`, '', `Usage: ${c.usage}`, ...(opts.length ? ['', 'Options:', ...opts] : [])].join('\n');
}

export async function runCli(argv: string[], out = (l: string) => console.log(l)): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const name = [`${words[0] ?? ''} ${words[1] ?? ''}`, words[0] ?? '']
    .find((n) => n.trim() && COMMANDS[n.trim()])
    ?.trim();
  if (!name) {
    if (argv.length === 0 || argv.includes('--help') || argv.includes('-h')) {
      out(help());
      return argv.length === 0 ? 2 : 0;
    }
    console.error(`Unknown command: ${words.join(' ')}\n\n${help()}`);
    return 2;
  }
  const command = COMMANDS[name] as Command;
  const rest = argv.slice(name.split(' ').length);
  if (rest.includes('--help') || rest.includes('-h')) {
    out(commandHelp(command));
    return 0;
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(command.options).map(([k, v]) => [k, { type: v.type }])),
      strict: true,
      allowPositionals: false,
    }).values as Record<string, string | boolean | undefined>;
    const missing = Object.entries(command.options).filter(([k, v]) => v.required && values[k] === undefined);
    if (missing.length) throw new UsageError(`Missing ${missing.map(([k]) => `--${k}`).join(', ')}`);
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${commandHelp(command)}`);
    return 2;
  }

  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel });
  const runtime = command.database ? await openRuntime(config) : undefined;
  try {
    const deps = runtime ? createDeps(config, runtime, log) : undefined;
    const ctx = { deps, db: deps?.database.db, log, requestId: newId('request'), ip: 'cli' } as PublicContext;
    await command.run(values, { ctx, out });
    await deps?.background.drain();
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof AppError) {
      console.error(err.message);
      return err instanceof UsageError ? 2 : 1;
    }
    throw err;
  } finally {
    await runtime?.database.close();
  }
}

if (
  import.meta.url === `file://${process.argv[1]}` ||
  process.argv[1]?.endsWith('switchboard.js') ||
  process.argv[1]?.endsWith('switchboard')
) {
  runCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
