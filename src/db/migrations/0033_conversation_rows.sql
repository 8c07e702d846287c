-- What an agent chat's answer names, written on its own (src/modules/agents/events.service.ts, `commitRows`): the
-- conversation, its messages and the turn's lease row, without the events, activity touches and ended leases that
-- keep their group-commit window. The same rules as the whole batch's function (0030): a conversation is created
-- only for an agent of its account, and a message or a lease only for a conversation that exists (created here, or
-- before); rows already written are left alone. Every row is found by key (`= ANY (ARRAY(...))`), so the cost does
-- not grow with the tables. About half the database CPU of the whole batch's function for a turn's first write
-- (200 against 380 µs, 29 November; docs/benchmarks.md), which an answer waits for.
CREATE OR REPLACE FUNCTION agents_write_conversation_rows(p_conversations jsonb, p_messages jsonb, p_runs jsonb)
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  WITH cv AS (
    SELECT * FROM jsonb_to_recordset(p_conversations) AS x(
      "id" text, "accountId" text, "agentId" text, "endUserId" text, "title" text, "at" timestamptz,
      "lastActivityAt" timestamptz)
  ), ci AS (
    INSERT INTO conversations (id, account_id, agent_id, end_user_id, title, last_activity_at, created_at, updated_at)
    SELECT cv.id, cv."accountId", cv."agentId", cv."endUserId", cv.title, cv."lastActivityAt", cv.at, cv."lastActivityAt"
    FROM cv JOIN agents a ON a.id = cv."agentId" AND a.account_id = cv."accountId"
    WHERE a.id = ANY (ARRAY(SELECT cv."agentId" FROM cv))
    ON CONFLICT (id) DO NOTHING
    RETURNING conversations.id
  ), m AS (
    SELECT * FROM jsonb_to_recordset(p_messages) AS x(
      "id" text, "conversationId" text, "role" text, "content" text, "toolCalls" jsonb, "toolCallId" text,
      "toolName" text, "error" text, "at" timestamptz, n int)
  ), r AS (
    SELECT * FROM jsonb_to_recordset(p_runs) AS x("id" text, "conversationId" text, "leaseMs" int)
  ), live AS (
    SELECT ci.id FROM ci
    UNION
    SELECT c.id FROM conversations c
    WHERE c.id = ANY (ARRAY(SELECT m."conversationId" FROM m UNION SELECT r."conversationId" FROM r))
  ), mi AS (
    INSERT INTO messages (id, conversation_id, role, content, tool_calls, tool_call_id, tool_name, error, created_at)
    SELECT m.id, m."conversationId", m.role, m.content, m."toolCalls", m."toolCallId", m."toolName", m.error, m.at
    FROM m WHERE m."conversationId" IN (SELECT live.id FROM live) ORDER BY m.n
    ON CONFLICT (id) DO NOTHING
  )
  INSERT INTO conversation_runs (id, conversation_id, lease_expires_at)
  SELECT r.id, r."conversationId", now() + r."leaseMs" * interval '1 millisecond'
  FROM r WHERE r."conversationId" IN (SELECT live.id FROM live)
  ON CONFLICT (id) DO NOTHING;
END
$fn$;
