CREATE TABLE "payload_chunks" (
	"object_key" text NOT NULL,
	"seq" integer NOT NULL,
	"bytes" "bytea" NOT NULL,
	CONSTRAINT "payload_chunks_object_key_seq_pk" PRIMARY KEY("object_key","seq")
);
--> statement-breakpoint
CREATE TABLE "payload_objects" (
	"object_key" text PRIMARY KEY NOT NULL,
	"content_encoding" text,
	"charset" text,
	"size" bigint,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "payload_chunks" ADD CONSTRAINT "payload_chunks_object_key_payload_objects_object_key_fk" FOREIGN KEY ("object_key") REFERENCES "public"."payload_objects"("object_key") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The chunks are a gzip body as sent: compressing them again in TOAST costs time and saves nothing.
ALTER TABLE "payload_chunks" ALTER COLUMN "bytes" SET STORAGE EXTERNAL;
