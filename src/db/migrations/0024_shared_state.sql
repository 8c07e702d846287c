CREATE TABLE "sign_in_attempts" (
	"key" text PRIMARY KEY NOT NULL,
	"count" integer NOT NULL,
	"reset_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_test_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"tool_id" text NOT NULL,
	"run_enc" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "tool_test_runs" ADD CONSTRAINT "tool_test_runs_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_test_runs" ADD CONSTRAINT "tool_test_runs_tool_id_custom_tools_id_fk" FOREIGN KEY ("tool_id") REFERENCES "public"."custom_tools"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sign_in_attempts_reset_idx" ON "sign_in_attempts" USING btree ("reset_at");--> statement-breakpoint
CREATE INDEX "tool_test_runs_expires_idx" ON "tool_test_runs" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "tool_test_runs_tool_idx" ON "tool_test_runs" USING btree ("tool_id");