/**
 * Hostile uploads to POST /uploads/v1/test_runs: the reports of many megabytes or a hundred
 * thousand cases (the slow tier: this file alone takes more than 30 s in workerd). The tests are
 * in hostile-uploads.ts with the rest of the hostile uploads (hostile.security.test.ts).
 */
import { hostileUploadTests } from "./hostile-uploads";

hostileUploadTests("large");
