import type { Config } from './config.ts';
import { type Database, openDatabase } from './db/client.ts';
import { type KeyRing, loadKeyRing } from './lib/crypto.ts';

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
