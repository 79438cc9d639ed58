"""Fault tests: the whole service (the Procfile's processes on PostgreSQL and Redis of its own) under real faults."""
