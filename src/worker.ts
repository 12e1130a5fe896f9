// `npm run worker` (src/mainWorker.ts). Refuses a Node.js onair cannot run on before loading
// anything that needs a newer one (node:sqlite).
import { exitOnUnsupportedNode } from "./nodeVersion";

exitOnUnsupportedNode("onair worker");
require("./nodeWarnings");
require("./mainWorker");
