import { z } from 'zod';
import { SCOPES } from '../../access/scopes.ts';
import type { App } from '../../http/types.ts';
import { ServiceUnavailableError } from '../../lib/errors.ts';

const AuthScope = z.object({ name: z.string(), description: z.string() }).meta({ id: 'AuthScope' });

/**
 * Operations endpoints at the origin root. `databaseAnswered` is told when /readyz's ping succeeds (it ends a
 * known outage at once: see DatabaseOutage).
 */
export async function systemRoutes(app: App, databaseAnswered: () => void = () => {}): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: { tags: ['Operations'], summary: 'Liveness', response: { 200: z.object({ status: z.literal('ok') }) } },
      config: { auth: 'public', rateLimit: false },
    },
    async () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['Operations'],
        summary: 'Readiness: the database answers, live events are heard, and the process is not draining',
        description:
          "503 `Draining: shutting down` once SIGTERM was received (requests are still served for SHUTDOWN_DRAIN_MS); 503 `Database unreachable` when the database does not answer; 503 `Notification listener reconnecting` while the connection that hears other instances' events (conversation event streams) is being made again after it dropped (both, joined by `; `, during a full outage).",
        response: { 200: z.object({ status: z.literal('ready') }) },
      },
      config: { auth: 'public', rateLimit: false },
    },
    async () => {
      // Not an outage: this instance is going away; a balancer sends elsewhere, a client retries elsewhere.
      if (app.deps.lifecycle.draining) throw new ServiceUnavailableError('Draining: shutting down', 1);
      const faults: string[] = [];
      try {
        await app.deps.database.ping();
        databaseAnswered();
      } catch {
        faults.push('Database unreachable');
      }
      if (app.deps.notifications.listenerDown) faults.push('notification listener reconnecting');
      if (faults.length > 0) {
        const message = faults.join('; ');
        throw new ServiceUnavailableError(message.charAt(0).toUpperCase() + message.slice(1));
      }
      return { status: 'ready' as const };
    },
  );
}

/** `GET /api/v1/auth-scopes`: any bearer. */
export async function scopeRoutes(app: App): Promise<void> {
  app.get(
    '/auth-scopes',
    {
      schema: {
        tags: ['Auth'],
        summary: 'The scopes a token can hold, with descriptions',
        response: { 200: z.object({ data: z.array(AuthScope) }) },
      },
    },
    async () => ({ data: Object.entries(SCOPES).map(([name, description]) => ({ name, description })) }),
  );
}
