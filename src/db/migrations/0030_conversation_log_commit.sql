-- The conversation log's batch function (0026) no longer turns its transaction's commit asynchronous itself: its
-- caller chooses (src/modules/agents/events.service.ts). On PostgreSQL it is called through the pool whose
-- sessions commit asynchronously (`asyncCommitDb`, as before: the commit is visible to every session at once and
-- reaches the disk within the WAL writer's delay). On PGlite it commits synchronously: the embedded database has
-- no WAL writer, so an asynchronous commit reached the disk only with the next synchronous one, and a crash before
-- that lost what an answer had already named (a streamed chat's conversation, sent in `X-Conversation-Id`). A
-- synchronous commit costs PGlite 0.03 to 0.05 ms more a statement (500 single-row inserts each way, 29 November).
-- A sweep that writes failed turns inside its own transaction (`writeFailedTurns`) now commits that transaction
-- synchronously on both databases.
--
-- Its statement also finds the rows it joins (agents, conversations, turns' leases) through their primary keys,
-- `= ANY (ARRAY(...))`: the planner reckons a `jsonb_to_recordset` at 100 rows, so with `IN (subquery)` it chose a
-- hash join over a scan of the whole table, conversations included: 2 ms of every batch at 10,000 conversations
-- (EXPLAIN ANALYZE on 29 November), growing with them. A batch holds a few rows; looked up by key, its cost no
-- longer depends on how many conversations there are.
CREATE OR REPLACE FUNCTION agents_write_conversation_log(
  p_conversations jsonb, p_messages jsonb, p_events jsonb, p_touches jsonb, p_runs jsonb, p_ended_runs jsonb,
  p_channel text)
RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN QUERY
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
      WHERE c.id = ANY (ARRAY(SELECT m."conversationId" FROM m UNION SELECT e."conversationId" FROM e
        UNION SELECT t."conversationId" FROM t UNION SELECT r."conversationId" FROM r))
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
      DELETE FROM conversation_runs
      WHERE conversation_runs.id = ANY (ARRAY(SELECT jsonb_array_elements_text(p_ended_runs)))
    ), ei AS (
      INSERT INTO conversation_events (conversation_id, type, data, created_at)
      SELECT e."conversationId", e.type, e.data, e.at
      FROM e WHERE e."conversationId" IN (SELECT live.id FROM live) ORDER BY e.n
      RETURNING conversation_events.conversation_id
    ), tu AS (
      UPDATE conversations c SET last_activity_at = t.at, updated_at = t.at
      FROM (SELECT t."conversationId", max(t.at) AS at FROM t GROUP BY t."conversationId") t
      WHERE c.id = t."conversationId" AND c.id = ANY (ARRAY(SELECT t."conversationId" FROM t))
    )
    SELECT d.conversation_id || pg_notify(p_channel, d.conversation_id)::text
    FROM (SELECT DISTINCT ei.conversation_id FROM ei) d;
END
$fn$;
