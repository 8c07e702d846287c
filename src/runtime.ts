import type { Redis } from 'ioredis';
import { ActorCache } from './access/actor-cache.ts';
import { Sandbox } from './code-runner/sandbox.ts';
import { AGENT_DELETION, AGENT_PORTS, AGENT_TOOL_GROUPS, createAreaState } from './composition.ts';
import type { Config } from './config.ts';
import type { BaseDeps, Deps } from './context.ts';
import { type Database, openDatabase } from './db/client.ts';
import { BackgroundTasks } from './lib/background.ts';
import { type KeyRing, loadKeyRing } from './lib/crypto.ts';
import type { Logger } from './lib/logger.ts';
import { NotificationHub } from './lib/notifications.ts';
import { createLlmGateway } from './llm-upstreams/gateway.ts';

export interface Runtime {
  database: Database;
  keyRing: KeyRing;
  /** Set when a key file was generated on this start: the caller warns about backing it up. */
  generatedKeyFile?: string | undefined;
}

/** Opens the database (PGlite under DATA_DIR, or PostgreSQL), applies migrations and loads the key ring. */
export async function openRuntime(config: Config, opts: { migrate?: boolean } = {}): Promise<Runtime> {
  const { ring, generatedAt } = loadKeyRing(config.encryptionKeys, config.dataDir);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.databasePoolMax,
  });
  try {
    if (opts.migrate !== false) await database.migrate();
  } catch (err) {
    await database.close();
    throw err;
  }
  return { database, keyRing: ring, generatedKeyFile: generatedAt };
}

/** The dependencies every service receives, the areas' state with them; the app and the CLI build them the same way. */
export function createDeps(
  config: Config,
  runtime: Pick<Runtime, 'database' | 'keyRing'> & { redis?: Redis | undefined },
  log: Logger,
): Deps {
  const base: BaseDeps = {
    config,
    redis: runtime.redis,
    database: runtime.database,
    keyRing: runtime.keyRing,
    log,
    llm: createLlmGateway(config, log),
    actorCache: new ActorCache(config.authCacheTtlMs),
    background: new BackgroundTasks(log),
    notifications: new NotificationHub(runtime.database, log),
    lifecycle: { draining: false },
    agentPorts: AGENT_PORTS,
    toolGroups: AGENT_TOOL_GROUPS,
    agentDeletion: AGENT_DELETION,
    sandbox: new Sandbox({
      workers: config.sandbox.workers,
      memoryBytes: config.sandbox.memoryMb * 1024 * 1024,
      pythonProcesses: config.sandbox.pythonProcesses,
      pythonMemoryBytes: config.sandbox.pythonMemoryMb * 1024 * 1024,
      queueMax: config.sandbox.queueMax,
      queueTimeoutMs: config.sandbox.queueTimeoutMs,
      allowHosts: config.ssrfAllowHosts,
    }),
  };
  return { ...base, areas: createAreaState(base) };
}
