"""Background jobs: what each job does (`background_jobs`), running one and recording it
(`runner`), and the APScheduler wiring inside the TUI's event loop (`scheduler`)."""
