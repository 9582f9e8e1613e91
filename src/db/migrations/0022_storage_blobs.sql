CREATE TABLE "storage_chunks" (
	"version" uuid NOT NULL,
	"seq" integer NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "storage_chunks_version_seq_pk" PRIMARY KEY("version","seq")
);
--> statement-breakpoint
CREATE TABLE "storage_objects" (
	"key" text PRIMARY KEY NOT NULL,
	"version" uuid NOT NULL,
	"size" bigint NOT NULL,
	"chunk_size" integer NOT NULL,
	"content_type" text,
	"modified_at" timestamp with time zone DEFAULT now() NOT NULL
);
