CREATE TABLE "knowledge_bases" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"custom_instructions" text DEFAULT '' NOT NULL,
	"max_pages_limit" integer DEFAULT 500 NOT NULL,
	"is_default" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_config" (
	"account_id" text PRIMARY KEY NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"auto_ingest_conversations" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_links" (
	"kb_id" text NOT NULL,
	"from_page_id" text NOT NULL,
	"to_slug" text NOT NULL,
	"kind" text NOT NULL,
	CONSTRAINT "knowledge_links_from_page_id_to_slug_kind_pk" PRIMARY KEY("from_page_id","to_slug","kind")
);
--> statement-breakpoint
CREATE TABLE "knowledge_logs" (
	"id" text PRIMARY KEY NOT NULL,
	"kb_id" text NOT NULL,
	"kind" text NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_page_versions" (
	"id" text PRIMARY KEY NOT NULL,
	"page_id" text NOT NULL,
	"kb_id" text NOT NULL,
	"version" integer NOT NULL,
	"title" text NOT NULL,
	"content" text NOT NULL,
	"tags" text[] NOT NULL,
	"compiled_by" text NOT NULL,
	"source_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_pages" (
	"id" text PRIMARY KEY NOT NULL,
	"kb_id" text NOT NULL,
	"account_id" text NOT NULL,
	"slug" text NOT NULL,
	"title" text NOT NULL,
	"content" text NOT NULL,
	"summary" text DEFAULT '' NOT NULL,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"aliases" text[] DEFAULT '{}'::text[] NOT NULL,
	"page_type" text NOT NULL,
	"relationships" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"source_ids" text[] DEFAULT '{}'::text[] NOT NULL,
	"last_compiled_by" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"backlink_count" integer DEFAULT 0 NOT NULL,
	"search" "tsvector",
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "knowledge_sources" (
	"id" text PRIMARY KEY NOT NULL,
	"kb_id" text NOT NULL,
	"account_id" text NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"raw_content" text,
	"url" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"compiled_hash" text,
	"compiled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "knowledge_bases" ADD CONSTRAINT "knowledge_bases_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_config" ADD CONSTRAINT "knowledge_config_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_links" ADD CONSTRAINT "knowledge_links_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_links" ADD CONSTRAINT "knowledge_links_from_page_id_knowledge_pages_id_fk" FOREIGN KEY ("from_page_id") REFERENCES "public"."knowledge_pages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_logs" ADD CONSTRAINT "knowledge_logs_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_page_versions" ADD CONSTRAINT "knowledge_page_versions_page_id_knowledge_pages_id_fk" FOREIGN KEY ("page_id") REFERENCES "public"."knowledge_pages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_page_versions" ADD CONSTRAINT "knowledge_page_versions_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_pages" ADD CONSTRAINT "knowledge_pages_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_sources" ADD CONSTRAINT "knowledge_sources_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_bases_account_name_idx" ON "knowledge_bases" USING btree ("account_id",lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_bases_account_default_idx" ON "knowledge_bases" USING btree ("account_id") WHERE "knowledge_bases"."is_default";--> statement-breakpoint
CREATE INDEX "knowledge_links_target_idx" ON "knowledge_links" USING btree ("kb_id","to_slug");--> statement-breakpoint
CREATE INDEX "knowledge_logs_kb_created_idx" ON "knowledge_logs" USING btree ("kb_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_page_versions_page_version_idx" ON "knowledge_page_versions" USING btree ("page_id","version");--> statement-breakpoint
CREATE UNIQUE INDEX "knowledge_pages_kb_slug_idx" ON "knowledge_pages" USING btree ("kb_id","slug");--> statement-breakpoint
CREATE INDEX "knowledge_pages_search_idx" ON "knowledge_pages" USING gin ("search");--> statement-breakpoint
CREATE INDEX "knowledge_pages_title_trgm_idx" ON "knowledge_pages" USING gin ("title" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "knowledge_pages_tags_idx" ON "knowledge_pages" USING gin ("tags");--> statement-breakpoint
CREATE INDEX "knowledge_pages_kb_updated_idx" ON "knowledge_pages" USING btree ("kb_id","updated_at");--> statement-breakpoint
CREATE INDEX "knowledge_sources_kb_created_idx" ON "knowledge_sources" USING btree ("kb_id","created_at");