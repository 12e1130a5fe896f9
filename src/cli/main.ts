// `npm run cli` (src/cli/run.ts). Refuses a Node.js onair cannot run on before loading anything
// that needs a newer one (node:sqlite).
import { exitOnUnsupportedNode } from "../nodeVersion";

exitOnUnsupportedNode("onair cli");
require("../nodeWarnings");
require("./run");
