// npm's prepack step (`npm pack`, `npm publish`): makes everything the
// tarball carries that a checkout lacks, so that a pack of a fresh clone is
// the working package, never a tarball without its addon:
//   1. checks node_modules/node-addon-api is there (bundled: a build from
//      source at install compiles against it), else fails saying `npm ci`;
//   2. stages the core's sources, the header, the SQLite amalgamation and the
//      wrapper of the pinned SWIG (scripts/stage.js, scripts/swig.js);
//   3. builds the addon (node-gyp configure + build: only what changed since
//      the last build is compiled again) against this node's own headers
//      when it has them (npm_config_nodedir otherwise, or node-gyp's download);
//   4. puts it, stripped, in prebuilds/<platform>-<arch>/bitt.node.
// Whatever it cannot do fails the pack with what is missing and the command
// that fixes it. Outside a checkout (an unpacked tarball) there is nothing
// to make: it checks the files are there.
// `npm run prepack` does the same without packing (a build in place).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const pkg = path.join(__dirname, '..');
const repo = path.join(pkg, '..', '..');
const platform = `${process.platform}-${process.arch}`;
const prebuilt = path.join('prebuilds', platform, 'bitt.node');

// The files the tarball needs (package.json "files"), relative to pkg.
const needed = [
  path.join('node_modules', 'node-addon-api', 'package.json'),
  path.join('deps', 'include', 'bitt.h'),
  path.join('deps', 'sqlite', 'sqlite3.c'),
  path.join('src', 'gen', 'bitt_wrap.cxx'),
  prebuilt,
];

function checkAddonApi() {
  if (!fs.existsSync(path.join(pkg, needed[0]))) {
    throw new Error('node_modules/node-addon-api is missing (the package bundles it, and the addon is built ' +
      'against it): run `npm ci` in bindings/node, then pack again');
  }
}

function build() {
  const env = { ...process.env };
  if (!env.npm_config_nodedir) {
    // This node's own headers, when it has them: nothing downloaded.
    const prefix = path.join(path.dirname(process.execPath), '..');
    if (fs.existsSync(path.join(prefix, 'include', 'node', 'node_api.h'))) env.npm_config_nodedir = prefix;
  }
  const jobs = env.JOBS || String(os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const { gyp } = require('./gyp.js');
  // configure regenerates the makefiles (the list of core sources may have
  // changed); make then compiles only what changed.
  if (gyp(pkg, ['configure'], env) !== 0 || gyp(pkg, ['build', '-j', jobs], env) !== 0) {
    throw new Error('node-gyp could not build the addon (its output is above)');
  }
  const built = path.join(pkg, 'build', 'Release', 'bitt.node');
  fs.mkdirSync(path.dirname(path.join(pkg, prebuilt)), { recursive: true });
  try {
    execFileSync('strip', ['--strip-unneeded', '-o', path.join(pkg, prebuilt), built]);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
    console.warn('bitt: no strip here: the prebuilt addon keeps its symbols');
    fs.copyFileSync(built, path.join(pkg, prebuilt));
  }
}

function main() {
  checkAddonApi();
  if (fs.existsSync(path.join(repo, 'core')) && fs.existsSync(path.join(repo, 'bindings', 'bitt.i'))) {
    require('./stage.js').stage();
    build();
  }
  const absent = needed.filter((f) => !fs.existsSync(path.join(pkg, f)));
  if (absent.length) {
    throw new Error(`the package lacks ${absent.join(', ')} and is not in a bitt checkout to make them: ` +
      'pack it from bindings/node of a checkout');
  }
}

try {
  main();
} catch (e) {
  console.error(`bitt prepack: ${e.message}`);
  process.exit(1);
}
