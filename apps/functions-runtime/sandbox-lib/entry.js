// Built by scripts/build-sandbox-lib.mjs into one script that every sandbox isolate starts from (its
// heap snapshot). Only pure JavaScript goes in here: the isolate has no Node APIs at all.
import * as zod from 'sandbox-zod';
import URL from 'core-js-pure/stable/url';
import URLSearchParams from 'core-js-pure/stable/url-search-params';
import { Buffer } from 'buffer';

globalThis.__sandboxLib = { zod, URL, URLSearchParams, Buffer };
