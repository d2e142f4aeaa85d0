// `node --import ./load-log-register.mjs`: installs load-log-hooks.mjs before the program runs.
import { register } from "node:module";

register("./load-log-hooks.mjs", import.meta.url);
