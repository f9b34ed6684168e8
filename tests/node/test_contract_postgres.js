'use strict';
// The contract on PostgreSQL (BITT_TEST_POSTGRES_URL), through the Promise API.
require('./contract_suite').register([['postgres', 'async']]);
