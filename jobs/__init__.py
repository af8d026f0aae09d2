"""Background jobs: what each job does (`job_functions`), running one and recording it
(`runner`), and the APScheduler wiring inside the TUI's event loop (`scheduler`)."""
