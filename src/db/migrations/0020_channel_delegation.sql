ALTER TABLE "channel_link_codes" ADD COLUMN "run_as" jsonb;--> statement-breakpoint
ALTER TABLE "channel_links" ADD COLUMN "run_as" jsonb;--> statement-breakpoint
ALTER TABLE "messaging_channels" ADD COLUMN "run_as" jsonb;