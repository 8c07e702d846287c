CREATE TABLE "connections" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"provider_id" text NOT NULL,
	"provider_user_id" text NOT NULL,
	"scopes" text[] NOT NULL,
	"status" text NOT NULL,
	"expires_at" timestamp with time zone,
	"can_refresh" boolean NOT NULL,
	"metadata" jsonb NOT NULL,
	"vars" jsonb NOT NULL,
	"access_token_enc" text NOT NULL,
	"refresh_token_enc" text,
	"refresh_failures" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"refreshed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"provider_id" text NOT NULL,
	"code_verifier_enc" text NOT NULL,
	"redirect_url" text NOT NULL,
	"params" jsonb NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pending_connections" (
	"id_hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"provider_id" text NOT NULL,
	"payload_enc" text NOT NULL,
	"redirect_url" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_states" ADD CONSTRAINT "oauth_states_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pending_connections" ADD CONSTRAINT "pending_connections_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "connections_account_provider_user_idx" ON "connections" USING btree ("account_id","provider_id","provider_user_id");--> statement-breakpoint
CREATE INDEX "connections_account_created_idx" ON "connections" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "connections_expires_idx" ON "connections" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "oauth_states_expires_idx" ON "oauth_states" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "pending_connections_expires_idx" ON "pending_connections" USING btree ("expires_at");