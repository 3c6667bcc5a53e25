CREATE TABLE "flash_messages" (
	"session_id" uuid NOT NULL,
	"page" text NOT NULL,
	"body_encrypted" text NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "flash_messages_session_id_page_pk" PRIMARY KEY("session_id","page")
);
--> statement-breakpoint
ALTER TABLE "flash_messages" ADD CONSTRAINT "flash_messages_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "flash_messages_expires_idx" ON "flash_messages" USING btree ("expires_at");