import type { Deps, ServiceContext } from '../../context.ts';
import type { Executor } from '../../db/client.ts';
import type { ConnectionRow } from '../../db/schema/index.ts';
import { type ConnectionEvent, recordConnectionEvent } from '../activity/index.ts';
import { emitEvent } from '../webhooks/index.ts';

type EventRow = Pick<ConnectionRow, 'id' | 'accountId' | 'providerId' | 'status' | 'lastError'>;

/**
 * One event in a connection's life, told to everyone who listens: the activity log records it; the account's
 * webhooks hear `connection.created`, and `connection.<status>` when the status moved into `expired`, `error` or
 * `revoked`,
 * written on `db`, the executor that wrote the change, so the webhook stands or falls with it. `actor` names
 * who acted in the log (a request's context); without it the event is the system's.
 */
export async function connectionEvent(
  deps: Deps,
  db: Executor,
  change: {
    before: Pick<ConnectionRow, 'status'>;
    after: EventRow;
    event: ConnectionEvent;
    error?: string;
    /** `created`: it replaced a connection of the same account at the provider. */
    reconnected?: boolean;
  },
  actor?: ServiceContext,
): Promise<void> {
  const { before, after } = change;
  if (change.event === 'created') {
    void recordConnectionEvent(
      deps,
      after.accountId,
      { connectionId: after.id, providerId: after.providerId, event: 'created' },
      actor,
    );
    await emitEvent(db, after.accountId, 'connection.created', {
      connectionId: after.id,
      providerId: after.providerId,
      status: after.status,
      reconnected: change.reconnected ?? false,
    });
    return;
  }
  void recordConnectionEvent(
    deps,
    after.accountId,
    {
      connectionId: after.id,
      providerId: after.providerId,
      event: change.event,
      ...(change.error ? { error: change.error } : {}),
    },
    actor,
  );
  if (after.status === before.status || after.status === 'active') return;
  await emitEvent(db, after.accountId, `connection.${after.status}` as const, {
    connectionId: after.id,
    providerId: after.providerId,
    status: after.status,
    previousStatus: before.status,
    lastError: after.lastError,
  });
}
