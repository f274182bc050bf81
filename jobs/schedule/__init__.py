"""When loop-verify runs by itself: the daily rule across DST, its own APScheduler daemon, and the
LaunchAgent and systemd units it installs and checks."""
