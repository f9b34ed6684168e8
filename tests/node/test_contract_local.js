'use strict';
// The contract on memory and SQLite, through the sync and the Promise API.
require('./contract_suite').register([
  ['memory', 'sync'], ['sqlite-file', 'sync'], ['sqlite-memory', 'sync'],
  ['memory', 'async'], ['sqlite-file', 'async'], ['sqlite-memory', 'async'],
]);
