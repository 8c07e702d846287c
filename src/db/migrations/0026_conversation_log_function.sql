-- A batch of agent chat writes (src/modules/agents/events.service.ts, ConversationLog; repo.ts,
-- writeConversationLog, says what it writes) as a function, so that its plan is made once per connection and
-- kept (PL/pgSQL caches the plans of its statements) instead of made on every call, as the credit bank's batch
-- (0018): a chat answers only once its batch is committed (read-your-writes across instances), so the batch's
-- statement is on every answer's path. Answers the conversations whose events it stored, each notified on
-- `channel` at commit.
--
-- Its transaction commits asynchronously (synchronous_commit off for it alone): the commit is visible to every
-- session at once, as a synchronous one, but does not wait for the WAL to reach the disk, which was a third to
-- a half of the call's time on PostgreSQL here (0.8 to 1.1 ms at best against 1.1 to 3.0 ms, 300 calls, three
-- interleaved rounds). What that risks is the last few hundred milliseconds of chat writes (3 x
-- wal_writer_delay) if the database's machine itself stops (an operating-system crash or power loss; a crash of
-- PostgreSQL alone loses nothing): less than before this function, when a crash of the service lost the writes
-- still queued in its group commit window.
CREATE OR REPLACE FUNCTION agents_write_conversation_log(
  p_conversations jsonb, p_messages jsonb, p_events jsonb, p_touches jsonb, p_runs jsonb, p_ended_runs jsonb,
  p_channel text)
RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
    WITH cv AS (
      SELECT * FROM jsonb_to_recordset(p_conversations) AS x(
        "id" text, "accountId" text, "agentId" text, "endUserId" text, "title" text, "at" timestamptz,
        "lastActivityAt" timestamptz)
    ), ci AS (
      INSERT INTO conversations (id, account_id, agent_id, end_user_id, title, last_activity_at, created_at, updated_at)
      SELECT cv.id, cv."accountId", cv."agentId", cv."endUserId", cv.title, cv."lastActivityAt", cv.at, cv."lastActivityAt"
      FROM cv JOIN agents a ON a.id = cv."agentId" AND a.account_id = cv."accountId"
      ON CONFLICT (id) DO NOTHING
      RETURNING conversations.id
    ), m AS (
      SELECT * FROM jsonb_to_recordset(p_messages) AS x(
        "id" text, "conversationId" text, "role" text, "content" text, "toolCalls" jsonb, "toolCallId" text,
        "toolName" text, "error" text, "at" timestamptz, n int)
    ), e AS (
      SELECT * FROM jsonb_to_recordset(p_events) AS x(
        "conversationId" text, "type" text, "data" jsonb, "at" timestamptz, n int)
    ), t AS (
      SELECT * FROM jsonb_to_recordset(p_touches) AS x("conversationId" text, "at" timestamptz)
    ), r AS (
      SELECT * FROM jsonb_to_recordset(p_runs) AS x("id" text, "conversationId" text, "leaseMs" int)
    ), live AS (
      SELECT ci.id FROM ci
      UNION
      SELECT c.id FROM conversations c
      WHERE c.id IN (SELECT m."conversationId" FROM m UNION SELECT e."conversationId" FROM e
        UNION SELECT t."conversationId" FROM t UNION SELECT r."conversationId" FROM r)
    ), mi AS (
      INSERT INTO messages (id, conversation_id, role, content, tool_calls, tool_call_id, tool_name, error, created_at)
      SELECT m.id, m."conversationId", m.role, m.content, m."toolCalls", m."toolCallId", m."toolName", m.error, m.at
      FROM m WHERE m."conversationId" IN (SELECT live.id FROM live) ORDER BY m.n
      ON CONFLICT (id) DO NOTHING
    ), ri AS (
      INSERT INTO conversation_runs (id, conversation_id, lease_expires_at)
      SELECT r.id, r."conversationId", now() + r."leaseMs" * interval '1 millisecond'
      FROM r WHERE r."conversationId" IN (SELECT live.id FROM live)
      ON CONFLICT (id) DO NOTHING
    ), rd AS (
      DELETE FROM conversation_runs WHERE conversation_runs.id IN (SELECT jsonb_array_elements_text(p_ended_runs))
    ), ei AS (
      INSERT INTO conversation_events (conversation_id, type, data, created_at)
      SELECT e."conversationId", e.type, e.data, e.at
      FROM e WHERE e."conversationId" IN (SELECT live.id FROM live) ORDER BY e.n
      RETURNING conversation_events.conversation_id
    ), tu AS (
      UPDATE conversations c SET last_activity_at = t.at, updated_at = t.at
      FROM (SELECT t."conversationId", max(t.at) AS at FROM t GROUP BY t."conversationId") t
      WHERE c.id = t."conversationId"
    )
    SELECT d.conversation_id || pg_notify(p_channel, d.conversation_id)::text
    FROM (SELECT DISTINCT ei.conversation_id FROM ei) d;
END
$fn$;
