'use strict';
// Loads the addon: the first candidate that exists (lib/native-path.js).
const fs = require('fs');
const path = require('path');
const { candidates } = require('./native-path.js');

function load() {
  const tried = candidates(path.join(__dirname, '..'));
  for (const file of tried) {
    if (fs.existsSync(file)) return require(file);
  }
  throw new Error(`bitt: no addon for ${process.platform}-${process.arch} (looked at ${tried.join(', ')}); ` +
    'reinstall to build it from source');
}

const native = load();
// Errors from the addon are the package's BittError classes.
native.bittw_set_error_factory(require('./errors').makeError);
// Entries come as objects made here (the stored bytes as value; lib/model.js
// decodes them by kind).
const { Entry } = require('./entry');
native.bittw_set_entry_factory((key, value, kind, version, expiresAt) => new Entry(key, value, kind, version, expiresAt));
module.exports = native;
