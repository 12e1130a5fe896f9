// Which pushes a live session should have, and how to get there from the ones it has: pure.

import type { TargetRecord, TargetRef } from "../db";
import { PASSTHROUGH_VIDEO } from "../ingest";
import { variantPlaylist } from "../media";
import type { EventTarget, Rendition } from "../shapes";
import type { PushInput, PushSource } from "./pushArgs";

/** One push a live session should run. */
export interface PushSpec {
  /** The same target, rendition and audio choice: the same push (a stream may list it twice). */
  key: string;
  target: EventTarget;
  url: string;
  /** rtmps: verify the destination's certificate. */
  tlsVerify: boolean;
  videoOnly: boolean;
  input: PushInput;
}

/** A reference that cannot be pushed in this session, and why (multistream.error). */
export interface PushProblem {
  key: string;
  target: EventTarget;
  error: string;
}

export interface PushPlan {
  wanted: PushSpec[];
  /** Keys of references to disabled targets (skipped, docs/api.md#spec-24-multistream-target-object: `disabled`). */
  disabled: Set<string>;
  problems: PushProblem[];
}

export interface PlanInput {
  /** The stream's references, in their order. */
  refs: TargetRef[];
  target(id: string): TargetRecord | undefined;
  /** The session's renditions: its ladder is fixed when it starts. */
  renditions: Rendition[];
  hlsDir: string;
  /** The published stream, which a "source" push copies (fed to it when it runs). */
  source: PushSource;
  /** The publisher's video codec, when known: a source push sends FLV, which carries H.264 only. */
  sourceCodec?: string | undefined;
}

export const pushKey = (ref: Pick<TargetRef, "id" | "profile" | "videoOnly">) => `${ref.id}/${ref.profile}/${ref.videoOnly ? "video" : "av"}`;

export function planPushes(o: PlanInput): PushPlan {
  const plan: PushPlan = { wanted: [], disabled: new Set(), problems: [] };
  const seen = new Set<string>();
  for (const ref of o.refs) {
    const key = pushKey(ref);
    const t = o.target(ref.id);
    // A referenced target cannot be deleted (docs/api.md#spec-43-multistream-targets rule 5); a missing one is simply skipped.
    if (!t || seen.has(key)) continue;
    seen.add(key);
    if (t.disabled) {
      plan.disabled.add(key);
      continue;
    }
    const target: EventTarget = { id: t.id, name: t.name, profile: ref.profile };
    let input: PushInput;
    if (ref.profile === "source") {
      if (o.sourceCodec !== undefined && o.sourceCodec !== PASSTHROUGH_VIDEO) {
        plan.problems.push({ key, target, error: `the source is ${o.sourceCodec}, which a source push cannot send (it sends FLV, which carries ${PASSTHROUGH_VIDEO} only): push one of the stream's profiles instead` });
        continue;
      }
      input = { kind: "source", name: o.source.name, feed: o.source.feed };
    } else {
      const r = o.renditions.find((x) => x.name === ref.profile && x.encode !== null);
      if (!r) {
        // The API keeps references and profiles consistent, but profiles edited while live
        // only apply to the next session: this one has the ladder it started with.
        const has = o.renditions.filter((x) => x.encode).map((x) => `"${x.name}"`);
        plan.problems.push({
          key,
          target,
          error: `profile "${ref.profile}" is not a rendition of this session (${has.length ? `it has ${has.join(", ")}` : "it passes the source through"}); it applies from the stream's next session`,
        });
        continue;
      }
      input = { kind: "rendition", playlist: variantPlaylist(o.hlsDir, r) };
    }
    plan.wanted.push({ key, target, url: t.url, tlsVerify: t.tlsVerify, videoOnly: ref.videoOnly, input });
  }
  return plan;
}

export type StopWhy = "reference removed" | "target disabled" | "target url changed" | "target tlsVerify changed";

export interface PushChanges {
  start: PushSpec[];
  stop: { key: string; why: StopWhy }[];
  /** Running pushes to leave alone, with their current spec (a renamed target keeps pushing). */
  keep: PushSpec[];
}

/** From the pushes running (by key) to the plan: only what differs is started or stopped. */
export function diffPushes(running: ReadonlyMap<string, Pick<PushSpec, "url" | "tlsVerify">>, plan: PushPlan): PushChanges {
  const changes: PushChanges = { start: [], stop: [], keep: [] };
  const wanted = new Map(plan.wanted.map((w) => [w.key, w]));
  for (const [key, r] of running) {
    const w = wanted.get(key);
    if (!w) changes.stop.push({ key, why: plan.disabled.has(key) ? "target disabled" : "reference removed" });
    else if (w.url !== r.url || w.tlsVerify !== r.tlsVerify) {
      changes.stop.push({ key, why: w.url !== r.url ? "target url changed" : "target tlsVerify changed" });
      changes.start.push(w);
    } else changes.keep.push(w);
  }
  for (const w of plan.wanted) if (!running.has(w.key)) changes.start.push(w);
  return changes;
}
