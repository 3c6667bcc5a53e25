import type { AppEnv } from "../../app-env";
import type { UploadingProject } from "../../services/runs/uploads";

/** The uploads API's environment: the app's, plus the project the upload token named. */
export type UploadEnv = AppEnv & { Variables: { uploader: UploadingProject } };
