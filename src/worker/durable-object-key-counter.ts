import type { KeyAdmission, KeyCounter } from "../auth/key-state";
import type { KeyCounterObject } from "./key-counter-object";

/** The key counter of the Worker: one Durable Object per key id, reached over RPC. */
export class DurableObjectKeyCounter implements KeyCounter {
  constructor(private readonly namespace: DurableObjectNamespace<KeyCounterObject>) {}

  async admit(keyId: string, resolution?: { organizationId: string }): Promise<KeyAdmission> {
    return (await this.namespace.getByName(keyId).admit(resolution)) as KeyAdmission;
  }

  async revoke(keyIds: string[]): Promise<void> {
    await Promise.all(keyIds.map((keyId) => this.namespace.getByName(keyId).revoke()));
  }
}
