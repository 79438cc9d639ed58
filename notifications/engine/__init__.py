"""The job engine: where a job's life is decided (docs/delivery-engine.md, docs/job-states.md).

- `store`: every write to a job row, each one conditional statement (insert, claim, record, requeue, delete).
- `transitions`: the states a job moves to, one named constructor per transition.
- `processing`: one attempt (claim, deliver, record) and the sweeper.
- `lease`: the claims under way in this process, renewed while their attempts run.
- `queue`: handing jobs to the broker.

Above it, `notifications.services` accepts, retries and purges jobs and `notifications.tasks` runs the engine in
Celery; below it, `notifications.delivery` makes the request an attempt is. Nothing here imports `services`.
"""
