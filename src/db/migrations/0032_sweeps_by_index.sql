-- Indexes for sweeps and checks that read whole tables as they grew (an audit on 29 November: EXPLAIN ANALYZE with
-- 200,000 finished jobs, 100,000 sessions, 50,000 MCP tasks, 100,000 webhook deliveries): a `once` job's look for
-- any row of its key, finished ones included (insertJob: 58.6 ms, a scan of every job, against 0.21), the sweep of
-- expired sessions (20 against 12 ms, most of it the delete), the sweep failing stale live MCP tasks (15.5
-- against 1.9 ms) and the sweep of old webhook deliveries (55 ms, or the whole of the endpoint index, against 0.02
-- to 1.9 ms).
CREATE INDEX IF NOT EXISTS "sessions_expires_idx" ON "sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "jobs_dedupe_key_any_idx" ON "jobs" USING btree ("dedupe_key") WHERE dedupe_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "mcp_tasks_live_updated_idx" ON "mcp_tasks" USING btree ("updated_at") WHERE status IN ('working', 'input_required');--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_deliveries_created_idx" ON "webhook_deliveries" USING btree ("created_at");