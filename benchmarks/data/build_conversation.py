#!/usr/bin/env python3
"""Build benchmarks/data/project_conversation.json.

Hand-written evaluation data for project-ledger's retrieval benchmark: a
fictional six-week coding conversation ("Brightmeter", a usage-based billing
service) between a developer and a coding agent, the structured memories the
agent recorded along the way, and questions with evidence ids.

Authoring format (kept compact on purpose):
  * each session is a block with one turn per line: ``U: text`` / ``A: text``;
    a turn that later serves as evidence carries a label: ``A[label]: text``.
  * memories are ``label|kind|after_turn_label|tags|supersedes_label_or_-|text``.
  * questions reference turn labels and memory labels; the script resolves
    them to the final ids (t0001.., d001..), validates and writes the JSON.

Stdlib only. Run:  python benchmarks/data/build_conversation.py
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parent / "project_conversation.json"

SESSIONS: list[tuple[int, str, str]] = []


def S(day: int, title: str, block: str) -> None:
    SESSIONS.append((day, title, block))


# ---------------------------------------------------------------- s01
S(-42, "Kickoff: skeleton, tooling and first stack choices", r"""
U[name]: Morning. New project starting today: Brightmeter, a usage-based billing service. Harbor Analytics is the pilot customer; they want to bill their own clients per API call and per GB of storage.
A: Got it. So Brightmeter ingests usage events from Harbor, rates them against price plans and produces monthly invoices. Do you want the API and the background workers in a single repo?
U: Yes, one repo. Python backend, and I was thinking FastAPI since the team already knows it.
A: FastAPI fits. I'd suggest a src layout: src/brightmeter/ for the package, tests/ at the root, and migrations/ for Alembic. Any preference on dependency tooling?
U[uv]: Let's use uv, I'm done waiting on poetry lock. Pin Python 3.11 for now, that's what the base images at work ship.
A: OK. I'll create pyproject.toml with requires-python = ">=3.11,<3.12" and commit a uv.lock. Initializing now.
U: go
A[versions]: Created pyproject.toml, src/brightmeter/__init__.py, src/brightmeter/main.py with an app factory create_app(), and tests/test_health.py. `uv sync` resolved 41 packages: fastapi 0.111.0, starlette 0.37.2, pydantic 2.7.1, uvicorn 0.29.0.
U: fine. Linting: ruff, and I want mypy strict but only on src, the tests can be sloppy.
A[ruff]: Added ruff with line-length = 100 and the E, F, I, B and UP rule sets, plus a [tool.mypy] section with strict = true and files = ["src"]. The tests folder is not type-checked.
U: 100 is good. Config next, I want everything coming from env vars.
A[settings]: I'll use pydantic-settings: a Settings class in src/brightmeter/config.py with env_prefix "BM_". The database DSN is BM_DATABASE_URL and Redis is BM_REDIS_URL. get_settings() is wrapped in lru_cache so it's read once per process.
U: good. Local services through docker compose please.
A: Writing docker-compose.yml with postgres:16 and redis:7.2. Default host ports 5432 and 6379?
U[ports]: No, 5432 is taken by another project's postgres on my laptop. Map postgres to 5433 and redis to 6380 on the host.
A[envexample]: Done: postgres on localhost:5433, redis on localhost:6380. .env.example now has BM_DATABASE_URL=postgresql+asyncpg://bm:bm@localhost:5433/brightmeter and BM_REDIS_URL=redis://localhost:6380/0.
U: docker compose up -d
A: Both containers report healthy. Postgres says 16.3, Redis 7.2.4.
U: we need a make target for the dev server
A[devport]: Added a Makefile. `make dev` runs `uv run uvicorn brightmeter.main:create_app --factory --reload --port 8040`. I stayed off 8000 since you said that's usually busy on your machine.
U: 8040 works. hit the health endpoint
A[apihealth]: GET http://localhost:8040/healthz returns {"status":"ok","db":"ok","redis":"ok"}. The handler pings both with a 1 second timeout each.
U: Now background processing. We'll need workers for rating usage and generating invoices. Celery?
A: Celery is the safe choice: mature, good retry semantics, beat for schedules. The catch is that our DB layer will likely be async SQLAlchemy and Celery tasks are sync, so we'd end up wrapping calls in asyncio.run. Alternatives would be arq or Dramatiq.
U[queue1]: Let's just go with Celery and Redis as the broker. Known quantity, we can revisit if it hurts.
A[queue1d]: OK: Celery 5.4 with the Redis broker on db 1 and the result backend disabled. I'll add src/brightmeter/worker.py with the app object and a placeholder ping task.
U: logging?
A[log1]: For now plain stdlib logging with a text formatter, level from BM_LOG_LEVEL defaulting to INFO. It's configured once in brightmeter/logging.py and called from create_app and from the worker bootstrap.
U: fine for now. Can the JSON responses be faster than the default?
A[orjson]: I'll set default_response_class=ORJSONResponse on the app. orjson serializes datetimes and UUIDs natively and is noticeably quicker on large payloads like invoices with many lines.
U: sure. Where do we deploy this? I really don't want to babysit a cluster.
A: For a pilot a PaaS is reasonable. Render, Fly.io or Railway can all run a web service plus a background worker. Render has managed Postgres and Redis in the same dashboard.
U[deploy1]: Render then. One web service, one background worker, managed Postgres and managed Redis.
A[deploy1d]: Noted. I'll add a render.yaml blueprint once there's something worth deploying.
U: Admin UI: Harbor's finance person needs to look at invoices. Nothing fancy.
A[admin1]: The simplest thing is server-rendered Jinja2 pages mounted under /admin in the same FastAPI app, with HTMX for the few interactive bits. No separate frontend build.
U[admin1u]: yeah do that, no separate JS app for now.
A: OK, /admin stays a stub router until we actually have invoices to show.
U: CI
A[ci]: GitHub Actions workflow .github/workflows/ci.yml: uv sync, ruff check, ruff format --check, mypy, then pytest with pytest-xdist -n 4. postgres:16 and redis:7.2 run as job service containers.
U: push it and see
A: First run failed: mypy says "Module 'celery' has no attribute 'Celery'" because celery ships without type information.
U: ugh. just ignore missing imports for celery
A[celerystubs]: Added a [[tool.mypy.overrides]] block with module = "celery.*" and ignore_missing_imports = true. CI is green now, 1m52s end to end.
U: who's the contact on Harbor's side btw, I need it in the README
A[dana]: From your notes of last week's call: Dana Okafor from their finance team for billing questions, and Marcus for the technical integration. Both are in the README under "Pilot contacts".
U: right. And the deadline: Harbor wants their first real invoice run on the 1st of next month.
A[pilotdate]: Added to the README too: first production invoice run for Harbor on the 1st of next month, so roughly five weeks from today.
U: pre-commit as well?
A[precommit]: Added .pre-commit-config.yaml with ruff, ruff-format and check-added-large-files capped at 500 KB. Run `uv run pre-commit install` once locally.
U: done, installed.
A[utc]: One more thing: all timestamps in the DB will be timestamptz in UTC and we convert only for display. We still need to decide how a tenant's billing periods map to a timezone when we design the schema.
U: next time. Let's call it here.
A: Sounds good. Today: skeleton, settings, compose, CI, a Celery worker stub and the Jinja admin stub.
U: thanks, see you in a couple of days
A: See you then.
""")

# ---------------------------------------------------------------- s02
S(-39, "Schema design and first migrations", r"""
U: Schema day. List the core tables first.
A[tables]: Proposal: tenants, customers (a tenant's end customers), meters, usage_events, price_plans, subscriptions, invoices and invoice_lines. A tenant is a Harbor-level account; customers are the people Harbor bills.
U: subscriptions links a customer to a price plan I guess
A[subs]: Yes: subscriptions(customer_id, price_plan_id, started_at, ended_at, status). One active subscription per customer, enforced with a partial unique index WHERE ended_at IS NULL.
U: good. primary keys?
A: Options are bigint identity or UUIDs. Bigint is compact and fast to index; UUIDs are nicer when ids leak into URLs or get generated client-side.
U[pk1]: bigint identity everywhere, keep it simple. We can expose public ids separately if we ever need to.
A[pk1d]: OK, `id BIGINT GENERATED ALWAYS AS IDENTITY` on every table.
U: money columns?
A[money1]: For amounts I'd go NUMERIC(12,2) for now: exact decimals that map to Python Decimal, and 12 digits is plenty at Harbor's volumes.
U: fine
A: Which ORM setup do you want? I'd default to SQLAlchemy 2.0.
U[sqla]: yes, SQLAlchemy 2.0 async with asyncpg. Declarative with Mapped[] annotations.
A[naming]: Setting up src/brightmeter/db/models.py and db/session.py with async_sessionmaker. I'm also giving MetaData a naming convention: ix_%(column_0_label)s, uq_%(table_name)s_%(column_0_name)s, fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s, pk_%(table_name)s.
U: why does that matter?
A[namingwhy]: Without it, constraints created by autogenerate get names Postgres invents, and a later migration that drops one has to know that generated name. With a convention, every migration can refer to a constraint by a predictable name.
U: ok. alembic setup
A[alembic]: Ran `alembic init -t async migrations`. I set file_template so revisions are named like 20240514_0930_create_core_tables.py (date, time, slug) and sort chronologically in the folder.
U: usage_events columns
A: id, tenant_id, customer_id, meter_key, quantity, occurred_at timestamptz, received_at timestamptz default now(), idempotency_key text and properties JSONB.
U: quantity type? some meters are fractional, GB-hours for example
A[quantity]: NUMERIC(24,6): 18 integer digits and 6 decimal places. That covers fractional GB-hours as well as very large call counts.
U: indexes
A[part1]: One plain usage_events table with a composite index on (tenant_id, meter_key, occurred_at). No partitioning yet; at Harbor's current ~2M events a month it isn't needed.
U: sounds right. meters?
A[meterkey]: meters(tenant_id, key, display_name, unit, aggregation). key has to match ^[a-z][a-z0-9_.]{2,63}$, so api.calls and storage.gb_hours are valid. aggregation is one of sum, max or last.
U: what's "last" for
A[lastagg]: Gauge-style meters like seats: the billable value is the most recent reported value in the period rather than a sum.
U: ok. timezones: Harbor bills calendar months, but in whose local time?
A: Most billing systems pick one timezone per account. I'd put it on the tenant as an IANA name with default 'UTC'. Period boundaries are local midnight on the 1st, stored as UTC instants.
U[billingtz]: per tenant is enough. Harbor is Europe/Amsterdam.
A[billingtzd]: Added tenants.billing_tz TEXT NOT NULL DEFAULT 'UTC', validated on the Python side with zoneinfo. Harbor's tenant will use Europe/Amsterdam.
U: price plans
A[tiers]: price_plans(id, tenant_id, meter_key, currency, tier_mode, tiers JSONB). tiers is an ordered list of objects {"up_to": int or null, "unit_amount": decimal string, "flat_amount": decimal string or null}; the last tier has up_to null.
U: tier_mode?
A[tiermode]: graduated or volume. Graduated prices each unit at its own tier's rate; volume prices all units at the rate of the tier the total falls into.
U: currency as ISO code, EUR for Harbor.
A[currencies]: currency is CHAR(3), validated against a small allowlist for now: EUR, USD and GBP.
U: tests: I don't want docker for unit tests, keep them fast
A[testdb1]: Then unit tests can use SQLite in memory through aiosqlite, keeping the models portable. A conftest fixture runs metadata.create_all once per test session.
U: do it
A: Done. tests/conftest.py has an `engine` fixture on sqlite+aiosqlite:///:memory: and a `session` fixture that wraps each test in a transaction that gets rolled back.
U: run the tests
A: 6 passed in 0.41s.
U: now a seed command
A[seed]: `make seed` runs scripts/seed.py: creates tenant acme-test (billing_tz Europe/Amsterdam), two customers and three meters: api.calls (sum), storage.gb_hours (sum) and seats (last), plus a graduated EUR price plan for api.calls.
U: why acme-test and not harbor?
A[seedwhy]: I didn't want a real customer's name in seed data that ends up in screenshots and demos. We can create a harbor tenant through the admin later.
U: fair enough
A: Writing the first migration now: 20240514_1012_create_core_tables.py.
U: alembic upgrade head against the compose db
A: Upgraded to head. \dt lists the 8 tables plus alembic_version.
U: does autogenerate see no changes now?
A[alembiccheck]: `alembic check` reports "No new upgrade operations detected." I added that step to CI so a model change without a migration fails the build.
U: nice. what about JSONB in sqlite though?
A[jsonbvariant]: SQLAlchemy maps it through a variant: JSONB().with_variant(JSON(), "sqlite"). Storing and reading works, but JSONB operators such as @> won't work in the SQLite tests.
U: we'll see if that bites us
A: It might, especially once we filter on properties. Worth keeping an eye on.
U: last one: tenants need a short code for invoice numbers later
A[shortcode]: Added tenants.short_code VARCHAR(6), unique, uppercase letters only. The seed tenant acme-test gets ACME.
U: ok good for today
A: Summary: 8 tables, naming convention, first migration, SQLite-based tests, seed script.
U: one sec, does the seed also create an API token or anything?
A: Not yet, there's no auth at all so far. Ingest will get a temporary token when we build it.
U: ok, bye
""")

# ---------------------------------------------------------------- s03
S(-36, "Usage ingestion endpoint", r"""
U: Today: the ingestion API. Harbor will push usage from their gateway.
A[ingestroute]: Plan: POST /v1/events taking a batch of events. The route lives in src/brightmeter/api/routes/events.py and the business logic in services/ingest.py so workers can reuse the validation.
U: batch limits?
A[batch]: I'd cap a request at 500 events and 1 MB of body. Harbor's gateway flushes every few seconds, so 500 leaves plenty of headroom. Anything bigger gets 413 with E_BATCH_TOO_LARGE.
U: ok. what does an event look like?
A[eventmodel]: UsageEventIn (pydantic): meter_key: str, customer_ref: str, quantity: Decimal, occurred_at: AwareDatetime, idempotency_key: str (max 128 chars), properties: dict of str to scalar values, empty by default.
U: customer_ref is their id for the customer, not ours
A[unknowncust]: Right, it maps to customers.external_ref, unique per tenant. We resolve it to customer_id during ingest, and an unknown ref gets E_UNKNOWN_CUSTOMER for that event.
U: late events? their gateway sometimes replays old buffers after an outage
A: We need a cutoff, otherwise an event could land in a period that's already invoiced. How far back do their replays go?
U: they said a month in the worst case
A[late]: Then LATE_EVENT_WINDOW_DAYS = 35 in brightmeter/ingest/limits.py. An event with occurred_at older than now minus 35 days is rejected with E_LATE_EVENT.
U: and events from the future? clock skew on their side
A[future]: Allow up to 5 minutes ahead (FUTURE_SKEW_SECONDS = 300); beyond that the event gets E_FUTURE_EVENT.
U: response format when some events in a batch fail?
A: Either fail the whole batch, or accept the valid ones and report per-event errors, as a 207 Multi-Status or as a 202 with a body.
U[partial]: Accept the good ones. Always return 202 if the batch parsed, with counts and errors by index. No 207, their client library chokes on it.
A[partiald]: OK: 202 with {"accepted": n, "rejected": m, "errors": [{"index": i, "code": "E_LATE_EVENT", "message": "..."}]}. A malformed body is still a 422.
U: duplicates. their gateway retries on timeouts, so the same event can show up twice.
A: That's what idempotency_key is for. Cheapest check: Redis SET NX with a TTL per tenant and key. If the SET fails it's a duplicate; we count it as accepted but don't insert it.
U[dedup1]: yes, Redis SETNX with a 24h TTL. key format?
A[dedupkey]: dedup:{tenant_id}:{idempotency_key}, TTL 86400 seconds. Duplicates are reported in a separate "duplicates" count, not as errors.
U: good, they'd panic if retries showed up as errors
A: Writing the handler now.
U: actually, id type for usage_events. bigint identity on the hottest table means a sequence hit per row, and we may want to generate ids in the app before insert for a bulk path later
A: True. For usage_events specifically, UUIDv7 would let us generate ids client-side, and since they're time-ordered the btree stays mostly append-only, unlike random UUIDv4.
U[pk2]: switch usage_events to UUIDv7. The other tables stay bigint.
A[pk2d]: Using the uuid6 package (uuid6.uuid7()) since the stdlib has no v7. Migration 20240517_1105_usage_events_uuid7_pk.py changes the column to UUID and drops the identity.
U: run tests
A[testfail]: 3 failures in tests/ingest/test_events_api.py: SQLite has no UUID type, so the variant falls back to CHAR(32) and comparisons break; and one JSONB containment query on properties fails outright.
U: this is what I was afraid of
A: I think SQLite in tests is going to keep costing us: we rely on JSONB operators, partial indexes and soon advisory locks. testcontainers-python can start a real postgres:16 once per test run; with xdist each worker can get its own database cloned from a template.
U: how slow is that?
A[testspeed]: Container start is about 2.5 seconds, once per run. After that tests are as fast as before, since each one runs inside a rolled-back transaction.
U[testdb2]: ok, switch to testcontainers postgres. Drop the sqlite setup entirely.
A[testdb2d]: Done: conftest starts PostgresContainer("postgres:16-alpine"), runs alembic upgrade head into a template database, and each xdist worker clones it with CREATE DATABASE ... TEMPLATE. aiosqlite is removed.
U: and the tests?
A: 19 passed in 4.8s, container start included.
U: does the endpoint need auth yet?
A[devtoken]: I'd put a temporary static token check on it, read from BM_DEV_INGEST_TOKEN, so we can test with curl, and replace it with real API keys later.
U: fine, temporary. let me curl it
A: Example: curl -X POST localhost:8040/v1/events -H "Authorization: Bearer $BM_DEV_INGEST_TOKEN" -d @fixtures/events_small.json
U: {"accepted":48,"rejected":2,"duplicates":0,...}, the 2 rejects are E_UNKNOWN_CUSTOMER. expected? 
A: Yes, fixtures/events_small.json has two events for customer_ref "ghost-1" on purpose.
U: send it again
A: Second run: accepted 0, duplicates 48, rejected 2. Dedup works.
U: insert path, one insert per event?
A[insertmany]: A single executemany INSERT per batch through SQLAlchemy insert().values(list). A 500-event batch takes about 40 ms locally. Fine for now; a COPY-based path can come later if we need it.
U: what about a negative quantity?
A[negative]: Rejected with E_NEGATIVE_QUANTITY. Corrections should go through a separate adjustments endpoint, not negative usage.
U: add a todo for the adjustments endpoint
A[todoadj]: Recorded: build an adjustments endpoint for usage corrections.
U: properties size? someone will dump a whole request body in there
A[propsize]: Cap properties at 20 keys and 2 KB serialized; beyond that the event gets E_PROPERTIES_TOO_LARGE.
U: good. ok that's enough for today, commit
A: Committed as "ingest: POST /v1/events with validation, dedup and testcontainers".
U: thanks
A: Next up would be the worker and rating, whenever you're ready.
""")

# ---------------------------------------------------------------- s04
S(-32, "Worker queue and rating engine", r"""
U: Rating engine today: take raw events, aggregate per customer and meter, get them ready for pricing.
A[celerypain]: Before that, the Celery worker. I started the first real task and it's awkward: every task needs asyncio.run() around our async session code, and the loop created per task breaks the asyncpg connection pool.
U: how bad is it?
A: We'd need a separate sync engine just for workers, or a fresh loop and pool per task. Both work, both are ugly. arq is built on asyncio and Redis, it's small and supports cron jobs natively. Tasks are plain async functions receiving a ctx with shared resources like the engine.
U: what do we lose?
A[arqloss]: Celery's ecosystem: flower, canvas primitives like chords, broker flexibility. arq only talks to Redis and retries are explicit via the Retry exception. For periodic rating, invoice generation and webhook sending that's enough.
U[queue2]: ok switch to arq. rip celery out completely.
A[queue2d]: Done: celery removed, arq 0.26 added. src/brightmeter/worker.py now defines WorkerSettings with functions, cron_jobs, an on_startup that creates the engine and an on_shutdown that disposes it. Still Redis db 1.
U: worker settings numbers?
A[arqcfg]: max_jobs = 20, job_timeout = 300 seconds, keep_result = 3600, max_tries = 5, queue name "bm:default".
U: and the mypy override for celery can go
A: Removed. arq ships type hints, so no override needed.
U: ok. now rating. structure?
A: Rate in windows. A cron job enqueues rate_usage_window per tenant and meter for the last closed window. The function aggregates events per customer into hourly buckets in a rated_usage table, so invoice generation only reads pre-aggregated rows.
U: signature?
A[ratefn]: async def rate_usage_window(ctx, tenant_id: int, meter_key: str, window_start: datetime, window_end: datetime) -> RatedWindowResult, in src/brightmeter/rating/engine.py. RatedWindowResult carries buckets_written, events_seen and late_events.
U: how often does the cron fire?
A[sched1]: Every 5 minutes: cron(enqueue_rating, minute={0, 5, ..., 55}). Each run rates the window [now-10min, now-5min) rounded to 5 minutes, so events arriving up to 5 minutes late still make it in.
U: and events later than that?
A[dirty]: Ingest marks the affected hour bucket as dirty in rating_dirty_buckets, and the next cron run re-rates dirty buckets first.
U: two workers rating the same thing at once?
A[lock]: Each rate_usage_window call takes a transaction-scoped Postgres advisory lock: pg_try_advisory_xact_lock(hashtext(tenant_id || ':' || meter_key)). If it's already held, the job returns early and the next cycle picks the window up.
U: hashtext collisions?
A: Possible but harmless: a collision only means two unrelated meters skip one cycle. It's not a correctness problem.
U: fine. rated_usage schema
A[rated]: rated_usage(tenant_id, customer_id, meter_key, bucket_start timestamptz, quantity NUMERIC(24,6), event_count int), primary key (tenant_id, customer_id, meter_key, bucket_start). Writes are upserts with ON CONFLICT DO UPDATE.
U: do hourly buckets work for the 'last' aggregation?
A: For last, a bucket stores the latest value with its timestamp, and the period value is taken from the newest bucket. I added a last_occurred_at column for that.
U: ok write it
A: Written, along with tests/rating/test_engine.py: 11 cases, including graduated tiers.
U: wait, does pricing happen in rating or in invoicing?
A[pricingwhere]: Rating only aggregates quantities. Pricing happens at invoice time, because tiers apply to the period total, not to each hour.
U: right, makes sense
A: I've made that explicit in the module docstring.
U: run the worker locally
A[makeworker]: `make worker` runs `uv run arq brightmeter.worker.WorkerSettings`. Startup log: "Starting worker for 3 functions: rate_usage_window, enqueue_rating, cron:enqueue_rating".
U: it needs a health endpoint, the platform needs something to probe
A[workerhealth]: arq has no HTTP server, so on_startup launches a tiny aiohttp server on port 8041 serving /healthz. It reports ok while the last heartbeat from the arq loop is less than 60 seconds old.
U: who else will call it?
A[healthcaller]: The docker compose healthcheck for the worker container (curl -f localhost:8041/healthz every 15s), and I'd point the Better Stack uptime monitor at it in staging.
U: ok good
A: Added to docker-compose.yml and documented in docs/operations.md.
U: try it with seed data
A[seedrating]: Seeded 10k synthetic events for acme-test across the three meters. After one cron cycle rated_usage has 216 rows, and the api.calls total matches the raw events exactly.
U: and storage.gb_hours with decimals?
A: Matches to the sixth decimal: 1843.250000 raw vs 1843.250000 rated.
U: nice. what if a rating job crashes halfway?
A[crash]: Everything for one window runs in one transaction, so a crash rolls the upserts back. arq retries up to max_tries = 5, and the advisory lock goes away with the transaction.
U: ok. worst-case lag then?
A[lag]: Normally 5 to 10 minutes behind real time. Fine for monthly invoices, though a dashboard might want fresher numbers later.
U: write that down as a known limitation
A: Recorded as a note.
U: tiers: default mode if a plan doesn't say?
A[tierdefault]: graduated. volume has to be set explicitly on the plan, since it's the one that surprises people.
U: agreed
A: Summary: Celery replaced by arq, rating engine with hourly buckets, advisory locks, worker health endpoint on 8041.
U: cool, that's it for today
""")

# ---------------------------------------------------------------- s05
S(-28, "Invoices, money handling and proration", r"""
U: Invoices today. First the money type: NUMERIC(12,2) is going to hurt. Tiered unit prices look like 0.0004 EUR per call.
A: Right, tier unit prices need more precision, but invoice line totals should be whole cents. The usual approach is integer minor units for every stored amount, and decimals only for unit prices.
U[money2]: do that. amounts as BIGINT minor units, columns named amount_minor, subtotal_minor, tax_minor, total_minor. unit prices stay decimal strings in the tiers JSON.
A[money2d]: Migration 20240525_0915_money_minor_units.py converts the NUMERIC columns by multiplying by 100, which is safe since only test data exists. I also added a Money helper in brightmeter/billing/money.py with from_decimal() and to_decimal() that take the currency exponent into account.
U: rounding when converting line totals?
A[round1]: Decimal.quantize to the currency exponent with ROUND_HALF_UP, applied once per invoice line, never per unit.
U: ok. Also: bump to python 3.12, ops just published 3.12 base images.
A[py2]: Updated requires-python to ">=3.12,<3.13", the Dockerfile to python:3.12-slim and the CI matrix to 3.12. uv lock refreshed and everything passes.
U: nice, can we drop uuid6 now?
A[uuid6keep]: Not yet: the standard library only gains uuid7 in 3.14, so uuid6 stays.
U: ok. invoice lifecycle
A[invstatus]: InvoiceStatus(StrEnum) in brightmeter/billing/models.py: draft, open, paid, void, uncollectible. Drafts are editable; finalize moves draft to open and assigns the number; paid and void are terminal; uncollectible is where dunning gives up.
U: invoice numbers. Dana wants them readable.
A[invnum]: BM-{short_code}-{YYYY}{MM}-{seq:05d}, for example BM-ACME-202406-00017. The sequence is per tenant per month and only assigned at finalize, so drafts carry no number.
U: good. how long before an invoice counts as overdue?
A: Net-7 to net-30 is typical. What does Harbor's contract with its customers say?
U[grace1]: go with 7 days for now. make it a constant I can change later.
A[grace1d]: INVOICE_GRACE_DAYS = 7 in brightmeter/billing/constants.py. due_at = finalized_at + INVOICE_GRACE_DAYS, at end of day in the tenant's billing_tz.
U: proration. customers change plans mid-month.
A: Proration credits the unused part of the old plan's fixed fee and charges the new plan for the rest. The question is granularity: days or seconds.
U[prorate1]: days. finance people think in days.
A[proratesig]: def compute_proration(plan_amount_minor: int, period_start: datetime, period_end: datetime, change_at: datetime) -> int in brightmeter/billing/proration.py. It counts whole days remaining from change_at's local date (inclusive) over the number of days in the period, and rounds with the invoice rounding mode.
U: what does it return, the credit?
A[proratereturn]: The prorated amount for the remaining portion, in minor units. The caller turns it into a negative credit line for the old plan and a positive charge line for the new one.
U: write tests for february
A[febtests]: Added tests/billing/test_proration.py with February 2024 cases (29 days): a change on the 1st gives the full amount, a change on the 29th gives 1/29 of it.
U: run
A: 14 passed.
U: routes for invoices
A[invroutes]: src/brightmeter/api/routes/invoices.py: GET /v1/invoices (filters customer_id, status, period), GET /v1/invoices/{invoice_id}, POST /v1/invoices/{invoice_id}/finalize and POST /v1/invoices/{invoice_id}/void.
U: void after paid?
A[voidpaid]: Rejected with 409 E_INVOICE_NOT_VOIDABLE. Voiding is only for open invoices; a paid one needs a credit note.
U: credit notes, ugh. todo
A[todocredit]: Recorded a todo for credit notes, covering mid-cycle downgrades too.
U: invoice generation job
A[genjob]: generate_invoices(ctx, tenant_id, period) as an arq job: for each active subscription, sum rated_usage over the period, apply the tiers, add fixed fees and proration lines, and write a draft invoice. Re-running replaces the draft's lines, so it's idempotent.
U: and finalization, automatic?
A[manualfinal]: I'd keep finalization manual during the pilot so Dana can review the drafts first. A CLI for ops, and a button in the admin.
U: yes CLI
A[bmctl]: Added a Typer CLI installed as `bmctl`. `bmctl invoices finalize --tenant acme-test --period 2024-05 --dry-run` prints what would be finalized with totals; without --dry-run it finalizes and assigns numbers.
U: try a dry run on seed data
A[dryrun]: Dry run: 2 invoices, totals EUR 41.27 and EUR 8.90, no numbers assigned.
U: tax?
A: Do you know how Harbor handles VAT towards their customers?
U[tax]: All their customers are EU businesses, reverse charge. So no VAT calculation for the pilot, just put the reverse-charge note on the invoice.
A[taxd]: OK: tax_minor is 0 and invoices carry the reverse-charge note. I won't build any VAT logic.
U: correct
A: Anything else for invoices today?
U: the PDF. does Dana need a PDF?
A: She hasn't asked for one. Harbor sends its own invoice emails, they only need our data through the API.
U: right, skip. enough for today.
A: Summary: minor units, Python 3.12, invoice model and numbering, grace constant, day-based proration, bmctl.
U: 👍
""")

# ---------------------------------------------------------------- s06
S(-24, "Auth: API keys, sessions and rate limiting", r"""
U: Auth day. Two kinds: machine API keys for ingest, and human logins for the admin pages.
A: For keys: generate a random secret, show it once, store only a hash plus a lookup prefix. For humans: session tokens.
U: key format
A[keyfmt]: A bm_live_ or bm_test_ prefix, then 32 base62 characters. We store the first 8 characters after the prefix as key_prefix (indexed) for lookup, and a hash of the full key.
U: hash with what?
A: Options: a slow password hash like bcrypt or argon2, or a fast keyed hash like HMAC-SHA256. The keys carry about 190 bits of randomness, so brute force isn't realistic either way.
U[apikey1]: use bcrypt anyway, belt and braces.
A[apikey1d]: OK, bcrypt with cost 12 from the bcrypt package. Table api_keys(id, tenant_id, key_prefix, key_hash, scopes text[], created_at, last_used_at, revoked_at).
U: scopes?
A[scopes]: events:write for ingest, invoices:read for pulling invoices, admin for everything including key management. A dependency require_scope("invoices:read") in brightmeter/auth/deps.py checks the presented key's scopes.
U: error codes
A[autherr]: Missing or unknown key: 401 E_INVALID_KEY. Revoked key: 401 E_KEY_REVOKED. Valid key without the needed scope: 403 E_SCOPE.
U: good. replace the dev token on /v1/events
A: Done: BM_DEV_INGEST_TOKEN is gone and /v1/events now requires events:write.
U: human logins: Dana and maybe two others. no SSO for now.
A: Email plus password hashed with argon2id, and JWTs for the session: short access token, longer refresh token stored server-side so we can revoke it.
U[auth1]: JWT with HS256, secret in BM_JWT_SECRET. Only one service verifies them anyway.
A[ttl]: OK: HS256 with BM_JWT_SECRET. Access token TTL 15 minutes; refresh token 14 days, stored hashed in refresh_tokens and rotated on every use.
U: password hashing params?
A[argon]: argon2-cffi with its defaults (time_cost 3, 64 MiB memory). Minimum password length 12.
U: rate limiting on the API
A: Per API key. Simplest approach: a fixed-window counter in Redis, INCR with a 1 second expiry.
U[ratelimit1]: 100 requests per second per key, fixed window. 429 with Retry-After.
A[ratelimit1d]: Done as middleware in brightmeter/api/ratelimit.py with keys rl:{key_prefix}:{epoch_second}. Going over returns 429 E_RATE_LIMITED with Retry-After: 1.
U: test the whole flow
A: Created a key with `bmctl keys create --tenant acme-test --scopes events:write`; it printed bm_test_Q3x... once. Ingest with it: 202.
U: latency?
A[bcryptlat]: Hmm: p50 on /v1/events went from 9 ms to 260 ms. A bcrypt cost-12 verify takes about 250 ms on this laptop.
U: that's insane. cache it?
A: We can cache successful verifications in-process for 60 seconds, keyed by the sha256 of the presented key. After the first request per key, p50 is back to around 10 ms.
U: do the cache, we'll see
A[authcache]: Added a cachetools TTLCache(maxsize=10_000, ttl=60) in brightmeter/auth/apikeys.py. A revocation can take up to 60 seconds to apply; that's documented.
U: test-mode keys, should they write into the same tables?
A[testmode]: I'd keep one set of tables with a livemode boolean on usage_events, invoices and api_keys; bm_test_ keys only see livemode = false rows. That's how Stripe does it and it keeps the schema simple.
U: agreed
A: Added livemode (default true) to those tables, and the auth dependency sets request.state.livemode.
U: run everything
A[livemodefail]: 87 passed, 2 failed: the rating tests didn't filter by livemode, so test events got rated into live buckets.
U: livemode in rated_usage too then
A: Added livemode to rated_usage and its primary key. 89 passed.
U: is there a login endpoint?
A[login]: POST /v1/auth/login returns access and refresh tokens, POST /v1/auth/refresh rotates them, POST /v1/auth/logout revokes the refresh token. Routes are in api/routes/auth.py.
U: lockout after failed attempts?
A[lockout]: 5 failed attempts within 15 minutes lock the account for 15 minutes, counted in Redis under login_fail:{email}.
U: and the admin pages use the jwt how?
A[cookie]: The Jinja admin reads the access token from an HttpOnly cookie named bm_session, SameSite=Lax.
U: fine. anything I'm forgetting?
A: Audit logging for key creation and revocation. Small: an audit_log table with actor, action and target.
U: yes add it, it's tiny
A[auditlog]: Added audit_log(id, tenant_id, actor, action, target, created_at). Key create and revoke and logins write to it.
U: good. done with auth for now
A: Summary: scoped API keys, JWT sessions, rate limiting, livemode split, audit log.
""")

# ---------------------------------------------------------------- s07
S(-20, "Payments with Stripe and outbound webhooks", r"""
U: Payments. Harbor wants their customers' cards charged automatically when an invoice is finalized.
A: Which payment provider does Harbor use today?
U[stripe]: Stripe. They already have a Stripe customer for everyone.
A[striped]: Then customers.psp_customer_id maps to their Stripe customer, and we create a PaymentIntent per finalized invoice with off_session=true and confirm=true against the default payment method. Using stripe-python 9.x.
U: idempotency on the stripe side
A[stripeidem]: Every PaymentIntent create passes Idempotency-Key = "inv_{invoice_id}_attempt_{n}", so a retried job can never double charge.
U: whose stripe account, ours or theirs?
A[psptenant]: Theirs: Harbor's restricted key, stored encrypted per tenant in tenant_psp_credentials. For the pilot there's just the one.
U: webhooks from stripe to us
A[webhook1]: Inbound endpoint POST /webhooks/stripe. We verify the Stripe-Signature header with stripe.Webhook.construct_event using the signing secret in BM_STRIPE_WEBHOOK_SECRET.
U: which events do we care about?
A[stripeevents]: payment_intent.succeeded marks the invoice paid; payment_intent.payment_failed records the failure and starts dunning; charge.refunded is only logged for now, refund handling comes later.
U: store the raw events?
A[pspevents]: Yes: psp_events(id, provider, event_id unique, type, payload JSONB, received_at, processed_at). The unique event_id turns Stripe's redeliveries into no-ops.
U: now our outbound webhooks to Harbor. they want to know when invoices get finalized and paid.
A[outevents]: Outbound event types: invoice.finalized, invoice.paid, invoice.payment_failed and invoice.voided. Payload shape {id, type, created, data: {invoice}}.
U: signing
A[sig]: Header X-Brightmeter-Signature: t=<unix ts>,v1=<hex HMAC-SHA256 of "t.body" with the endpoint's secret>. Receivers should reject timestamps older than 5 minutes. Same scheme as Stripe's, which Marcus already knows how to verify.
U: retries when harbor's endpoint is down
A[retryfile]: A RetryPolicy dataclass in brightmeter/webhooks/retry.py with max_attempts and a delay function. First cut with a fixed backoff?
U[retry1]: yes: 5 attempts, 2 seconds apart. keep it simple.
A[retry1d]: RetryPolicy(max_attempts=5, base_delay=timedelta(seconds=2)) with a fixed delay. Each attempt is an arq job deliver_webhook(ctx, delivery_id), re-enqueued with _defer_by.
U: delivery log
A[deliveries]: webhook_deliveries(id, endpoint_id, event_id, attempt, status_code, response_ms, error, next_attempt_at, delivered_at). The admin shows the last 100 per endpoint.
U: what counts as success?
A[success2xx]: Any 2xx within 10 seconds. A 410 Gone disables the endpoint automatically; everything else is retried.
U: ok, write it
A: Written. tests/webhooks/test_delivery.py mocks the receiver with respx.
U: run
A[sigbug]: 9 passed, 1 failed: test_signature_matches_reference. I was signing re-serialized JSON instead of the exact bytes that go over the wire.
U: classic
A: Fixed: serialize once with orjson, sign those bytes, send the same bytes. Passing now.
U: how do I test stripe locally?
A[stripecli]: stripe listen --forward-to localhost:8040/webhooks/stripe, then stripe trigger payment_intent.succeeded. The CLI prints a whsec_ secret to put into BM_STRIPE_WEBHOOK_SECRET locally.
U: try it
A: Triggered payment_intent.succeeded: 200 and a psp_events row, but no invoice matched because the triggered intent has no metadata.
U: do we set metadata when we create intents?
A[pimeta]: Yes: metadata {"bm_invoice_id": ..., "bm_tenant": ...}, and the handler finds the invoice through metadata.bm_invoice_id. Triggered fixtures don't have it, so they're logged and ignored.
U: ok fine. payment failure flow?
A: On payment_intent.payment_failed we store the decline code on the invoice as last_payment_error and emit invoice.payment_failed. The dunning logic itself would be next session?
U: yes next time. what about a currency mismatch between the invoice and the stripe customer?
A[currency]: We always pass the invoice currency. If Stripe rejects it, that's a hard failure surfaced as E_PSP_CURRENCY_MISMATCH, without retries.
U: one more: the stripe api version
A[stripever]: Pinned stripe.api_version = "2024-04-10" in brightmeter/payments/stripe_client.py so webhook payload shapes can't change under us.
U: good
A: Should refunds also flip the invoice status?
U: no, leave refunds for after the pilot, Dana handles them by hand today
A: OK, charge.refunded stays log-only.
U: ok stop here
A: Summary: Stripe PaymentIntents, inbound Stripe webhook, signed outbound webhooks with retries.
U: thanks, good session
""")

# ---------------------------------------------------------------- s08
S(-16, "Dunning, grace period and retry tuning", r"""
U: Dunning today. Dana sent notes: she wants reminder emails, and she thinks 7 days before overdue is too short.
A: What does she propose?
U[grace2]: 10 days. their customers pay monthly and a week is too tight around bank holidays.
A[grace2d]: Changing INVOICE_GRACE_DAYS from 7 to 10 in billing/constants.py. Invoices that are already open keep their due_at; only newly finalized ones get 10 days.
U: yes, don't touch existing ones
A[gracetest]: Done, plus a test asserting that an invoice finalized on the 3rd is due on the 13th at 23:59:59 Amsterdam time.
U: reminder schedule?
A[dunning]: Config key dunning.schedule_days = [1, 3, 7]: reminder emails 1, 3 and 7 days after due_at while unpaid. Each reminder also retries the charge if there's a card on file.
U: where does config like that live, env?
A[tenantsettings]: Per tenant: a tenant_settings JSONB column with namespaced keys like dunning.schedule_days, and defaults in brightmeter/settings_defaults.py. Env vars stay for infrastructure only.
U: good. how do we send emails?
A[postmark]: Postmark through their HTTP API with httpx. Templates live in Postmark under the aliases dunning-reminder-1, dunning-reminder-2 and dunning-reminder-3; the server token is in BM_POSTMARK_TOKEN.
U: why postmark and not SES?
A[postmarkwhy]: Deliverability for transactional mail out of the box, and Dana can edit templates in their UI without us. With SES we'd have to build templating and warm up sending ourselves.
U: ok. the webhook retries: Marcus said their endpoint had a 3-minute deploy yesterday and we burned all 5 attempts in 10 seconds
A[marcusdeploy]: Right, a fixed 2 second delay is useless for any real outage. Exponential backoff with jitter spreads the attempts out.
U[retry2]: make it 8 attempts, exponential starting at 2 seconds, doubling, with jitter.
A[retry2d]: RetryPolicy(max_attempts=8, base_delay=2s, factor=2.0, jitter="full"). Each delay is random in [0, 2s * 2^(n-1)]; the longest possible delay is 256 s and the worst-case total is about 8.5 minutes.
U: hm ok, that at least covers a deploy
A: Tests updated; a fixed jitter seed keeps them deterministic.
U: proration: Harbor has customers switching plans several times a day during onboarding, and day-based gives silly results.
A: Yes, two changes on the same day both get charged a full day. Seconds-based proration fixes that: the fraction becomes remaining seconds over period seconds.
U[prorate2]: switch compute_proration to seconds, same signature.
A[prorate2d]: Done: compute_proration keeps (plan_amount_minor, period_start, period_end, change_at) -> int but now computes (period_end - change_at).total_seconds() / (period_end - period_start).total_seconds(). The February tests compare exact second fractions now.
U: does DST mess with that?
A[dstprorate]: No, those are all timezone-aware UTC datetimes, so a 23- or 25-hour local day is measured correctly in seconds.
U: good. disputes: we shouldn't chase someone who disputed the charge
A[tododispute]: Agreed, but we don't track disputes yet. Recorded a todo: pause dunning for invoices with an open Stripe dispute (charge.dispute.created).
U: what happens after the last reminder?
A[uncollectible]: A final notice with the template dunning-final, then the invoice goes to uncollectible and we emit invoice.marked_uncollectible to Harbor.
U: that's a new outbound event type
A: Yes, invoice.marked_uncollectible is added to the outbound types.
U: test the whole dunning path with time travel
A[freezegun]: I'm using time-machine rather than freezegun since it works with asyncio and patches C-level datetime. tests/dunning/test_schedule.py walks an invoice through days 1, 3, 7 and the final notice.
U: run
A: 6 passed. One warning: a test didn't mock the Postmark client, made a real request and got a 401. Mocked now.
U: who triggers the dunning checks?
A[dunningcron]: An arq cron job run_dunning, hourly at minute 17, that finds open invoices with a reminder due. Minute 17 keeps it away from the top-of-hour pile-up of other crons.
U: fine. anything left?
A: Postmark bounces: we should stop reminders to hard-bounced addresses. Not urgent.
U: add it as a todo
A[todobounce]: Recorded: disable dunning reminders to hard-bounced addresses via Postmark's bounce webhook.
U: Dana also asked whether customers can see invoices online
A[hosted]: That would be a hosted page at /i/{public_token} with a random 32-character token per invoice, read-only and without login. Do you want it now?
U: not now, after the pilot starts
A: OK, not building it.
U: done for today
A: Summary: grace period 10 days, dunning with Postmark, exponential webhook retries, seconds-based proration.
""")

# ---------------------------------------------------------------- s09
S(-12, "Ingest performance, partitioning and key hashing", r"""
U: Marcus ran a load test from their side. Ingest tops out around 1.2k events/s and p99 is ugly.
A: Let me profile. Two suspects: bcrypt on cache misses and the executemany insert.
U: go
A[profile]: py-spy on the API under locust: 38% in bcrypt on cache misses (their gateway uses 40 keys across pods and the cache is per process, so every fresh process misses) and 31% in the insert.
U: bcrypt. we've regretted that since day one.
A: The key has ~190 bits of entropy, so a slow hash buys nothing. HMAC-SHA256 with a server-side pepper is the standard choice for API keys: microseconds per verify, constant-time compare, and a database leak alone doesn't let anyone test guesses.
U[apikey2]: do it. HMAC-SHA256 with a pepper from env.
A[apikey2d]: key_hash = hex HMAC-SHA256(BM_API_KEY_PEPPER, full_key). I also removed the TTLCache. For existing keys I could rehash lazily on the next successful bcrypt verify.
U: only 3 keys exist in prod anyway, just have Harbor rotate them
A[rotatekeys]: Simpler. The migration drops the bcrypt hashes right away and we issue new keys to Harbor. I'll note that rotation is needed before launch.
U: insert path
A[copy]: Switching to asyncpg's copy_records_to_table for batches over 50 events, with ids generated in the app (UUIDv7 pays off here). In locust: 1.2k to 9.5k events/s, p99 from 840 ms down to 95 ms.
U: nice. but dedup in redis: their retries sometimes come days later after an outage, 24h isn't enough
A[dedupreason]: And Redis is the only record of what we've seen; if it gets flushed we double count. Moving dedup into Postgres makes it durable.
U: unique constraint on usage_events?
A: That interacts with partitioning, which I wanted to propose anyway: a unique index on a partitioned table must include the partition key.
U: propose partitioning first
A[part2]: usage_events becomes range-partitioned by occurred_at, one partition per month, managed by pg_partman 5.1 with premake 3 and 18 months of retention. The composite index is created per partition.
U[part2u]: ok, monthly partitions with pg_partman. and dedup?
A[dedup2]: A separate table ingest_keys(tenant_id, idempotency_key, first_seen_at) with a unique index on (tenant_id, idempotency_key), inserted with ON CONFLICT DO NOTHING in the same transaction as the COPY. Rows older than 7 days are deleted nightly, and the Redis dedup goes away.
U[dedup2u]: 7 days covers their worst outage. go.
A: Migrations 20240608_1340_partition_usage_events.py and 20240608_1410_ingest_keys.py. The partitioning migration copies existing rows into the new parent and swaps names inside one transaction.
U: how long on prod-sized data?
A[migtime]: About 2.1M rows: 48 seconds on a restored snapshot. We'd run it in a maintenance window.
U: ok. the rating cron: with more volume the 5 minute windows get big
A: And Dana wants fresher numbers on the dashboard. Running every minute, plus ingest enqueuing an on-demand rating when a batch touches an older bucket, keeps lag under 2 minutes.
U[sched2]: every minute then, plus the on-demand enqueue.
A[sched2d]: cron(enqueue_rating, second=0) every minute, rating [now-2min, now-1min), and ingest enqueues rate_usage_window with _job_id = "rate:{tenant}:{meter}:{bucket}" so duplicates collapse.
U: does the advisory lock still hold up?
A[lockskips]: Yes, and with the job id dedup we rarely hit it: 14 skipped jobs out of 3,100 in a 10-minute locust run.
U: pool size?
A[pool]: Raised the SQLAlchemy pool to pool_size=20, max_overflow=10 per API process; with 4 processes that's at most 120 connections, below Postgres max_connections=200.
U: run the load test again with everything
A[loadtest]: loadtests/ingest_locust.py with 200 users: 9.1k events/s sustained, p99 110 ms, zero errors, max rating lag 84 seconds.
U: great. write the numbers down
A: Recorded in docs/performance.md and as a note.
U: vacuum on ingest_keys with that nightly delete?
A[todovacuum]: Delete in batches of 10k and let autovacuum catch up; I'd tune autovacuum_vacuum_scale_factor for that table later. Todo recorded.
U: oh, and if BM_API_KEY_PEPPER ever leaks, how do we rotate it?
A[pepperlater]: We'd need a key_hash_version column and dual verification during the rotation window. Not now?
U: not now
A: Noted for later.
U: deploy the partition migration to staging
A[stagingpart]: On Render staging the migration took 31 seconds and pg_partman created partitions three months ahead. Smoke tests pass.
U: done for today
A: Summary: HMAC key hashing, COPY ingest, monthly partitions, dedup in Postgres, one-minute rating.
""")

# ---------------------------------------------------------------- s10
S(-9, "Dashboard rewrite, webhook path and exports", r"""
U: Dana has been living in the Jinja admin. She wants filtering, sorting, charts and bulk actions, and HTMX is getting stretched.
A: For table-heavy UIs with charts, a real SPA will be less work from here on. Options: Next.js, Vite + React, SvelteKit.
U[admin2]: Next.js 14 with the app router, as a separate app in dashboard/. It talks to the API only, no DB access.
A[admin2d]: OK: dashboard/ with TypeScript strict and pnpm, and an API client generated from our OpenAPI schema by openapi-typescript into dashboard/src/api/schema.d.ts.
U: component library?
A[ui]: shadcn/ui components on Tailwind, TanStack Table for the invoice and usage grids, and Recharts for the charts.
U: auth from the dashboard, cookies across origins?
A[cors]: With the dashboard on admin.brightmeter.app and the API on api.brightmeter.app, the session cookie can be scoped to .brightmeter.app, and CORS allows only the dashboard origin with credentials.
U: ok. the jinja admin goes away?
A[legacyflag]: Once the dashboard covers invoices and keys, yes. Until then the /admin routes stay, behind a flag.
U: stripe webhook path: while we're reorganizing routes, everything public should be under /v1
A: Then /webhooks/stripe moves to /v1/webhooks/payments, and Harbor needs to update the endpoint URL in their Stripe dashboard.
U[webhook2]: yes, /v1/webhooks/payments. keep the old path answering for two weeks with a deprecation log.
A[webhook2d]: Done: the same handler is mounted on both paths and the old one logs "deprecated webhook path" at warning level. The removal date is in a code comment.
U: Exports. Dana wants to export invoices and line items for her accounting tool.
A[export1]: CSV streamed from GET /v1/exports/invoices.csv?period=2024-06, a StreamingResponse with csv.writer over a server-side cursor so memory stays flat.
U: how big can that get?
A[exportsize]: For Harbor about 1,800 invoices a month with roughly 6 lines each. A few MB.
U[export1u]: fine, csv
A[csvcols]: Written. Columns: invoice_number, customer_external_ref, status, currency, subtotal, tax, total, finalized_at, due_at, paid_at, with amounts formatted as decimals from the minor units.
U: and bigger tenants later?
A[exportjob]: Bigger exports become an async job: export_invoices(ctx, tenant_id, period, fmt) writes to the S3 bucket brightmeter-exports and returns a presigned URL valid for 24 hours. POST /v1/exports returns a job id and GET /v1/exports/{id} polls it.
U: build the job version too, the dashboard will use that one
A: Built. Files go to s3://brightmeter-exports/{tenant_id}/{yyyy-mm}/{uuid}.csv and a lifecycle rule deletes them after 30 days.
U: the dashboard invoice list, which endpoint?
A: GET /v1/invoices with cursor pagination: ?limit=50&starting_after={id}. I'd avoid offset pagination on a table that keeps growing.
U[cursor]: cursor pagination, yes. max limit?
A[cursord]: limit defaults to 50 with a max of 200; the response carries the list and has_more.
U: run the dashboard
A[dashport]: pnpm dev on port 3040. The invoices page loads 50 rows in 180 ms from the local API.
U: 3040, ok, lines up with 8040
A: That was intentional.
U: error handling when the token expires?
A[refresh]: The API client wrapper catches a 401 with E_TOKEN_EXPIRED, calls /v1/auth/refresh once and replays the request. If the refresh fails it redirects to /login.
U: does E_TOKEN_EXPIRED even exist?
A[tokenexp]: Added now: an expired access token returns 401 E_TOKEN_EXPIRED, distinct from E_INVALID_KEY, so the client knows it should refresh.
U: usage charts per customer?
A[todochart]: Not this session. Recorded a todo: per-customer usage chart from rated_usage hourly buckets, with daily rollups for ranges over 14 days.
U: dashboard tests?
A[playwright]: Playwright end-to-end tests in dashboard/e2e, running against the API with seed data as a separate CI job, and vitest for components.
U: CI time?
A[citime]: The dashboard job adds 3m40s but runs in parallel with the Python job, so wall time goes from 2m10s to 3m50s.
U: acceptable
A: OK.
U: bulk actions, finalize several drafts at once
A[bulk]: POST /v1/invoices/finalize-batch with {"invoice_ids": [...]}, up to 100 per call, each finalized in its own transaction so one failure doesn't block the rest. The response has a result per id.
U: good. ship it to staging
A: The dashboard is deployed to Render as a Node service, and the API's CORS now allows https://admin.staging.brightmeter.app.
U: Dana says the staging login works. she likes the tables
A: Good to hear. She'll need the usage chart next, that's the todo.
U: yep. done for today
A: Summary: Next.js dashboard, webhook path moved under /v1, CSV exports (sync and async), cursor pagination, batch finalize.
""")

# ---------------------------------------------------------------- s11
S(-5, "Observability and moving off Render", r"""
U: Observability before launch. Logs first: the text logs are useless in Render's log search.
A: Structured JSON logs with structlog, binding request_id, tenant_id and job ids as context variables. Stdlib logging from libraries gets routed through the same processor chain.
U[log2]: structlog then, JSON in prod, pretty console output locally.
A[log2d]: Done in brightmeter/logging.py: configure_logging(json: bool), driven by BM_LOG_FORMAT=json or console (default json). Every request gets an X-Request-ID that is echoed in the response.
U: tracing
A[otel]: OpenTelemetry SDK with the FastAPI, SQLAlchemy, httpx and redis instrumentations, exported over OTLP to Honeycomb. We don't run a collector yet, so it's plain head sampling at 10% for the API.
U: ok 10%. errors to sentry
A[sentry]: sentry-sdk with the FastAPI and arq integrations, with tracing disabled in Sentry since Honeycomb has the traces. DSN in BM_SENTRY_DSN, environment tag from BM_ENV.
U: metrics and alerting
A[alert]: Prometheus metrics at /metrics on the API: events accepted and rejected, rating lag in seconds, webhook delivery failures. Alerts: rating lag over 10 minutes pages; webhook failure rate over 20% for 15 minutes warns.
U: who gets paged?
A: Right now only you, through Better Stack on-call.
U: ok. Now the bigger thing. Render has been flaky: two incidents with the managed Redis last week, and we can't get private networking to Harbor's VPN.
A: What's the constraint on Harbor's side?
U[renderflaky]: they want private connectivity eventually, and static egress IPs for their firewall.
A: Fly.io gives static egress IPs and WireGuard-based private networking, and we can run the API, the worker and the dashboard as separate apps. Postgres would be Fly's own or an external provider.
U[deploy2]: move to Fly.io. api, worker, dashboard as three apps, region ams. Postgres on Crunchy Bridge, Redis from Upstash.
A[deploy2d]: OK: fly.api.toml, fly.worker.toml, fly.dashboard.toml with primary_region = "ams". The worker's :8041/healthz becomes a Fly http service check. Crunchy Bridge Postgres 16 runs in AWS eu-central-1.
U: migrations on deploy?
A[release]: release_command = "alembic upgrade head" in fly.api.toml, so migrations run once before new machines start. That means each migration must stay compatible with the previous release's code.
U: JWT: the dashboard is a separate app now, and I want other services to be able to verify tokens without sharing a secret
A: Then asymmetric signing: RS256 with the private key only in the API, and a JWKS endpoint for verifiers. It supports key rotation through kid.
U[auth2]: switch to RS256, JWKS at /.well-known/jwks.json.
A[auth2d]: Done: the private key comes from BM_JWT_PRIVATE_KEY (PEM), kid is the key's thumbprint, and /.well-known/jwks.json lists the current and previous public keys. BM_JWT_SECRET is removed; existing sessions get invalidated once on deploy.
U: that's fine, 3 users
A: Dana will have to log in again; I'll mention it in the release notes.
U: deploy staging on fly
A: Staging is up: api on 2 machines, worker 1, dashboard 1. The release command found 0 pending migrations. Health checks green.
U: static egress IP
A[egress]: Allocated a static egress IPv4 for the worker app, since the worker makes the outbound webhook calls to Harbor, and sent it to Marcus for their allowlist.
U: good point, the worker is what calls them
A: Yes, outbound webhooks and Stripe calls all come from the worker.
U: cost compared to Render?
A[cost]: Roughly $150 a month on Fly plus Crunchy Bridge and Upstash, versus about $185 on Render.
U: log shipping from fly?
A[logship]: fly-log-shipper to Better Stack Logs; the JSON lines are parsed automatically.
U: fine. anything for the runbook?
A[runbook]: docs/runbook.md now covers rolling back (fly releases, then fly deploy --image with the previous image), running bmctl in prod (fly ssh console -a brightmeter-api -C "bmctl ..."), and what each alert means.
U: ok good
A: Summary: structlog JSON logs, OpenTelemetry to Honeycomb, Sentry, Prometheus alerts, move to Fly.io, RS256 with JWKS.
U: thanks
""")

# ---------------------------------------------------------------- s12
S(-3, "Bug bash with Dana's list", r"""
U: Bug bash, going through Dana's list. First: she reconciled last month's test invoices against her spreadsheet and 4 lines are off by a cent.
A: Sounds like rounding. Which lines?
U[round2why]: the ones where the amount ends in exactly half a cent. her accounting system rounds half to even, and the auditors want our invoices to match it.
A: Then we switch to ROUND_HALF_EVEN. It only changes totals for exact half-cent results.
U[round2]: switch to ROUND_HALF_EVEN everywhere we quantize.
A[round2d]: Changed the Money helper's default. compute_proration had its own quantize with ROUND_HALF_UP; it now goes through the helper too. The 4 lines match her sheet now.
U: good. bug 2: a test tenant with billing_tz America/Santiago got a period that started at 23:00 on the previous day
A[dst]: That's DST: Chile shifts its clocks at midnight, so local midnight doesn't exist on the transition day. We built the boundary with datetime.replace(tzinfo=...) on a naive midnight. Fixed by building period boundaries with zoneinfo and moving nonexistent times forward; added tests/billing/test_periods_dst.py for Santiago, Amsterdam and Sydney.
U: run those
A: 12 passed.
U: bug 3: duplicate invoice numbers when Dana finalized 40 drafts with the batch endpoint
A[invseq]: The sequence was max(seq)+1 per tenant and month, which races across the per-invoice transactions. Fixed with an invoice_number_seq(tenant_id, period, last_seq) row locked with SELECT ... FOR UPDATE during finalize, plus a unique constraint on invoices.number as a backstop.
U: perf of that lock?
A[seqperf]: Finalizes for the same tenant and month serialize on that row, but one finalize takes ~15 ms, so a batch of 100 stays under 2 seconds.
U: ok. bug 4, webhooks: Marcus says 8 attempts over 8 minutes still means they get retries after they've already alerted and replayed by hand. They'd prefer fewer attempts spread over a longer time.
A: So fewer attempts and longer delays. Maybe 6 attempts, exponential from 30 seconds, each delay capped at 1 hour?
U[retry3]: 6 attempts, base 30 seconds, doubling, cap each delay at 1 hour, keep the jitter.
A[retry3d]: RetryPolicy(max_attempts=6, base_delay=30s, factor=2.0, max_delay=1h, jitter="full"). Worst case the retries spread over 30+60+120+240+480 = 930 s, about 15.5 minutes; the cap only matters if we raise attempts later. I also added a manual replay button to the dashboard's deliveries view.
U: fine
A: Tests updated.
U: bug 5: Harbor's batch job hit 429s. They send bursts of 200 requests, then nothing for a minute.
A: A fixed window punishes bursty clients. A token bucket with a big burst and a lower sustained rate fits that pattern better.
U[ratelimit2]: token bucket: 50 per second sustained, burst of 300.
A[ratelimit2d]: Implemented as a Lua script in Redis (atomic refill and take) in brightmeter/api/ratelimit.py with key rl:{key_prefix}. Retry-After is now computed from the token deficit instead of a fixed 1.
U: bug 6: exports. Dana's accounting tool imports parquet, and the CSV opened with a German locale mangled the decimals.
A: Parquet keeps the types, so no locale trouble with decimals. pyarrow can write it from the same rows.
U[export2]: make parquet the default export format. Keep csv only for small exports under 10k rows, for people who open them in excel.
A[export2d]: export_invoices now writes Parquet with pyarrow by default, with decimal128 amount columns. fmt=csv is only accepted under 10,000 rows, otherwise 422 E_EXPORT_TOO_LARGE_FOR_CSV. The sync CSV endpoint has the same limit.
U: how much does pyarrow add to the image?
A[pyarrowsize]: About 95 MB. I put it in an optional dependency group "exports" installed only in the worker image; the API only enqueues the job.
U: good call
A[flagparquet]: It's also behind the feature flag BM_ENABLE_PARQUET_EXPORT, so we can switch back if the import fails on Dana's side.
U: bug 7: events for a period that was already finalized got ingested and silently ignored
A[periodclosed]: They're now rejected at ingest with E_PERIOD_CLOSED when the customer's period already has a finalized invoice. Harbor's replays get a clear error instead of silent loss; corrections would go through the adjustments endpoint.
U: which reminds me, the adjustments endpoint is still a todo
A: Yes, still open since the ingest session.
U: bug 8: the dashboard shows 4127 instead of 41.27 on the customer page
A[moneyfmt]: The customer page rendered total_minor directly. Added formatMoney(minor, currency) in dashboard/src/lib/money.ts using Intl.NumberFormat with the currency's exponent, and replaced every usage.
U: check the other pages
A: grep found two more spots in the deliveries view. Fixed.
U: run everything
A[fullrun]: Python: 312 passed, 1 skipped. Dashboard: vitest 48 passed, Playwright 14 passed.
U: nice. what's the skipped one?
A[skipped]: tests/e2e/test_stripe_live.py, skipped unless STRIPE_TEST_KEY is set.
U: fine. I think that was the whole list
A: Summary: banker's rounding, DST fix, locked invoice number sequence, retries 6 x from 30s, token bucket limits, Parquet exports, E_PERIOD_CLOSED.
U: great, thanks
""")

# ---------------------------------------------------------------- s13
S(-1, "Release prep for v0.9.0", r"""
U: Release prep. Harbor's legal team is done with the contract review.
A: Anything that affects us?
U[grace3]: two things. the contract says net-14, so the grace period has to be 14 days.
A[grace3d]: Changing INVOICE_GRACE_DAYS from 10 to 14. Same rule as last time: only invoices finalized after the deploy. The dunning schedule [1, 3, 7] counts from due_at, so the first reminder now comes 15 days after finalize.
U: second: their security review. The data has to live in an AWS account in the EU that their auditors can inspect, with their own KMS keys eventually. So Fly is out.
A: That rules out Fly's infrastructure. Crunchy Bridge is already on AWS eu-central-1, but compute has to move as well. ECS Fargate is the least ops-heavy option on AWS for three services.
U[deploy3]: ECS Fargate in eu-central-1, in the AWS account Harbor's auditors get read access to. RDS Postgres 16 instead of Crunchy, ElastiCache for Redis.
A[deploy3d]: OK. Terraform in infra/terraform with modules for network, rds, elasticache and ecs-service. api, worker and dashboard services behind one ALB, the worker without a public target. Egress through a NAT gateway with an Elastic IP.
U: ugh, we just sent Harbor the fly IP
A[newip]: Yes, Marcus will need to allowlist the new Elastic IP once the NAT gateway exists. It's a one-time change and I'll send it to him.
U: migrations on ECS?
A[ecsmig]: A one-off ECS task running alembic upgrade head from the same image, triggered by the deploy workflow before the services update. Same backward-compatibility rule as on Fly.
U: worker health check on ECS?
A[ecshealth]: The container health check in the task definition runs curl -f localhost:8041/healthz, and ECS replaces the task after 3 failures. No ALB target for it since the worker isn't public.
U: timeline for the move?
A[movetimeline]: Terraform and staging this week, production cutover before the first pilot invoice run, with a pg_dump/pg_restore from Crunchy: about 3 GB, under 10 minutes.
U: fine. release version?
A[version]: v0.9.0 for the pilot launch. pyproject, the dashboard's package.json and the /v1/version endpoint all read it from one place: src/brightmeter/__about__.py.
U: changelog
A: CHANGELOG.md in Keep a Changelog format; I'm writing the 0.9.0 section from our session notes: ingest, rating, invoicing, dunning, payments, dashboard, exports.
U: release checklist
A[checklist]: docs/release-checklist.md: 1) alembic upgrade on staging with a prod snapshot, 2) bmctl invoices finalize --dry-run for the current period and compare totals with Dana's spreadsheet, 3) rotate Harbor's API keys issued before the HMAC change, 4) confirm the Stripe webhook URL is /v1/webhooks/payments, 5) remove the deprecated /webhooks/stripe path.
U: the deprecated path removal, has it been two weeks since we moved it?
A[notyet]: The move was 8 days ago, so not yet. Step 5 waits until the two weeks are up.
U: right. feature flags at launch?
A[flags]: BM_ENABLE_PARQUET_EXPORT=true, and BM_ADMIN_LEGACY=false to turn off the old Jinja /admin pages, since the dashboard covers invoices and keys now.
U: good. pepper rotation, we said later. is it later now?
A[todopepper]: It's still not implemented. Recorded as a todo: add key_hash_version with dual verification so BM_API_KEY_PEPPER can be rotated without reissuing keys. Not blocking launch.
U: ok. what else is open?
A[openlist]: Open todos: the adjustments endpoint, credit notes, pausing dunning on disputes, bounce handling, ingest_keys vacuum tuning, the per-customer usage chart and pepper rotation. None of them blocks the pilot.
U[creditmanual]: credit notes: Dana says she can do those manually in her accounting tool for the first two months.
A: Good, then it stays a todo. I'll add that workaround to the runbook.
U: last thing: tag it
A: I can't push tags from here, but the release commit "release: v0.9.0" is ready. Tag it with git tag v0.9.0 once you've reviewed.
U: ok, reviewing now
A: Summary: grace period 14 days, move to ECS Fargate in eu-central-1, v0.9.0 checklist and launch flags.
U: looks good. thanks for all of this
A: Good luck with the launch.
""")

# ---------------------------------------------------------------- memories
# label|kind|after_turn_label|tags|supersedes|text
MEMORIES = r"""
Mstack|note|name|project|-|Brightmeter: usage-based billing service (FastAPI, Python) for pilot customer Harbor Analytics, who bill their clients per API call and per GB of storage. Single repo: src/brightmeter, tests/, migrations/.
Mpy1|decision|uv|python,tooling|-|Dependencies managed with uv (pyproject + uv.lock); Python pinned to 3.11 (requires-python >=3.11,<3.12) to match the work base images.
Mruff|definition|ruff|tooling|-|ruff line-length = 100 with rule sets E,F,I,B,UP; mypy strict = true with files = ["src"] (tests not type-checked).
Msettings|definition|settings|config|-|Settings: pydantic-settings class in src/brightmeter/config.py, env_prefix BM_; BM_DATABASE_URL, BM_REDIS_URL, BM_LOG_LEVEL; get_settings() is lru_cached.
Mports|note|envexample|dev-env|-|Local docker compose: postgres:16 on host port 5433 (5432 is used by another project), redis:7.2 on host port 6380. BM_DATABASE_URL=postgresql+asyncpg://bm:bm@localhost:5433/brightmeter.
Mqueue1|decision|queue1d|queue|-|Background jobs: Celery 5.4 with Redis broker (db 1), result backend disabled; app in src/brightmeter/worker.py.
Mlog1|decision|log1|logging|-|Logging: stdlib logging with a text formatter, level from BM_LOG_LEVEL (default INFO), configured in brightmeter/logging.py.
Mdeploy1|decision|deploy1d|deploy|-|Deploy the pilot on Render: one web service, one background worker, managed Postgres and managed Redis.
Madmin1|decision|admin1u|admin-ui|-|Admin UI: server-rendered Jinja2 pages under /admin in the FastAPI app, HTMX for interactivity, no separate JS app.
Mpilot|note|pilotdate|pilot|-|Pilot contacts: Dana Okafor (Harbor finance, billing questions), Marcus (technical integration). First production invoice run for Harbor on the 1st of next month (~5 weeks after kickoff).
Mtables|definition|subs|schema|-|Core tables: tenants, customers, meters, usage_events, price_plans, subscriptions, invoices, invoice_lines. subscriptions(customer_id, price_plan_id, started_at, ended_at, status) with one active per customer (partial unique index WHERE ended_at IS NULL).
Mpk1|decision|pk1d|schema|-|Primary keys: BIGINT GENERATED ALWAYS AS IDENTITY on every table.
Mmoney1|decision|money1|schema,money|-|Money columns stored as NUMERIC(12,2), mapped to Decimal.
Malembic|note|alembic|migrations|-|Alembic (async template) in migrations/; file_template names revisions YYYYMMDD_HHMM_slug.py. MetaData naming convention (ix_, uq_, fk_, pk_) so constraints have predictable names. alembic check runs in CI.
Mpart1|decision|part1|schema,performance|-|usage_events is one unpartitioned table with index (tenant_id, meter_key, occurred_at); ~2M events/month does not need partitioning.
Mbillingtz|definition|billingtzd|schema,billing|-|tenants.billing_tz TEXT NOT NULL DEFAULT 'UTC' (IANA name, validated with zoneinfo); billing periods start at local midnight on the 1st and are stored as UTC. Harbor uses Europe/Amsterdam.
Mtiers|definition|tiermode|pricing,schema|-|price_plans(id, tenant_id, meter_key, currency CHAR(3) in EUR/USD/GBP, tier_mode graduated or volume, tiers JSONB ordered list of {up_to: int or null, unit_amount: decimal string, flat_amount: decimal string or null}); last tier has up_to null.
Mtestdb1|decision|testdb1|testing|-|Unit tests use SQLite in memory via aiosqlite; JSONB mapped with with_variant(JSON(), "sqlite").
Mbatch|note|batch|ingest,api|-|POST /v1/events (api/routes/events.py, logic in services/ingest.py): max 500 events and 1 MB body per request, else 413 E_BATCH_TOO_LARGE.
Mevent|definition|eventmodel|ingest,schema|-|UsageEventIn: meter_key str, customer_ref str (maps to customers.external_ref, unique per tenant; unknown -> E_UNKNOWN_CUSTOMER), quantity Decimal, occurred_at AwareDatetime, idempotency_key str (max 128), properties dict of scalars.
Mlate|definition|future|ingest|-|brightmeter/ingest/limits.py: LATE_EVENT_WINDOW_DAYS = 35 (older events -> E_LATE_EVENT); FUTURE_SKEW_SECONDS = 300 (events further in the future -> E_FUTURE_EVENT).
Mdedup1|decision|dedupkey|ingest,dedup|-|Duplicate detection with Redis SET NX on dedup:{tenant_id}:{idempotency_key}, TTL 24h; duplicates reported in a separate count, not as errors.
Mpk2|decision|pk2d|schema|Mpk1|usage_events primary key is now a UUIDv7 generated in the app (uuid6.uuid7()); all other tables keep BIGINT identity.
Mtestdb2|decision|testdb2d|testing|Mtestdb1|Tests run against real Postgres via testcontainers (postgres:16-alpine); template DB cloned per xdist worker; SQLite/aiosqlite removed.
Mtodo_adj|todo|todoadj|ingest|-|Build an adjustments endpoint for usage corrections (negative quantities are rejected with E_NEGATIVE_QUANTITY).
Mqueue2|decision|queue2d|queue|Mqueue1|Celery replaced by arq 0.26 (asyncio + Redis) because sync Celery tasks broke the asyncpg pool. WorkerSettings in src/brightmeter/worker.py, Redis db 1.
Marqcfg|definition|arqcfg|queue,config|-|arq WorkerSettings: max_jobs=20, job_timeout=300s, keep_result=3600, max_tries=5, queue name bm:default.
Mratefn|definition|ratefn|rating|-|async def rate_usage_window(ctx, tenant_id: int, meter_key: str, window_start: datetime, window_end: datetime) -> RatedWindowResult (buckets_written, events_seen, late_events), in src/brightmeter/rating/engine.py.
Msched1|decision|sched1|rating,queue|-|Rating cron every 5 minutes rating [now-10min, now-5min); later events mark hour buckets dirty in rating_dirty_buckets.
Mlock|decision|lock|rating,concurrency|-|rate_usage_window takes pg_try_advisory_xact_lock(hashtext(tenant_id:meter_key)); if already held it returns early.
Mworkerhealth|note|workerhealth|queue,ops|-|Worker health: aiohttp server on port 8041 serving /healthz, ok while the arq heartbeat is < 60s old.
Mlag|note|lag|rating|-|Known limitation: rated usage lags real time by 5-10 minutes.
Mmoney2|decision|money2d|schema,money|Mmoney1|Stored amounts are BIGINT minor units (amount_minor, subtotal_minor, tax_minor, total_minor); unit prices stay decimal strings in tiers JSON. Money helper in brightmeter/billing/money.py.
Mround1|decision|round1|billing,money|-|Line totals quantized to the currency exponent with ROUND_HALF_UP, once per invoice line.
Mpy2|decision|uuid6keep|python,tooling|Mpy1|Python bumped to 3.12 (requires-python >=3.12,<3.13, python:3.12-slim image); uuid6 stays since stdlib uuid7 only arrives in 3.14.
Minvstatus|definition|invstatus|billing|-|InvoiceStatus(StrEnum) in brightmeter/billing/models.py: draft, open, paid, void, uncollectible. Void allowed only for open invoices (else 409 E_INVOICE_NOT_VOIDABLE).
Minvnum|definition|invnum|billing|-|Invoice number format BM-{short_code}-{YYYY}{MM}-{seq:05d}, sequence per tenant per month, assigned only at finalize.
Mgrace1|decision|grace1d|billing,dunning|-|INVOICE_GRACE_DAYS = 7 in brightmeter/billing/constants.py; due_at = finalized_at + grace, end of day in tenant billing_tz.
Mprorate1|decision|prorate1|billing,proration|-|Proration is day-based: whole days remaining (including the change day) over days in the period.
Mproratesig|definition|proratesig|billing,proration|-|def compute_proration(plan_amount_minor: int, period_start: datetime, period_end: datetime, change_at: datetime) -> int in brightmeter/billing/proration.py; returns the prorated amount for the remaining portion in minor units.
Mtodo_credit|todo|todocredit|billing|-|Implement credit notes (paid invoices can't be voided; mid-cycle downgrades).
Mgenjob|definition|genjob|billing,queue|-|generate_invoices(ctx, tenant_id, period) arq job writes draft invoices from rated_usage, tiers, fixed fees and proration; idempotent. Finalization stays manual via bmctl invoices finalize --tenant --period [--dry-run].
Mkeyfmt|definition|keyfmt|auth|-|API key format bm_live_ / bm_test_ + 32 base62 chars; key_prefix = first 8 chars after the prefix (indexed). api_keys(id, tenant_id, key_prefix, key_hash, scopes text[], created_at, last_used_at, revoked_at).
Mapikey1|decision|apikey1d|auth,security|-|API key hashes stored with bcrypt, cost 12.
Mscopes|definition|autherr|auth|-|Scopes events:write, invoices:read, admin; dependency require_scope(scope) in brightmeter/auth/deps.py. Errors: 401 E_INVALID_KEY, 401 E_KEY_REVOKED, 403 E_SCOPE.
Mauth1|decision|ttl|auth|-|Dashboard/admin sessions use JWT HS256 signed with BM_JWT_SECRET; access token 15 min, refresh token 14 days (hashed, rotated).
Mratelimit1|decision|ratelimit1d|api,ratelimit|-|Rate limit: fixed window, 100 req/s per API key, Redis key rl:{key_prefix}:{epoch_second}; 429 E_RATE_LIMITED with Retry-After: 1.
Mlivemode|decision|testmode|auth,schema|-|Test vs live data separated with a livemode boolean on usage_events, invoices, api_keys (and rated_usage PK); bm_test_ keys only see livemode=false.
Mstripe|decision|stripeidem|payments|-|Payments through Harbor's Stripe account (stripe-python 9.x): one PaymentIntent per finalized invoice (off_session, confirm), customers.psp_customer_id; Idempotency-Key inv_{invoice_id}_attempt_{n}.
Mwebhook1|decision|webhook1|payments,webhooks|-|Inbound Stripe webhooks at POST /webhooks/stripe, verified with stripe.Webhook.construct_event and BM_STRIPE_WEBHOOK_SECRET; raw events in psp_events (unique event_id).
Msig|definition|sig|webhooks,security|-|Outbound webhook signature header X-Brightmeter-Signature: t=<unix ts>,v1=<hex HMAC-SHA256 of "t.body" with endpoint secret>; receivers reject timestamps older than 5 minutes; sign the exact bytes sent.
Moutevents|definition|outevents|webhooks|-|Outbound event types: invoice.finalized, invoice.paid, invoice.payment_failed, invoice.voided; payload {id, type, created, data: {invoice}}.
Mretry1|decision|retry1d|webhooks,retry|-|RetryPolicy in brightmeter/webhooks/retry.py: max_attempts=5, fixed 2s delay; deliver_webhook(ctx, delivery_id) re-enqueued with _defer_by.
Mgrace2|decision|grace2d|billing,dunning|Mgrace1|INVOICE_GRACE_DAYS raised from 7 to 10 at Dana's request; only newly finalized invoices use the new value.
Mdunning|definition|dunning|dunning,config|-|Tenant setting dunning.schedule_days = [1, 3, 7]: reminders that many days after due_at, each retrying the charge; after the final notice the invoice becomes uncollectible. Cron run_dunning hourly at minute 17.
Mpostmark|decision|postmark|email,dunning|-|Transactional email via Postmark HTTP API (httpx); template aliases dunning-reminder-1..3 and dunning-final; BM_POSTMARK_TOKEN.
Mretry2|decision|retry2d|webhooks,retry|Mretry1|RetryPolicy: max_attempts=8, base_delay=2s, factor=2.0, full jitter (worst case ~8.5 minutes total).
Mprorate2|decision|prorate2d|billing,proration|Mprorate1|compute_proration is now seconds-based (remaining seconds / period seconds); signature unchanged.
Mtodo_dispute|todo|tododispute|dunning,payments|-|Pause dunning for invoices with an open Stripe dispute (charge.dispute.created).
Mapikey2|decision|apikey2d|auth,security,performance|Mapikey1|API key hash = hex HMAC-SHA256(BM_API_KEY_PEPPER, full key); bcrypt and the in-process verify cache removed; Harbor's existing keys get rotated.
Mcopy|note|copy|ingest,performance|-|Ingest uses asyncpg copy_records_to_table for batches over 50 events: 1.2k -> 9.5k events/s, p99 840 ms -> 95 ms.
Mpart2|decision|part2u|schema,performance|Mpart1|usage_events range-partitioned monthly by occurred_at with pg_partman 5.1 (premake 3, 18 months retention).
Mdedup2|decision|dedup2u|ingest,dedup|Mdedup1|Dedup moved to Postgres: ingest_keys(tenant_id, idempotency_key, first_seen_at), unique (tenant_id, idempotency_key), ON CONFLICT DO NOTHING in the COPY transaction; rows older than 7 days deleted nightly. Redis dedup removed.
Msched2|decision|sched2d|rating,queue|Msched1|Rating cron runs every minute ([now-2min, now-1min)) plus on-demand rate_usage_window jobs from ingest with _job_id rate:{tenant}:{meter}:{bucket}; lag under 2 minutes.
Mpool|definition|pool|db,config|-|SQLAlchemy pool_size=20, max_overflow=10 per API process (4 processes -> max 120 connections; Postgres max_connections=200).
Mtodo_vacuum|todo|todovacuum|db|-|Tune autovacuum_vacuum_scale_factor for ingest_keys; nightly delete in 10k batches.
Madmin2|decision|admin2d|admin-ui,frontend|Madmin1|Admin UI is now a Next.js 14 (app router) app in dashboard/, TypeScript strict, pnpm, API-only with client generated by openapi-typescript. Jinja /admin kept behind a flag until parity.
Mui|decision|ui|frontend|-|Dashboard stack: shadcn/ui + Tailwind, TanStack Table, Recharts; dev server on port 3040; Playwright e2e and vitest.
Mwebhook2|decision|webhook2d|payments,webhooks|Mwebhook1|Inbound Stripe webhook path is now POST /v1/webhooks/payments; the old /webhooks/stripe path keeps answering for two weeks with a deprecation warning.
Mexport1|decision|csvcols|exports|-|Invoice exports are CSV: streaming GET /v1/exports/invoices.csv?period=YYYY-MM (server-side cursor) plus the async export job.
Mexportjob|definition|exportjob|exports,queue|-|export_invoices(ctx, tenant_id, period, fmt) arq job writes to s3://brightmeter-exports/{tenant_id}/{yyyy-mm}/{uuid}.<ext>; presigned URL valid 24h; 30-day lifecycle. POST /v1/exports -> job id, GET /v1/exports/{id} polls.
Mrefresh|definition|tokenexp|auth,frontend|-|Expired access tokens return 401 E_TOKEN_EXPIRED; the dashboard client calls /v1/auth/refresh once and replays, else redirects to /login.
Mtodo_chart|todo|todochart|frontend|-|Per-customer usage chart from rated_usage hourly buckets, with daily rollups for ranges over 14 days.
Mlog2|decision|log2d|logging,observability|Mlog1|Logging now via structlog: JSON in prod, console locally (BM_LOG_FORMAT); request_id, tenant_id and job ids bound; X-Request-ID echoed in responses.
Motel|decision|otel|observability|-|Tracing: OpenTelemetry (FastAPI, SQLAlchemy, httpx, redis) over OTLP to Honeycomb, 10% head sampling. Errors go to Sentry (BM_SENTRY_DSN), Sentry tracing off.
Malert|note|alert|observability,ops|-|Prometheus /metrics on the API. Alerts: rating lag > 10 min pages; webhook failure rate > 20% for 15 min warns. Paging through Better Stack on-call.
Mdeploy2|decision|deploy2d|deploy|Mdeploy1|Moved from Render to Fly.io: apps api, worker, dashboard in region ams; Postgres on Crunchy Bridge, Redis on Upstash; release_command runs alembic upgrade head.
Mauth2|decision|auth2d|auth|Mauth1|JWTs now signed RS256 with BM_JWT_PRIVATE_KEY, kid = key thumbprint, JWKS at /.well-known/jwks.json; BM_JWT_SECRET removed.
Mround2|decision|round2d|billing,money|Mround1|Rounding is ROUND_HALF_EVEN everywhere via the Money helper (including compute_proration) to match Harbor's accounting system.
Mdst|note|dst|billing,timezones|-|Billing period boundaries built with zoneinfo, moving nonexistent local midnights forward (America/Santiago DST bug); tests/billing/test_periods_dst.py.
Minvseq|decision|invseq|billing,concurrency|-|Invoice numbers come from invoice_number_seq(tenant_id, period, last_seq) locked with SELECT ... FOR UPDATE at finalize; unique constraint on invoices.number as backstop.
Mretry3|decision|retry3d|webhooks,retry|Mretry2|RetryPolicy: max_attempts=6, base_delay=30s, factor=2.0, max_delay=1h, full jitter (~15.5 min spread); manual replay button in the dashboard deliveries view.
Mratelimit2|decision|ratelimit2d|api,ratelimit|Mratelimit1|Rate limiting is a Redis Lua token bucket: 50 req/s sustained, burst 300, key rl:{key_prefix}; Retry-After computed from the deficit.
Mexport2|decision|flagparquet|exports|Mexport1|Exports default to Parquet (pyarrow, decimal128 amounts); CSV only under 10,000 rows, otherwise 422 E_EXPORT_TOO_LARGE_FOR_CSV. pyarrow in optional group "exports" (worker image only); flag BM_ENABLE_PARQUET_EXPORT.
Mperiodclosed|definition|periodclosed|ingest,billing|-|Ingest rejects events whose customer period already has a finalized invoice with E_PERIOD_CLOSED.
Mgrace3|decision|grace3d|billing,dunning|Mgrace2|INVOICE_GRACE_DAYS = 14 (Harbor contract is net-14); applies to invoices finalized after the deploy; dunning days count from due_at.
Mdeploy3|decision|deploy3d|deploy|Mdeploy2|Production moves from Fly.io to AWS ECS Fargate in eu-central-1 (Harbor security review): RDS Postgres 16, ElastiCache Redis, Terraform in infra/terraform, one ALB, egress via NAT gateway Elastic IP.
Mchecklist|note|checklist|release|-|docs/release-checklist.md: staging migration on prod snapshot; bmctl finalize --dry-run vs Dana's sheet; rotate pre-HMAC API keys; confirm Stripe webhook URL /v1/webhooks/payments; remove /webhooks/stripe after two weeks.
Mflags|definition|flags|release,config|-|Launch flags: BM_ENABLE_PARQUET_EXPORT=true; BM_ADMIN_LEGACY=false turns off the old Jinja /admin pages.
Mtodo_pepper|todo|todopepper|auth,security|-|Add key_hash_version and dual verification so BM_API_KEY_PEPPER can be rotated without reissuing keys.
"""

# ---------------------------------------------------------------- questions
# generic:           evidence :: question
# current-decision:  evidence :: stale :: question
# temporal:          evidence :: since :: until :: question      ("-" = null)
# evidence: groups separated by ";", ids (labels) inside a group by ","
Q: dict[str, str] = {}

Q["early-fact"] = r"""
dana,Mpilot :: Who on Harbor's side should I ask about billing questions?
pilotdate,Mpilot :: When was Harbor supposed to get their first real invoice run?
ports,envexample,Mports :: Which host port is the local Postgres container exposed on, and why isn't it the standard one?
devport :: What port does the API come up on when I start it locally with make?
ruff,Mruff :: What's the maximum line length our linter enforces?
ruff,Mruff :: Are the test files type-checked in strict mode too?
settings,Msettings :: What prefix do all of our environment variables share?
orjson :: Which serializer produces the API's JSON responses?
alembic,Malembic :: How are migration files named in the migrations folder?
namingwhy,Malembic :: Why did we bother configuring a constraint naming convention on the SQLAlchemy metadata?
quantity :: How many decimal places can an event's quantity carry?
meterkey :: What format does a meter's key have to follow?
lastagg :: What is the 'last' aggregation mode meant for?
billingtz,billingtzd,Mbillingtz :: What timezone is Harbor's account set to for billing?
currencies,Mtiers :: Which currencies can a price plan be in?
seed :: Which meters does the local seed script create?
seedwhy :: Why is the seed tenant called acme-test instead of being named after the real customer?
batch,Mbatch :: What's the maximum number of events a client may send in one request?
late,Mlate :: How old can an event be before ingestion refuses it?
future,Mlate :: How far ahead of our clock is an event's timestamp allowed to be?
partial,partiald :: What status does the events endpoint return when only part of a batch is invalid, and why not 207?
unknowncust,Mevent :: What happens if an event points at a customer id we've never seen?
propsize :: Is there any limit on how much can go into an event's properties?
alembiccheck,Malembic :: How does CI catch a model change that was committed without a migration?
shortcode :: What short code does the seed tenant have?
testspeed :: How much time does starting the Postgres test container add to a test run?
name,Mstack :: What are the two things Harbor wants to charge their own clients for?
versions :: Which FastAPI version did the very first dependency sync install?
precommit :: What's the size threshold in the pre-commit check for big files?
"""

Q["current-decision"] = r"""
queue2,queue2d,Mqueue2 :: queue1,queue1d,Mqueue1 :: What are we using to run background jobs now?
pk2,pk2d,Mpk2 :: pk1,pk1d,Mpk1 :: What kind of primary key does usage_events have at this point?
money2,money2d,Mmoney2 :: money1,Mmoney1 :: How are invoice amounts stored in the database now?
part2,part2u,Mpart2 :: part1,Mpart1 :: Is the raw events table partitioned these days, and how?
testdb2,testdb2d,Mtestdb2 :: testdb1,Mtestdb1 :: What database engine do the tests run against now?
dedup2,dedup2u,Mdedup2 :: dedup1,dedupkey,Mdedup1 :: Where does duplicate-event detection happen now?
sched2,sched2d,Msched2 :: sched1,Msched1 :: How often does the rating cron fire currently?
py2,uuid6keep,Mpy2 :: uv,Mpy1 :: Which Python version is the project on now?
grace3,grace3d,Mgrace3 :: grace1,grace1d,Mgrace1,grace2,grace2d,Mgrace2 :: What is INVOICE_GRACE_DAYS set to right now?
grace3,grace3d,Mgrace3 :: grace1,grace1d,Mgrace1,grace2,grace2d,Mgrace2 :: How many days do customers currently get to pay before an invoice counts as overdue?
round2,round2d,Mround2 :: round1,Mround1 :: Which rounding mode do we apply to invoice line totals now?
prorate2,prorate2d,Mprorate2 :: prorate1,proratesig,Mprorate1 :: Is proration computed per day or per second at this point?
auth2,auth2d,Mauth2 :: auth1,ttl,Mauth1 :: How are session JWTs signed now?
apikey2,apikey2d,Mapikey2 :: apikey1,apikey1d,Mapikey1 :: How are API keys hashed at the moment?
ratelimit2,ratelimit2d,Mratelimit2 :: ratelimit1,ratelimit1d,Mratelimit1 :: What request limit applies to an API key today?
retry3,retry3d,Mretry3 :: retry1,retry1d,Mretry1,retry2,retry2d,Mretry2 :: How many delivery attempts does an outbound webhook get now, and how are they spaced?
webhook2,webhook2d,Mwebhook2,checklist :: webhook1,stripecli,Mwebhook1 :: Which URL should Stripe be posting its events to?
admin2,admin2d,Madmin2 :: admin1,admin1u,Madmin1 :: What is the admin UI built with now?
export2,export2d,Mexport2 :: export1,export1u,csvcols,Mexport1 :: What file format do exports produce by default?
log2,log2d,Mlog2 :: log1,Mlog1 :: What are we using for logging now, and in what format?
deploy3,deploy3d,Mdeploy3 :: deploy1,deploy1d,Mdeploy1,deploy2,deploy2d,Mdeploy2 :: Where is production going to be hosted?
queue2,queue2d,Mqueue2 :: queue1,queue1d,Mqueue1 :: Is Celery still our task runner?
retry3,retry3d,Mretry3 :: retry1,retry1d,Mretry1,retry2,retry2d,Mretry2 :: What are the RetryPolicy parameters these days?
deploy3,deploy3d,Mdeploy3 :: deploy1,deploy1d,Mdeploy1,deploy2,deploy2d,Mdeploy2 :: Which cloud provider and region will the pilot run in?
dedup2,dedup2u,Mdedup2 :: dedup1,dedupkey,Mdedup1 :: How long do we remember idempotency keys now?
apikey2,apikey2d,Mapikey2 :: apikey1,apikey1d,Mapikey1,authcache :: Do we still verify API keys with bcrypt?
ratelimit2,ratelimit2d,Mratelimit2 :: ratelimit1,ratelimit1d,Mratelimit1 :: Are we still using a fixed-window rate limiter?
export2,export2d,Mexport2 :: export1,export1u,csvcols,Mexport1 :: Can Dana still get invoices exported as CSV?
auth2,auth2d,Mauth2 :: auth1,ttl,Mauth1 :: Do we still need BM_JWT_SECRET in the environment?
"""

Q["identifier"] = r"""
proratesig,Mproratesig,prorate2d :: Where does compute_proration() live and what parameters does it take?
retryfile,Mretry1 :: Which module defines the RetryPolicy class?
late,Mlate :: What triggers E_LATE_EVENT?
periodclosed,Mperiodclosed :: When does ingest respond with E_PERIOD_CLOSED?
envexample,Mports :: What should BM_DATABASE_URL be set to for local development?
ratefn,Mratefn :: What's the signature of rate_usage_window and what does it return?
sig,Msig :: What's inside the X-Brightmeter-Signature header and how is it computed?
bmctl :: What does `bmctl invoices finalize --dry-run` do?
apikey2d,Mapikey2 :: What is BM_API_KEY_PEPPER used for?
invstatus,Minvstatus :: Which states does the InvoiceStatus enum have?
dunning,Mdunning :: What's the default value of dunning.schedule_days?
export2d,Mexport2 :: When does an export request fail with E_EXPORT_TOO_LARGE_FOR_CSV?
dedup2,Mdedup2 :: What's stored in the ingest_keys table?
invnum,Minvnum :: How is an invoice number like BM-ACME-202406-00017 put together?
invroutes :: Which endpoints does api/routes/invoices.py expose?
autherr,Mscopes :: What's the difference between E_SCOPE and E_INVALID_KEY?
flagparquet,Mexport2,Mflags :: What does BM_ENABLE_PARQUET_EXPORT toggle?
keyfmt,Mkeyfmt :: What goes into the key_prefix column of api_keys?
loadtest :: What did loadtests/ingest_locust.py show in the last full run?
tokenexp,refresh,Mrefresh :: What does the dashboard do when it gets E_TOKEN_EXPIRED?
dst,Mdst :: What does tests/billing/test_periods_dst.py cover?
stripeidem,Mstripe :: What Idempotency-Key do we send when creating a PaymentIntent?
sched2d,Msched2 :: What _job_id do the on-demand rating jobs use?
invseq,Minvseq :: What is the invoice_number_seq table for?
lock,Mlock :: Why does the rating engine call pg_try_advisory_xact_lock?
flags,Mflags :: What does BM_ADMIN_LEGACY control?
stripever :: What is stripe.api_version pinned to, and in which file?
negative,Mtodo_adj :: What's E_NEGATIVE_QUANTITY about?
bulk :: What does POST /v1/invoices/finalize-batch accept, and what happens if one invoice fails?
arqcfg,Marqcfg :: What are max_jobs and job_timeout set to in WorkerSettings?
exportjob,Mexportjob :: Where does the export_invoices job put its files?
"""

Q["paraphrase"] = r"""
dedup2,dedup2u,Mdedup2 :: If a client resends the same usage record after an outage, what stops us from billing it twice?
lock,Mlock :: If two background processes try to crunch the same meter at the same moment, what prevents a clash?
bcryptlat :: Why did the first version of credential checking make every request so sluggish?
testmode,Mlivemode :: How do we keep sandbox traffic from mixing with real-money data?
sig,Msig :: How can a receiver be sure a callback really came from us?
billingtz,billingtzd,Mbillingtz :: Which setting decides where each month begins and ends for a given account?
lockout :: What stops someone from guessing passwords on the sign-in form endlessly?
stripeidem,Mstripe :: How do we avoid charging a card twice when a payment job gets retried?
dunning,Mdunning,uncollectible :: How does the system chase people who haven't paid?
dunningcron :: Why does the hourly past-due sweep run at an odd minute?
tenantsettings :: Where do per-account knobs live, as opposed to infrastructure knobs?
uncollectible,Mdunning :: What happens to a bill once we give up trying to collect on it?
batch,Mbatch :: How big a chunk of records can one push contain?
moneyfmt :: Why did figures on the customer screen show up a hundred times too large, and what fixed it?
copy,Mcopy :: How did we make the write path for incoming records roughly eight times faster?
round2why,round2,round2d,Mround2 :: Why did a handful of bill lines disagree by a penny with the spreadsheet?
dst,Mdst :: Why did a South American account get a month that began an hour early?
invseq,Minvseq :: How do we keep two bills from getting the same reference when many are closed together?
ttl,login :: How does someone stay signed in past a quarter of an hour without typing their password again?
pyarrowsize :: What did we do so the columnar-file library doesn't bloat every container?
deploy3d,newip,Mdeploy3 :: After the AWS move, how will Harbor's firewall recognise traffic coming from us?
export2,export2d,Mexport2 :: Is there still a spreadsheet-friendly option for small dumps of billing records?
future,Mlate :: What do we do with records stamped well ahead of the current time?
release,ecsmig :: How do we make sure schema changes don't break the older code still serving during a rollout?
runbook :: Where can I read how to undo a bad production rollout?
postmarkwhy :: Why did we go with that mail vendor rather than Amazon's offering?
alert,Malert :: How does someone get woken up when the billing computation falls behind?
outevents,Moutevents :: How would Harbor's systems learn that one of their bills got settled?
log2d,Mlog2 :: Where does the correlation id that lets me follow a single call through the logs come from?
pool,Mpool :: How many database connections can the web tier open at most?
"""

Q["two-turn"] = r"""
workerhealth,Mworkerhealth ; ecshealth :: Which port does the worker's health endpoint listen on, and what checks it in the AWS setup?
grace3,grace3d,Mgrace3 ; dunning,Mdunning :: What's the payment grace period now, and how many days after the due date does the first reminder go out?
stripe,striped,Mstripe ; stripeevents :: Which payment provider do we use, and which of its webhook events do we act on?
keyfmt,Mkeyfmt ; apikey2,apikey2d,Mapikey2 :: What does an API key look like, and how is it hashed now?
ports,Mports ; devport :: Locally, which ports do Postgres and the dev API server use?
shortcode ; invnum,Minvnum :: What's the seed tenant's short code, and where does it show up in invoice numbers?
billingtz,billingtzd,Mbillingtz ; dst,Mdst :: Which tenant column drives billing period boundaries, and what DST bug did we hit with it?
batch,Mbatch ; loadtest :: What's the per-request event cap, and what sustained throughput did the final load test reach?
exportjob,Mexportjob ; export2,export2d,Mexport2 :: Where do async exports get written, and what file format do they use by default?
dashport ; ui,Mui :: Which port does the dashboard dev server use, and which component library is it built on?
dana,Mpilot ; newip,egress :: Who is Harbor's technical contact, and what did we have to send him for their firewall?
lock,Mlock ; crash :: How is a rating job protected from concurrent runs, and what happens if it crashes halfway?
ttl,Mauth1 ; tokenexp,refresh,Mrefresh :: How long does an access token last, and which error tells the dashboard it expired?
stripever ; pimeta :: Which Stripe API version are we pinned to, and what metadata do we attach to PaymentIntents?
otel,Motel ; sentry :: Where do traces go, and where do errors go?
checklist,Mchecklist ; webhook2,webhook2d,Mwebhook2 :: What does the release checklist say about the old Stripe webhook path, and what's the new path?
part2,part2u,Mpart2 ; dedup2,Mdedup2 :: How is usage_events partitioned, and how do we enforce idempotency uniqueness given that?
sched2,sched2d,Msched2 ; alert,Malert :: How often does rating run now, and at what lag do we get paged?
postmark,Mpostmark ; todobounce :: Which email provider do we use, and what's the open todo about bounced addresses?
success2xx ; retry3,retry3d,Mretry3 :: What counts as a successful webhook delivery, and how many attempts do we make now?
pk2,pk2d,Mpk2 ; uuid6keep,Mpy2 :: Which package generates our UUIDv7 ids, and why couldn't we drop it after moving to 3.12?
playwright ; citime :: What do we use for dashboard end-to-end tests, and how much does that job add to CI time?
ratelimit2,ratelimit2d,Mratelimit2 ; ratelimit1d,Mratelimit1 :: What's the per-key request limit now, and which error code does a client get when it goes over?
fullrun ; skipped :: How many Python tests passed in the bug bash run, and which one was skipped and why?
deploy3,deploy3d,Mdeploy3 ; movetimeline :: Which managed Postgres are we moving to, and how long is the data restore expected to take?
version ; openlist :: What version is the pilot launch, and which todos are still open?
periodclosed,Mperiodclosed ; todoadj,Mtodo_adj :: How does ingest treat events for an already-invoiced period, and what's planned for usage corrections instead?
scopes,Mscopes ; ingestroute,Mbatch :: Which scope does a key need to push usage, and which route file handles that endpoint?
"""

Q["temporal"] = r"""
apikey2,apikey2d,Mapikey2 :: 14d :: 7d :: What did we decide last week about how API keys are hashed?
webhook2,webhook2d,Mwebhook2 :: 14d :: 7d :: Last week we moved the Stripe webhook endpoint. What's the new path?
grace3,grace3d,Mgrace3 :: 2d :: - :: What did we change yesterday about the grace period?
deploy3,deploy3d,Mdeploy3 :: 2d :: - :: Yesterday we decided to move hosting again. Where to?
version :: 2d :: - :: What release version did we settle on yesterday?
queue1,queue1d,Mqueue1 :: - :: 40d :: What was the very first background job library we picked at kickoff?
log1,Mlog1 :: - :: 40d :: What did we originally use for logging in the first session?
deploy1,deploy1d,Mdeploy1 :: - :: 40d :: Where did we initially plan to deploy when the project started?
ratelimit2,ratelimit2d,Mratelimit2 :: 4d :: 2d :: In the bug bash three days ago, what did we do about Harbor's 429s?
invseq,Minvseq :: 4d :: 2d :: Three days ago, what was the fix for duplicate invoice numbers?
retry3,retry3d,Mretry3 :: 4d :: 2d :: What did we change about webhook retries during the bug bash a few days ago?
grace2,grace2d,Mgrace2 :: 18d :: 14d :: About two weeks ago, what did we set the grace period to?
prorate2,prorate2d,Mprorate2 :: 18d :: 14d :: Roughly two weeks back, how did we change proration?
admin2,admin2d,Madmin2 :: 14d :: 7d :: What did we decide last week about the dashboard framework?
loadtest,copy,Mcopy :: 14d :: 7d :: Last week, how did the load test numbers come out after the ingest changes?
part2,part2u,Mpart2 :: 14d :: 7d :: What did we do about table partitioning last week?
otel,Motel :: 7d :: - :: This week, what did we pick for tracing?
auth2,auth2d,Mauth2 :: 7d :: - :: What changed about JWT signing in the past week?
invnum,Minvnum :: 30d :: 26d :: About four weeks ago, what invoice numbering format did we agree on?
tax,taxd :: 30d :: 26d :: When we built invoices about a month ago, what did we decide about VAT?
stripeevents :: 22d :: 18d :: Around three weeks ago, which Stripe events did we decide to handle?
ratelimit1,ratelimit1d,Mratelimit1 :: 26d :: 22d :: When we did auth a bit over three weeks ago, what rate limit did we set initially?
testdb1,Mtestdb1 :: 43d :: 35d :: In the first week, what did we use for the test database at first?
flags,Mflags :: 2d :: - :: What did we decide yesterday about the legacy admin pages?
export2,export2d,Mexport2 :: 4d :: 2d :: A few days ago in the bug bash, what did we decide about export formats?
todopepper,Mtodo_pepper :: 2d :: - :: Which todo did we add yesterday about the key pepper?
sched1,Msched1 :: 34d :: 30d :: In the rating session about a month ago, how often did we schedule rating at first?
late,Mlate :: 43d :: 35d :: In the first week, what cutoff did we set for late-arriving events?
egress :: 7d :: - :: What did we allocate for outbound traffic when we moved to Fly earlier this week?
"""

UNANSWERABLE = r"""
What's a good recipe for a quick carbonara?
Which GraphQL schema stitching library did we pick?
What Kafka topic are usage events published to?
What's the MongoDB collection name for invoices?
Which PayPal SDK version are we using for payouts?
Where is the Terraform remote state stored, and what's the lock table called?
How did we set up push notifications for the mobile app?
What uptime SLA did we promise Harbor in the contract?
What's the password for the staging database?
What's the name of Harbor's CEO?
Will it rain in Amsterdam tomorrow?
How do we shard Redis across multiple clusters?
Which gRPC service definitions did we write for the rating engine?
What's the Elasticsearch index mapping for invoice search?
How do coupon codes and percentage discounts get applied to invoices?
How are SMS usage alerts sent to end customers?
What does our Windows build pipeline look like?
How much are we charging Harbor for running Brightmeter?
Which LLM did we use to categorize invoice line items?
How long does Sentry retain our error events?
What were the findings of the penetration test?
Which Django version is the project on?
How many story points did we commit to this sprint?
How do annual prepaid commitments with drawdown work in our pricing model?
Which CDN sits in front of the dashboard?
How do we support Brazilian boleto payments?
Which Rust extension did we write to speed up rating?
Can you suggest a name for my new cat?
Which cron expression triggers the monthly generate_invoices run?
How are the Redis snapshots backed up, and how often?
Which Slack channel do the alerts get posted to?
How did we localize the invoice emails into German and French?
What's the maximum number of seats a customer may report on the seats meter?
Which OAuth scopes does the QuickBooks integration request?
"""

DESCRIPTION = (
    "Hand-written, fictional multi-session conversation between a developer (user) and a "
    "coding agent (assistant) building 'Brightmeter', a usage-based billing service for a pilot "
    "customer (Harbor Analytics): FastAPI + async SQLAlchemy/Postgres, an arq worker queue on Redis, "
    "event ingestion, rating, invoicing with proration, API-key and JWT auth, Stripe payments, "
    "dunning, signed webhooks, a Next.js dashboard, exports and deployment, over about six weeks "
    "(session 'day' is relative to the end of the timeline). Alongside the turns, the agent's "
    "recorded memories (decisions, definitions, notes, todos) include supersession chains where "
    "choices were later changed. Questions carry evidence groups (any one id in a group answers that "
    "part; all groups are needed), stale ids for superseded answers, and since/until relative ages "
    "for temporal questions; 'unanswerable' questions have no support in the conversation."
)

CATEGORIES = ["early-fact", "current-decision", "identifier", "paraphrase", "two-turn", "temporal"]
TURN_RE = re.compile(r"^(U|A)(?:\[(\w+)\])?: (.+)$")


def build() -> dict:
    label_to_id: dict[str, str] = {}
    turn_index: dict[str, int] = {}  # turn id -> global position
    turn_session: dict[str, str] = {}
    sessions = []
    n = 0
    for si, (day, title, block) in enumerate(SESSIONS, start=1):
        sid = f"s{si:02d}"
        turns = []
        for line in block.strip().splitlines():
            m = TURN_RE.match(line.strip())
            assert m, f"bad turn line in {sid}: {line!r}"
            n += 1
            tid = f"t{n:04d}"
            role = "user" if m.group(1) == "U" else "assistant"
            if m.group(2):
                assert m.group(2) not in label_to_id, f"duplicate label {m.group(2)}"
                label_to_id[m.group(2)] = tid
            turns.append({"id": tid, "role": role, "text": m.group(3).strip()})
            turn_index[tid] = n
            turn_session[tid] = sid
        sessions.append({"id": sid, "day": day, "title": title, "turns": turns})

    raw_mems = []
    for line in MEMORIES.strip().splitlines():
        parts = line.split("|")
        assert len(parts) == 6, f"bad memory line: {line!r}"
        label, kind, after, tags, sup, text = (p.strip() for p in parts)
        assert kind in {"decision", "definition", "note", "todo"}, line
        assert after in label_to_id, f"memory {label}: unknown after_turn label {after}"
        raw_mems.append((turn_index[label_to_id[after]], label, kind, after, tags, sup, text))
    raw_mems.sort(key=lambda r: r[0])  # stable: ids follow conversation order
    memories = []
    for i, (_, label, kind, after, tags, sup, text) in enumerate(raw_mems, start=1):
        mid = f"d{i:03d}"
        assert label not in label_to_id, f"duplicate label {label}"
        label_to_id[label] = mid
        memories.append({"_label": label, "_sup": sup, "id": mid, "kind": kind,
                         "session": turn_session[label_to_id[after]],
                         "after_turn": label_to_id[after], "text": text,
                         "tags": [t for t in tags.split(",") if t], "supersedes": None})
    for m in memories:
        sup = m.pop("_sup")
        m.pop("_label")
        if sup != "-":
            assert sup in label_to_id, f"unknown supersedes label {sup}"
            m["supersedes"] = label_to_id[sup]

    def ids(s: str) -> list[str]:
        out = []
        for lab in (x.strip() for x in s.split(",")):
            if not lab:
                continue
            assert lab in label_to_id, f"unknown evidence label {lab!r}"
            out.append(label_to_id[lab])
        return out

    def groups(s: str) -> list[list[str]]:
        return [ids(g) for g in s.split(";") if g.strip()]

    questions = []
    for cat in CATEGORIES:
        for line in Q[cat].strip().splitlines():
            parts = [p.strip() for p in line.split("::")]
            stale: list[str] = []
            since = until = None
            if cat == "current-decision":
                assert len(parts) == 3, line
                ev, st, text = parts
                stale = ids(st)
            elif cat == "temporal":
                assert len(parts) == 4, line
                ev, since, until, text = parts
                since = None if since == "-" else since
                until = None if until == "-" else until
            else:
                assert len(parts) == 2, line
                ev, text = parts
            questions.append({"id": f"q{len(questions) + 1:03d}", "category": cat,
                              "question": text, "evidence": groups(ev), "stale": stale,
                              "since": since, "until": until})
    unanswerable = [{"id": f"u{i:03d}", "question": q.strip()}
                    for i, q in enumerate(UNANSWERABLE.strip().splitlines(), start=1)]
    return {"description": DESCRIPTION, "sessions": sessions, "memories": memories,
            "questions": questions, "unanswerable": unanswerable}


def validate(data: dict) -> None:
    sessions, memories, questions = data["sessions"], data["memories"], data["questions"]
    turns = [t for s in sessions for t in s["turns"]]
    pos = {t["id"]: i for i, t in enumerate(turns)}
    all_ids = [s["id"] for s in sessions] + list(pos) + [m["id"] for m in memories] \
        + [q["id"] for q in questions] + [u["id"] for u in data["unanswerable"]]
    assert len(all_ids) == len(set(all_ids)), "duplicate ids"
    assert [t["id"] for t in turns] == [f"t{i:04d}" for i in range(1, len(turns) + 1)]
    days = [s["day"] for s in sessions]
    assert all(a < b for a, b in zip(days, days[1:], strict=False)), "session days must strictly increase"
    assert days[-1] in (-1, 0) and -46 <= days[0] <= -38, days
    last_week = [d for d in days if -14 <= d <= -7]
    assert 1 <= len(last_week) <= 2, last_week
    assert len(sessions) >= 10 and len(turns) >= 640, (len(sessions), len(turns))

    mem = {m["id"]: m for m in memories}
    superseded = Counter()
    for m in memories:
        assert m["after_turn"] in pos, m
        assert any(t["id"] == m["after_turn"] for s in sessions if s["id"] == m["session"]
                   for t in s["turns"]), m
        if m["supersedes"]:
            old = mem[m["supersedes"]]  # KeyError if missing
            assert pos[old["after_turn"]] < pos[m["after_turn"]], (old["id"], m["id"])
            superseded[old["id"]] += 1
    assert all(c == 1 for c in superseded.values()), "memory superseded more than once"
    chain_roots = [m for m in memories if m["supersedes"] is None and m["id"] in superseded]
    assert len(chain_roots) >= 15, len(chain_roots)
    assert 70 <= len(memories) <= 90, len(memories)

    valid = set(pos) | set(mem)
    cats = Counter(q["category"] for q in questions)
    for q in questions:
        assert q["evidence"] and all(g for g in q["evidence"]), q
        for g in q["evidence"]:
            assert all(i in valid for i in g), q
        assert all(i in valid for i in q["stale"]), q
        if q["category"] == "current-decision":
            ev = {i for g in q["evidence"] for i in g}
            assert not any(i in superseded for i in ev), f"stale memory in evidence: {q['id']}"
            assert q["stale"] and not ev & set(q["stale"]), q["id"]
            assert any(i in superseded for i in q["stale"]), q["id"]
        if q["category"] == "two-turn":
            assert len(q["evidence"]) == 2, q["id"]
            assert not set(q["evidence"][0]) & set(q["evidence"][1]), q["id"]
        if q["category"] == "temporal":
            assert q["since"] or q["until"], q["id"]
        if q["category"] == "early-fact":
            early = {s["id"] for s in sessions[:3]}
            for g in q["evidence"]:
                for i in g:
                    sid = mem[i]["session"] if i in mem else next(
                        s["id"] for s in sessions if any(t["id"] == i for t in s["turns"]))
                    assert sid in early, (q["id"], i)
    assert len(questions) >= 170, len(questions)
    assert all(cats[c] >= 22 for c in CATEGORIES), cats
    assert len(data["unanswerable"]) >= 30


def summary(data: dict) -> None:
    turns = [t for s in data["sessions"] for t in s["turns"]]
    print(f"{'session':<8}{'day':>5}{'turns':>7}{'mems':>6}  title")
    mc = Counter(m["session"] for m in data["memories"])
    for s in data["sessions"]:
        print(f"{s['id']:<8}{s['day']:>5}{len(s['turns']):>7}{mc[s['id']]:>6}  {s['title']}")
    same_role = sum(1 for s in data["sessions"] for a, b in zip(s["turns"], s["turns"][1:], strict=False)
                    if a["role"] == b["role"])
    print(f"\nturns total: {len(turns)}  (consecutive same-role pairs: {same_role})")
    kinds = Counter(m["kind"] for m in data["memories"])
    sup = sum(1 for m in data["memories"] if m["supersedes"])
    print(f"memories: {len(data['memories'])} {dict(kinds)}  superseding: {sup}")
    print("\ncategory            questions")
    for c, k in sorted(Counter(q["category"] for q in data["questions"]).items()):
        print(f"{c:<20}{k:>9}")
    print(f"{'total':<20}{len(data['questions']):>9}")
    print(f"{'unanswerable':<20}{len(data['unanswerable']):>9}")


def main() -> None:
    data = build()
    validate(data)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    summary(data)
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
