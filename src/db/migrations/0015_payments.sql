CREATE TABLE "payment_agreements" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"label" text NOT NULL,
	"gateway_agreement_id" text NOT NULL,
	"subscription_id" uuid,
	"status" text DEFAULT 'ACTIVE' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"cancelled_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "payment_channels" (
	"slug" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"sort_order" integer DEFAULT 0 NOT NULL,
	"carriers" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"amounts_cents" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"min_amount_cents" bigint DEFAULT 1 NOT NULL,
	"max_amount_cents" bigint DEFAULT 9007199254740991 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"payment_id" uuid,
	"channel" text NOT NULL,
	"event_key" text NOT NULL,
	"outcome" text NOT NULL,
	"gateway_txn_id" text,
	"amount_cents" bigint,
	"currency" text,
	"source" text NOT NULL,
	"agreement_id" text,
	"payload" jsonb NOT NULL,
	"processed_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_renewals" (
	"event_id" uuid PRIMARY KEY NOT NULL,
	"payment_id" uuid,
	"outcome" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"purpose_kind" text NOT NULL,
	"purpose_ref" text NOT NULL,
	"purpose" jsonb NOT NULL,
	"channel" text NOT NULL,
	"mode" text NOT NULL,
	"status" text DEFAULT 'PENDING' NOT NULL,
	"fulfilment" text DEFAULT 'NONE' NOT NULL,
	"review_reason" text,
	"amount_cents" bigint NOT NULL,
	"currency" text NOT NULL,
	"description" text NOT NULL,
	"recurring" boolean DEFAULT false NOT NULL,
	"extra" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"success_url" text,
	"cancel_url" text,
	"gateway_ref" text,
	"gateway_txn_id" text,
	"paid_amount_cents" bigint,
	"paid_at" timestamp with time zone,
	"tokens_granted" bigint DEFAULT 0 NOT NULL,
	"refunded_at" timestamp with time zone,
	"tokens_taken_back" bigint DEFAULT 0 NOT NULL,
	"tokens_unrecovered" bigint DEFAULT 0 NOT NULL,
	"pin_attempts" integer DEFAULT 0 NOT NULL,
	"sandbox" jsonb,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payments_amount_positive" CHECK ("payments"."amount_cents" > 0)
);
--> statement-breakpoint
ALTER TABLE "plans" ALTER COLUMN "price_cents" SET DATA TYPE bigint;--> statement-breakpoint
ALTER TABLE "payment_agreements" ADD CONSTRAINT "payment_agreements_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_events" ADD CONSTRAINT "payment_events_payment_id_payments_id_fk" FOREIGN KEY ("payment_id") REFERENCES "public"."payments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "payment_agreements_gateway_key" ON "payment_agreements" USING btree ("channel","gateway_agreement_id");--> statement-breakpoint
CREATE INDEX "payment_agreements_user_idx" ON "payment_agreements" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "payment_events_key" ON "payment_events" USING btree ("channel","event_key");--> statement-breakpoint
CREATE INDEX "payment_events_unprocessed_idx" ON "payment_events" USING btree ("processed_at","created_at");--> statement-breakpoint
CREATE INDEX "payments_user_idx" ON "payments" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "payments_pending_idx" ON "payments" USING btree ("status","expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_gateway_ref_key" ON "payments" USING btree ("channel","gateway_ref");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_gateway_txn_key" ON "payments" USING btree ("channel","gateway_txn_id");