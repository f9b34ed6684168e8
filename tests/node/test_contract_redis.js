'use strict';
// The contract on Redis (BITT_TEST_REDIS_URL), through the Promise API.
require('./contract_suite').register([['redis', 'async']]);
