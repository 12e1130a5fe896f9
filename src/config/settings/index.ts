import { combine } from "../declare";
import { cluster } from "./cluster";
import { database } from "./database";
import { http } from "./http";
import { ingest } from "./ingest";
import { limits } from "./limits";
import { media } from "./media";
import { outbound } from "./outbound";
import { playback } from "./playback";
import { queue } from "./queue";
import { storage } from "./storage";
import { webhooks } from "./webhooks";

export { ROLES, type Role } from "./cluster";
export { MAX_LIMIT_SETTING } from "./limits";
export { limits };

/** Every setting onair reads, each declared once in its area's module. */
export const SETTINGS = combine(http, ingest, media, playback, storage, database, queue, cluster, webhooks, outbound, limits);
