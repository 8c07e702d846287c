CREATE TABLE "channel_chats" (
	"channel_id" text NOT NULL,
	"chat_id" text NOT NULL,
	"conversation_id" text,
	"last_inbound_at" timestamp with time zone,
	"last_hint_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "channel_chats_channel_id_chat_id_pk" PRIMARY KEY("channel_id","chat_id")
);
--> statement-breakpoint
CREATE TABLE "channel_daily_usage" (
	"channel_id" text NOT NULL,
	"subject" text NOT NULL,
	"day" text NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "channel_daily_usage_channel_id_subject_day_pk" PRIMARY KEY("channel_id","subject","day")
);
--> statement-breakpoint
CREATE TABLE "channel_deliveries" (
	"channel_id" text NOT NULL,
	"key" text NOT NULL,
	"account_id" text NOT NULL,
	"direction" text DEFAULT 'in' NOT NULL,
	"chat_id" text,
	"sender_id" text,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'received' NOT NULL,
	"reply" text,
	"sent_parts" integer DEFAULT 0 NOT NULL,
	"conversation_id" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "channel_deliveries_channel_id_key_pk" PRIMARY KEY("channel_id","key")
);
--> statement-breakpoint
CREATE TABLE "channel_link_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"channel_id" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "channel_links" (
	"channel_id" text NOT NULL,
	"external_user_id" text NOT NULL,
	"chat_id" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "channel_links_channel_id_external_user_id_pk" PRIMARY KEY("channel_id","external_user_id")
);
--> statement-breakpoint
CREATE TABLE "messaging_channels" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"type" text NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"secrets_enc" text,
	"external_id" text,
	"webhook_secret_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webchat_visitors" (
	"id" text PRIMARY KEY NOT NULL,
	"channel_id" text NOT NULL,
	"token_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "channel_chats" ADD CONSTRAINT "channel_chats_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "channel_daily_usage" ADD CONSTRAINT "channel_daily_usage_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "channel_deliveries" ADD CONSTRAINT "channel_deliveries_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "channel_link_codes" ADD CONSTRAINT "channel_link_codes_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "channel_links" ADD CONSTRAINT "channel_links_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_channels" ADD CONSTRAINT "messaging_channels_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messaging_channels" ADD CONSTRAINT "messaging_channels_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webchat_visitors" ADD CONSTRAINT "webchat_visitors_channel_id_messaging_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."messaging_channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "channel_deliveries_recent_idx" ON "channel_deliveries" USING btree ("channel_id","created_at");--> statement-breakpoint
CREATE INDEX "messaging_channels_account_idx" ON "messaging_channels" USING btree ("account_id","created_at");--> statement-breakpoint
CREATE INDEX "messaging_channels_agent_idx" ON "messaging_channels" USING btree ("agent_id");--> statement-breakpoint
CREATE UNIQUE INDEX "messaging_channels_external_idx" ON "messaging_channels" USING btree ("type","external_id");--> statement-breakpoint
CREATE INDEX "messaging_channels_webhook_idx" ON "messaging_channels" USING btree ("webhook_secret_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "webchat_visitors_token_idx" ON "webchat_visitors" USING btree ("token_hash");