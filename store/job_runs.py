"""The last run of each background job (`job_runs`, schema v4): what catch-up and
`straylight jobs list` read. One row per job name, overwritten by each run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from store.database import Database
from store.point_store import as_utc


@dataclass(frozen=True, slots=True)
class JobRun:
    name: str
    last_run: datetime
    status: str  # ok | error | skipped
    result: str


class JobRuns:
    def __init__(self, db: Database) -> None:
        self.db = db

    def record(self, name: str, at: datetime, status: str, result: str) -> None:
        with self.db.transaction() as cur:
            cur.execute(
                "INSERT INTO job_runs VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                "last_run = excluded.last_run, status = excluded.status, "
                "result = excluded.result",
                [name, as_utc(at), status, result[:500]],
            )

    def all(self) -> dict[str, JobRun]:
        with self.db.cursor() as cur:
            rows = cur.execute("SELECT name, last_run, status, result FROM job_runs").fetchall()
        return {row[0]: JobRun(row[0], as_utc(row[1]), row[2], row[3]) for row in rows}

    def get(self, name: str) -> JobRun | None:
        return self.all().get(name)
