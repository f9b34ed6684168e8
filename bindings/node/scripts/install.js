// npm's install step: use the prebuilt addon when it loads here; otherwise
// build from the sources the package carries (node-gyp, which npm ships).
// BITT_NODE_FROM_SOURCE=1 builds from source even when a prebuilt one loads.
// In a repository checkout before `npm run stage` there is nothing to build
// yet: scripts/test-node stages and builds.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

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
  console.warn('bitt: no generated wrapper (a repository checkout): run `npm run stage && npm run build`');
  process.exit(0);
}
const gyp = process.env.npm_config_node_gyp
  ? [process.execPath, [process.env.npm_config_node_gyp]]
  : ['node-gyp', []];
const r = spawnSync(gyp[0], [...gyp[1], 'rebuild', '-j', '2'], { cwd: pkg, stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
