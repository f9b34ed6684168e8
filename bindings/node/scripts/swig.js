// The pinned SWIG, for the wrapper stage.js generates: Debian's swig (4.1)
// has no Node-API target (4.2+), so it is PyPI's swig package at the version
// pyproject.toml pins for the Python build (one pin for every binding).
// Looked for in this order: $SWIG (refused when not the pinned version), a
// `swig` on PATH at that version, the venv build/node-swig of the checkout,
// which is made with pip when missing (it outlives builds: the slow part).
// `node scripts/swig.js` prints the path.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const repo = path.join(__dirname, '..', '..', '..');

function pin() {
  const text = fs.readFileSync(path.join(repo, 'pyproject.toml'), 'utf8');
  const m = /"swig==([0-9.]+)"/.exec(text);
  if (!m) throw new Error('pyproject.toml pins no swig==VERSION');
  return m[1];
}

// The version `swig -version` reports, or null when it does not run.
function versionOf(swig) {
  try {
    const out = execFileSync(swig, ['-version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const m = /SWIG Version (\S+)/.exec(out);
    return m ? m[1] : null;
  } catch {
    return null;
  }
}

function pinnedSwig() {
  const want = pin();
  const pipCommand = `pip install swig==${want}`;
  if (process.env.SWIG) {
    const got = versionOf(process.env.SWIG);
    if (got !== want) {
      throw new Error(`SWIG=${process.env.SWIG} is ${got ? `SWIG ${got}` : 'not a SWIG that runs'}; ` +
        `the wrapper is generated with SWIG ${want} (${pipCommand}): unset SWIG or point it at that one`);
    }
    return process.env.SWIG;
  }
  if (versionOf('swig') === want) return 'swig';
  const venv = path.join(repo, 'build', 'node-swig');
  const swig = path.join(venv, 'bin', 'swig');
  if (versionOf(swig) === want) return swig;
  console.error(`bitt: SWIG ${want} into ${path.relative(process.cwd(), venv) || venv} (python3 -m venv; ${pipCommand})`);
  try {
    fs.rmSync(venv, { recursive: true, force: true });
    execFileSync('python3', ['-m', 'venv', venv], { stdio: ['ignore', 'inherit', 'inherit'] });
    execFileSync(path.join(venv, 'bin', 'pip'), ['install', '-q', `swig==${want}`], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    throw new Error(`could not install SWIG ${want} into ${venv} (${e.message.split('\n')[0]}): ` +
      `install it yourself (${pipCommand}) and set SWIG=/path/to/bin/swig`);
  }
  if (versionOf(swig) !== want) throw new Error(`${swig} is not SWIG ${want} after ${pipCommand}`);
  return swig;
}

module.exports = { pinnedSwig };

if (require.main === module) {
  try {
    console.log(pinnedSwig());
  } catch (e) {
    console.error(`bitt: ${e.message}`);
    process.exit(1);
  }
}
