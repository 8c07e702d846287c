CREATE TABLE "activity" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"kind" text NOT NULL,
	"via" text NOT NULL,
	"actor_kind" text NOT NULL,
	"token_id" text,
	"client_id" text,
	"agent_id" text,
	"agent_name" text,
	"connection_id" text,
	"provider_id" text,
	"tool" text,
	"mode" text,
	"status" text NOT NULL,
	"duration_ms" integer,
	"credits" bigint DEFAULT 0 NOT NULL,
	"args_summary" text,
	"result_summary" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "activity" ADD CONSTRAINT "activity_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "activity_account_created_idx" ON "activity" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "activity_created_idx" ON "activity" USING btree ("created_at");