CREATE TABLE "agent_memories" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"end_user_id" text NOT NULL,
	"content" text NOT NULL,
	"search" "tsvector",
	"conversation_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_memories" ADD CONSTRAINT "agent_memories_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_memories" ADD CONSTRAINT "agent_memories_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_memories_agent_user_idx" ON "agent_memories" USING btree ("agent_id","end_user_id","updated_at");--> statement-breakpoint
CREATE INDEX "agent_memories_search_idx" ON "agent_memories" USING gin ("search");--> statement-breakpoint
CREATE INDEX "agent_memories_content_trgm_idx" ON "agent_memories" USING gin ("content" gin_trgm_ops);