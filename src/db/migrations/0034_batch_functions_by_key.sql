-- The batch functions look every row they touch up by key, and each connection plans their statements once. Planned
-- before a table's first ANALYZE (a new database's tables until autovacuum comes by, up to a minute after they start
-- to grow; PGlite's until its thread's next look), the planner took a growing table for one of a few pages and read
-- it whole instead: on PostgreSQL under the gateway's benchmark every credit batch read the whole ledger to find
-- which of its charges were written already (`credit_transactions`: seq_scan 229, seq_tup_read 704,680 after six
-- seconds, idx_scan 0), and under the agent chat's, the conversation writes read `conversations` whole (4,052 scans,
-- 4.5 million rows read for 1,836 rows), each batch's cost growing with the table until an ANALYZE made the plans
-- again. Sequential scans are off inside these functions, so their lookups go by key whatever the statistics say (a
-- table with no index to use is still read whole: the setting only makes that the planner's last choice).
ALTER FUNCTION credits_write_lease_batch(jsonb, jsonb, timestamptz) SET enable_seqscan = off;
--> statement-breakpoint
ALTER FUNCTION credits_take_lease(text, text, bigint, bigint, bigint, timestamptz) SET enable_seqscan = off;
--> statement-breakpoint
ALTER FUNCTION agents_write_conversation_log(jsonb, jsonb, jsonb, jsonb, jsonb, jsonb, text) SET enable_seqscan = off;
--> statement-breakpoint
ALTER FUNCTION agents_write_conversation_rows(jsonb, jsonb, jsonb) SET enable_seqscan = off;
