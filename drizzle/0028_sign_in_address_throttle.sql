CREATE TABLE "sign_in_address_throttles" (
	"address" text PRIMARY KEY NOT NULL,
	"failures" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sign_in_known_addresses" (
	"email" text NOT NULL,
	"address" text NOT NULL,
	"last_signed_in_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sign_in_known_addresses_email_address_pk" PRIMARY KEY("email","address")
);
--> statement-breakpoint
CREATE INDEX "sign_in_address_throttles_expires_idx" ON "sign_in_address_throttles" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "sign_in_known_addresses_last_signed_in_idx" ON "sign_in_known_addresses" USING btree ("last_signed_in_at");