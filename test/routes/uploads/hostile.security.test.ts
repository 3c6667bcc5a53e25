/**
 * Hostile uploads to POST /uploads/v1/test_runs, all but the large reports (those are in
 * hostile-large.security.test.ts, the slow tier): hostile-uploads.ts holds the tests of both.
 */
import { hostileUploadTests } from "./hostile-uploads";

hostileUploadTests("readable");
