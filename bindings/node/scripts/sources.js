// The core's C sources under deps/core (for binding.gyp): every backend.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', 'deps', 'core');
const dirs = ['', 'memory', 'sqlite', 'postgres', 'redis'];
module.exports = dirs.flatMap((d) =>
  fs.readdirSync(path.join(root, d))
    .filter((f) => f.endsWith('.c'))
    .sort()
    .map((f) => path.posix.join('deps/core', d, f)));
