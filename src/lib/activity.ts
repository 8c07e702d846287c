/** What one row of the activity log says: written by modules/activity, also recorded by the agent runtime. */

export type ActivityVia = 'api' | 'mcp' | 'use-agent' | 'agent-chat' | 'task' | 'channel' | 'system';
export type ActivityStatus = 'ok' | 'error' | 'refused' | 'blocked';

export interface ActivityEntry {
  kind: 'tool-call' | 'agent-run' | 'connection';
  via: ActivityVia;
  status: ActivityStatus;
  tool?: string | undefined;
  mode?: 'read' | 'write' | undefined;
  connectionId?: string | undefined;
  providerId?: string | undefined;
  agentId?: string | undefined;
  agentName?: string | undefined;
  durationMs?: number | undefined;
  credits?: number | undefined;
  args?: unknown;
  result?: unknown;
  error?: string | undefined;
}

/** Who acts and through what, for the rows of one run (an agent's calls carry its id and name). */
export interface ActivitySource {
  via: ActivityVia;
  agentId?: string | undefined;
  agentName?: string | undefined;
}
