// Runs node-gyp: npm's own (npm_config_node_gyp, set in npm's scripts), else
// the one npm ships beside this node, else a node-gyp on PATH.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function gypCommand() {
  if (process.env.npm_config_node_gyp) return [process.execPath, [process.env.npm_config_node_gyp]];
  const bundled = path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm',
    'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (fs.existsSync(bundled)) return [process.execPath, [bundled]];
  return ['node-gyp', []];
}

// The exit status of `node-gyp ARGS...` in dir (output inherited).
function gyp(dir, args, env = process.env) {
  const [cmd, pre] = gypCommand();
  const r = spawnSync(cmd, [...pre, ...args], { cwd: dir, stdio: 'inherit', env });
  if (r.error) throw new Error(`node-gyp did not run (${r.error.message})`);
  return r.status === null ? 1 : r.status;
}

module.exports = { gyp };
