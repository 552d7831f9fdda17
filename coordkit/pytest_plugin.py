"""pytest integration (entry point ``pytest11``); filled in with the scheduler."""
