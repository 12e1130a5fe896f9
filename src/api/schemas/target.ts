import { z } from "zod";
import { expected, targetTlsVerify as tlsVerify } from "../../shapes";
import { targetUrl } from "./common";

const targetName = z.string(expected("a string")).trim().min(1, "must not be empty").max(500);

export const targetCreateBody = z
  .object({
    url: targetUrl,
    name: targetName.optional().describe("defaults to the host of url"),
    disabled: z.boolean(expected("a boolean")).optional(),
    tlsVerify: tlsVerify.optional(),
  })
  .meta({ id: "MultistreamTargetInput" });

export const targetPatchBody = z
  .object({
    url: targetUrl.optional().describe("the complete new url; omit to keep the current one"),
    name: targetName.optional(),
    disabled: z.boolean(expected("a boolean")).optional(),
    tlsVerify: tlsVerify.optional(),
  })
  .meta({ id: "MultistreamTargetPatchPayload" });