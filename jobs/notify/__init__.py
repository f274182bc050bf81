"""Telling the owner: `notify:` messages through Apprise, `heartbeat:` pings in Healthchecks'
protocol, each call bounded, and what became of the last delivery of each, kept in state_dir."""
