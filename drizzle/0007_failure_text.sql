-- A failure's full text (its stack trace) beside its message: writers that put a message attribute
-- on <failure>/<error> also write the trace as the element's text, and both are kept.
ALTER TABLE "test_cases" ADD COLUMN "failure_text" text;
