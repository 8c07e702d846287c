CREATE TABLE "knowledge_conversation_trackers" (
	"conversation_id" text PRIMARY KEY NOT NULL,
	"kb_id" text NOT NULL,
	"source_id" text NOT NULL,
	"captured_activity_at" timestamp with time zone NOT NULL,
	"ingested_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "knowledge_conversation_trackers" ADD CONSTRAINT "knowledge_conversation_trackers_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "knowledge_conversation_trackers" ADD CONSTRAINT "knowledge_conversation_trackers_kb_id_knowledge_bases_id_fk" FOREIGN KEY ("kb_id") REFERENCES "public"."knowledge_bases"("id") ON DELETE cascade ON UPDATE no action;