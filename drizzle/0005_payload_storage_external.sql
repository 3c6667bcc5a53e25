-- Upload payloads wait only until their run is processed: storing them uncompressed (EXTERNAL)
-- halves the time to store a large report at upload and to read it back, for a little more disk
-- while they wait (BENCHMARKS.md, upload benchmark).
ALTER TABLE "upload_payloads" ALTER COLUMN "content" SET STORAGE EXTERNAL;
