-- The GIN indexes searches read keep a small pending list (src/db/schema/columns.ts, GIN_SEARCHED, says why):
-- changed in place rather than rebuilt (drizzle-kit's DROP and CREATE would block writes while rebuilding), then
-- what is pending now merged into each index, since a lower limit applies only from the next insert.
DO $$
DECLARE
  idx text;
BEGIN
  FOREACH idx IN ARRAY ARRAY[
    'agent_memories_search_idx', 'agent_memories_content_trgm_idx', 'knowledge_pages_search_idx',
    'knowledge_pages_title_trgm_idx', 'knowledge_pages_tags_idx'
  ] LOOP
    EXECUTE format('ALTER INDEX %I SET (gin_pending_list_limit = 128)', idx);
    PERFORM gin_clean_pending_list(idx::regclass);
  END LOOP;
END $$;
