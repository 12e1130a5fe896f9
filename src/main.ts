// `npm start`. Refuses a Node.js onair cannot run on before loading anything that needs a newer
// one (node:sqlite): the service is required only once the check has passed.
import { exitOnUnsupportedNode } from "./nodeVersion";

exitOnUnsupportedNode("onair");
require("./nodeWarnings");
require("./mainServer");
