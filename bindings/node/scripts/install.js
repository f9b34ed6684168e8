// npm's install step: use the prebuilt addon when it loads here; otherwise
// build from the sources the package carries (node-gyp, which npm ships).
// BITT_NODE_FROM_SOURCE=1 builds from source even when a prebuilt one loads.
// In a repository checkout before the prepack step there is nothing to
// build yet (`npm run prepack` builds in place, `npm pack` does it too).
'use strict';
const fs = require('fs');
const path = require('path');

const pkg = path.join(__dirname, '..');
const { candidates } = require('../lib/native-path.js');

const fromSource = !!process.env.BITT_NODE_FROM_SOURCE;
for (const file of fromSource ? [] : candidates(pkg)) {
  if (!fs.existsSync(file)) continue;
  try {
    require(file);
    process.exit(0);
  } catch (e) {
    console.warn(`bitt: ${path.relative(pkg, file)} does not load here (${e.message}); building from source`);
  }
}
if (!fs.existsSync(path.join(pkg, 'src', 'gen', 'bitt_wrap.cxx'))) {
  console.warn('bitt: no generated wrapper (a repository checkout): `npm run prepack` builds the addon');
  process.exit(0);
}
process.exit(require('./gyp.js').gyp(pkg, ['rebuild', '-j', '2']));
