-- A delivery whose alert was snoozed or disabled before an attempt is dropped as 'suppressed'
-- (notifications are suppressed while snoozed, retries included); it does not count for the cooldown.
ALTER TYPE "public"."delivery_status" ADD VALUE 'suppressed';