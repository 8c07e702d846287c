import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirInUseError } from './db/client.ts';
import { providerCatalog } from './modules/providers/index.ts';
import { setupNotices } from './modules/system/index.ts';
import { openRuntime } from './runtime.ts';

/** Process entry: config -> database -> app -> listen; SIGTERM/SIGINT drain in-flight requests, then close. */
async function main(): Promise<void> {
  const started = performance.now();
  const config = loadConfig();
  // The embedded database starts on its own thread (about half a second) while this one reads and validates the
  // connector catalog, which buildApp then finds ready; a bad provider file still stops start-up.
  const opening = openRuntime(config);
  providerCatalog(config);
  const runtime = await opening;
  const databaseReady = performance.now();
  const app = await buildApp({ config, database: runtime.database, keyRing: runtime.keyRing });
  if (runtime.generatedKeyFile) {
    app.log.warn(
      { file: runtime.generatedKeyFile },
      'Generated a new encryption key for stored secrets. Back this file up: without it, stored secrets cannot be read. Set ENCRYPTION_KEYS in production.',
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // SIGTERM (an orchestrator's stop): first drain, so `/readyz` turns 503 and a balancer polling it stops sending
    // while requests are still served; SIGINT (Ctrl-C at a terminal) closes at once.
    const drainMs = signal === 'SIGTERM' ? config.shutdownDrainMs : 0;
    if (drainMs > 0) {
      app.deps.lifecycle.draining = true;
      app.log.info(
        { signal, drainMs },
        'draining: /readyz answers 503; requests are still served until the listener closes',
      );
      await new Promise((r) => setTimeout(r, drainMs));
    }
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    try {
      await app.close();
      await runtime.database.close();
      app.log.info({ signal }, 'Switchboard stopped: in-flight requests finished, database closed');
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
  app.log.info(
    {
      url: config.baseUrl,
      driver: runtime.database.driver,
      startupMs: Math.round(performance.now() - started),
      // Where start-up went: opening and migrating the database, then building the app and listening.
      databaseMs: Math.round(databaseReady - started),
      // Since the process started: node itself and module loading come before main().
      uptimeMs: Math.round(process.uptime() * 1000),
    },
    'Switchboard ready',
  );
  for (const notice of setupNotices(config)) app.log.warn({ how: notice.how }, notice.title);
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof DataDirInUseError) {
    console.error(err.message);
  } else {
    console.error('Switchboard failed to start:', err);
  }
  process.exit(1);
});
