// Copies what a build from source needs into the package: the core's
// sources and the public header (deps/), and SWIG's wrapper generated from
// bindings/bitt.i (src/gen/). SWIG comes from $SWIG (PyPI's swig, pinned in
// scripts/test-node), as Debian's 4.1 has no Node-API target.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const pkg = path.join(__dirname, '..');
const repo = path.join(pkg, '..', '..');

function copyDir(from, to) {
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, {
    recursive: true,
    filter: (src) => fs.statSync(src).isDirectory() || /\.(c|h)$/.test(src),
  });
}

copyDir(path.join(repo, 'core'), path.join(pkg, 'deps', 'core'));
copyDir(path.join(repo, 'abi', 'include'), path.join(pkg, 'deps', 'include'));
fs.mkdirSync(path.join(pkg, 'src', 'gen'), { recursive: true });
execFileSync(process.env.SWIG || 'swig', [
  '-javascript', '-napi', '-c++', '-DSWIGWORDSIZE64',
  '-I' + path.join(repo, 'abi', 'include'),
  '-o', path.join(pkg, 'src', 'gen', 'bitt_wrap.cxx'),
  path.join(repo, 'bindings', 'bitt.i'),
], { stdio: 'inherit' });
