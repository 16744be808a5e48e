"""The pytest fixtures pottery's tests ask for, loaded with `-p pottery_fixtures`.

pottery's sdist ships its tests without the conftest.py that defines their `redis` and `aioredis`
fixtures, so lockstep supplies them here, written from how the tests use them: a client on one
database of the server at `LOCKSTEP_POTTERY_REDIS_URL` (default redis://localhost:6379/1; pottery's
own multi-master tests name localhost:6379 databases 1 to 5 themselves), emptied before and after
each test, with a 1 s socket timeout. pottery's own warnings (PotteryWarning) are not errors here.
"""

import os
import warnings

import pytest
from redis import Redis
from redis.asyncio import Redis as AIORedis

from pottery import PotteryWarning

REDIS_URL = os.environ.get("LOCKSTEP_POTTERY_REDIS_URL", "redis://localhost:6379/1")


def pytest_configure(config):
    warnings.filterwarnings("ignore", category=PotteryWarning)


@pytest.fixture(scope="session")
def redis_url():
    return REDIS_URL


@pytest.fixture
def redis(redis_url):
    client = Redis.from_url(redis_url, socket_timeout=1)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
async def aioredis(redis_url):
    client = AIORedis.from_url(redis_url, socket_timeout=1)
    await client.flushdb()
    yield client
    await client.flushdb()
    await client.aclose()
