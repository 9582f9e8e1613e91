CREATE TABLE "playground_conversations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"admin_id" uuid NOT NULL,
	"title" text NOT NULL,
	"model_slug" text NOT NULL,
	"messages" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "playground_runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"admin_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"model_slug" text NOT NULL,
	"status" text NOT NULL,
	"request_id" text,
	"job_id" uuid,
	"conversation_id" uuid,
	"prompt" text NOT NULL,
	"tokens_charged" bigint,
	"error_code" text,
	"error_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "playground_conversations" ADD CONSTRAINT "playground_conversations_admin_id_users_id_fk" FOREIGN KEY ("admin_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "playground_conversations_admin_idx" ON "playground_conversations" USING btree ("admin_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "playground_runs_created_idx" ON "playground_runs" USING btree ("created_at","id");--> statement-breakpoint
CREATE INDEX "playground_runs_admin_idx" ON "playground_runs" USING btree ("admin_id","created_at","id");--> statement-breakpoint
CREATE INDEX "playground_runs_job_idx" ON "playground_runs" USING btree ("job_id");