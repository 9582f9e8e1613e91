CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"label" text NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"scopes" text[] NOT NULL,
	"expires_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "gateway_idempotency" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"key" text NOT NULL,
	"route" text NOT NULL,
	"body_hash" text NOT NULL,
	"request_id" text NOT NULL,
	"status" text DEFAULT 'IN_PROGRESS' NOT NULL,
	"response_status" integer,
	"response" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "provider_accounts" (
	"id" uuid PRIMARY KEY NOT NULL,
	"provider_slug" text NOT NULL,
	"key_fingerprint" text NOT NULL,
	"key_hint" text,
	"label" text NOT NULL,
	"base_url" text,
	"monthly_budget_cents" bigint,
	"spend_micros" bigint DEFAULT 0 NOT NULL,
	"spend_period" text NOT NULL,
	"status" text DEFAULT 'ACTIVE' NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"last_error_code" text,
	"last_error_message" text,
	"last_failure_at" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "usage_records" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"subscription_id" uuid,
	"model_id" uuid,
	"provider_id" uuid,
	"reseller_account_id" uuid,
	"job_id" uuid,
	"request_id" text NOT NULL,
	"operation" text NOT NULL,
	"status" text NOT NULL,
	"input_units" integer DEFAULT 0 NOT NULL,
	"output_units" integer DEFAULT 0 NOT NULL,
	"credits_consumed" bigint DEFAULT 0 NOT NULL,
	"provider_cost_cents" integer DEFAULT 0 NOT NULL,
	"latency_ms" integer DEFAULT 0 NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "generations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"prompt" text NOT NULL,
	"thumbnail_url" text,
	"output" jsonb NOT NULL,
	"model_id" uuid,
	"visibility" text DEFAULT 'PRIVATE' NOT NULL,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"favorite" boolean DEFAULT false NOT NULL,
	"request_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "generations" ADD CONSTRAINT "generations_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_key" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_user_idx" ON "api_keys" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "gateway_idempotency_key" ON "gateway_idempotency" USING btree ("user_id","key");--> statement-breakpoint
CREATE INDEX "gateway_idempotency_expiry_idx" ON "gateway_idempotency" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "provider_accounts_fingerprint_key" ON "provider_accounts" USING btree ("provider_slug","key_fingerprint");--> statement-breakpoint
CREATE INDEX "usage_records_user_idx" ON "usage_records" USING btree ("user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "usage_records_request_idx" ON "usage_records" USING btree ("request_id");--> statement-breakpoint
CREATE INDEX "generations_user_kind_idx" ON "generations" USING btree ("user_id","kind","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "generations_request_key" ON "generations" USING btree ("request_id");