'use strict';
// Where the addon may be, in the order tried: a local build (node-gyp), then
// the prebuilt one for this platform and CPU that the npm tarball carries.
const path = require('path');

function candidates(pkg) {
  return [
    path.join(pkg, 'build', 'Release', 'bitt.node'),
    path.join(pkg, 'prebuilds', `${process.platform}-${process.arch}`, 'bitt.node'),
  ];
}

module.exports = { candidates };
