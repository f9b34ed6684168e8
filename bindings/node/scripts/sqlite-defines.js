// The built-in SQLite's compile options for binding.gyp: the lines of
// deps/sqlite/sqlite-defines.txt (staged from core/sqlite/, the list
// libbitt's CMake build reads too), comments and blank lines left out.
'use strict';
const fs = require('fs');
const path = require('path');

const file = path.join(__dirname, '..', 'deps', 'sqlite', 'sqlite-defines.txt');
module.exports = fs.readFileSync(file, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => /^[A-Z]/.test(l));
