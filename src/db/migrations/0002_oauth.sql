CREATE TABLE "auth_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"roles" text[] NOT NULL,
	"redirect_uris" text[] NOT NULL,
	"allowed_scopes" text[] NOT NULL,
	"branding" jsonb NOT NULL,
	"secret_ciphertext" text,
	"metadata" jsonb NOT NULL,
	"registered_via" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_artifacts" (
	"model" text NOT NULL,
	"id_hash" text NOT NULL,
	"payload" jsonb NOT NULL,
	"grant_id" text,
	"uid_hash" text,
	"account_id" text,
	"client_id" text,
	"expires_at" timestamp with time zone,
	"consumed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "oauth_artifacts_model_id_hash_pk" PRIMARY KEY("model","id_hash")
);
--> statement-breakpoint
CREATE TABLE "oauth_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"use" text NOT NULL,
	"secret_ciphertext" text NOT NULL,
	"public_jwk" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "auth_clients" ADD CONSTRAINT "auth_clients_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "auth_clients_account_idx" ON "auth_clients" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "oauth_artifacts_grant_idx" ON "oauth_artifacts" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "oauth_artifacts_uid_idx" ON "oauth_artifacts" USING btree ("uid_hash");--> statement-breakpoint
CREATE INDEX "oauth_artifacts_account_idx" ON "oauth_artifacts" USING btree ("account_id","model");--> statement-breakpoint
CREATE INDEX "oauth_artifacts_client_idx" ON "oauth_artifacts" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "oauth_artifacts_expires_idx" ON "oauth_artifacts" USING btree ("expires_at");