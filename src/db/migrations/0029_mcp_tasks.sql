CREATE TABLE "mcp_tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"token_id" text NOT NULL,
	"run_as" jsonb NOT NULL,
	"tool_name" text NOT NULL,
	"status" text DEFAULT 'working' NOT NULL,
	"status_message" text,
	"result" jsonb,
	"messages" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"ttl_ms" integer NOT NULL,
	"poll_interval_ms" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mcp_tasks" ADD CONSTRAINT "mcp_tasks_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mcp_tasks_account_created_idx" ON "mcp_tasks" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "mcp_tasks_expires_idx" ON "mcp_tasks" USING btree ("expires_at");